// startup.h — process start-up shared by every program: the BLAS kernel and
// the threads.
#ifndef PELAB_STARTUP_H
#define PELAB_STARTUP_H

#include <stddef.h>

// Settings the libraries read when they load: OpenMP's idle threads spin
// briefly, then sleep (GOMP_SPINCOUNT=10000) unless the user chose a policy
// or a spin count, and when
// OpenBLAS fell back to its slowest kernels on a CPU it does not know,
// OPENBLAS_CORETYPE names the best kernel the CPU supports. When either must
// be set, restarts the program once (execv of argv). Call first thing in main.
int startup_environment(char **argv);

// Sets the OpenMP thread count and holds OpenBLAS to one thread: every
// parallel loop in pelab is OpenMP's.
void startup_threads(int threads);

// The machine, for a run's record: the CPU's model name (/proc/cpuinfo;
// "unknown" elsewhere) into buf, and the kernel OpenBLAS runs.
void startup_cpu_name(char *buf, size_t n);
const char *startup_blas_kernel(void);

#endif
