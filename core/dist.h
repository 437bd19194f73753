// dist.h — data-parallel training across processes (docs/mpi.md): the
// process's rank and the number of processes, sums across them, and the
// ways out. Built with -DPELAB_MPI (make MPI=1, or the train-mpi binary) it
// runs over MPI; otherwise there is one process and every call is trivial.
#ifndef PELAB_DIST_H
#define PELAB_DIST_H

#include <stddef.h>

// Starts MPI (when built with it); safe to call once, before anything else.
void dist_init(int *argc, char ***argv);
int dist_rank(void);
int dist_size(void);
// x[0..n) ← the sum over processes of x[0..n), the same on every process.
void dist_sum_floats(float *x, size_t n);
void dist_sum_doubles(double *x, int n);
// The smallest and largest of v over the processes.
void dist_min_max(unsigned v, unsigned *min, unsigned *max);
// Every process waits here for the others.
void dist_barrier(void);
// Ends MPI after a run that finished on every process (main's last step).
void dist_finish(void);
// Called at exit: a process that leaves without dist_finish (an error, a
// signal) aborts the whole job, so that no process waits forever for it.
void dist_exit_hook(void);

#endif
