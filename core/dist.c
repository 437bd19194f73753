// dist.c — see dist.h.
#include "dist.h"

#include <stdlib.h>

#ifdef PELAB_MPI
#include <mpi.h>

static int rank, size = 1, started, finished;

void dist_init(int *argc, char ***argv) {
    if (started) return;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    started = 1;
    atexit(dist_exit_hook);
}

int dist_rank(void) { return rank; }
int dist_size(void) { return size; }

// MPI counts are int: large buffers go in pieces.
void dist_sum_floats(float *x, size_t n) {
    if (size == 1) return;
    for (size_t o = 0; o < n; o += 1 << 30) {
        size_t k = n - o < (size_t)1 << 30 ? n - o : (size_t)1 << 30;
        MPI_Allreduce(MPI_IN_PLACE, x + o, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
}

void dist_sum_doubles(double *x, int n) {
    if (size > 1) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

void dist_min_max(unsigned v, unsigned *min, unsigned *max) {
    *min = *max = v;
    if (size == 1) return;
    MPI_Allreduce(&v, min, 1, MPI_UNSIGNED, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, max, 1, MPI_UNSIGNED, MPI_MAX, MPI_COMM_WORLD);
}

void dist_barrier(void) {
    if (size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void dist_finish(void) {
    if (!started || finished) return;
    finished = 1;
    MPI_Finalize();
}

void dist_exit_hook(void) {
    if (started && !finished && size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    if (started && !finished) {  // one process: nobody waits for it
        finished = 1;
        MPI_Finalize();
    }
}

#else

void dist_init(int *argc, char ***argv) { (void)argc, (void)argv; }
int dist_rank(void) { return 0; }
int dist_size(void) { return 1; }
void dist_sum_floats(float *x, size_t n) { (void)x, (void)n; }
void dist_sum_doubles(double *x, int n) { (void)x, (void)n; }
void dist_min_max(unsigned v, unsigned *min, unsigned *max) { *min = *max = v; }
void dist_barrier(void) {}
void dist_finish(void) {}
void dist_exit_hook(void) {}

#endif
