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
// parallel loop in pelab is OpenMP's. Reads PELAB_PARALLEL_MIN, the smallest
// parallel region in nanoseconds of one core (par_worth in common.h); a value that is not a
// number >= 0 exits with status 2.
void startup_threads(int threads);

// The machine, for a run's record: the CPU's model name (/proc/cpuinfo;
// "unknown" elsewhere) into buf, and the kernel OpenBLAS runs.
void startup_cpu_name(char *buf, size_t n);
const char *startup_blas_kernel(void);
// What tells two CPUs of one name apart ("AMD EPYC" names several
// generations): /proc/cpuinfo's family and model, the widest vectors the
// CPU has, and the instruction set this build targets, e.g. "family 23,
// model 49; AVX2, no AVX-512; build x86-64-v3".
void startup_cpu_kind(char *buf, size_t n);

#endif
