// startup.h — process start-up shared by every program: the BLAS kernel and
// the threads.
#ifndef PELAB_STARTUP_H
#define PELAB_STARTUP_H

// When OpenBLAS fell back to its slowest kernels on a CPU it does not know,
// restarts the program (execv of argv) with OPENBLAS_CORETYPE set to the
// best kernel the CPU supports. Call first thing in main.
int startup_blas_kernel(char **argv);

// Sets the OpenMP thread count and holds OpenBLAS to one thread: every
// parallel loop in pelab is OpenMP's.
void startup_threads(int threads);

#endif
