// startup.c — see startup.h.
#include "startup.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#ifdef __SSE__
#include <xmmintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

int startup_blas_kernel(char **argv) {
    // OpenBLAS 0.3.21 (Debian 12) does not recognise some current Xeons (a
    // VM's generic "Intel Xeon Processor") and falls back to its Prescott
    // (SSE3) kernels, several times slower than the AVX2/AVX-512 ones the
    // CPU can run. The kernel is chosen when the library loads, from
    // OPENBLAS_CORETYPE, so the only fix is to set it and start again. A
    // user's own OPENBLAS_CORETYPE is always respected.
    if (getenv("OPENBLAS_CORETYPE") || getenv("PELAB_BLAS_CHECKED")) return 0;
    setenv("PELAB_BLAS_CHECKED", "1", 1);
    const char *core = openblas_get_corename();
    if (!core || strcasecmp(core, "prescott") != 0) return 0;
    const char *pick = NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        pick = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        pick = "Haswell";
    if (!pick || !argv) return 0;
    setenv("OPENBLAS_CORETYPE", pick, 1);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        execv(self, argv);  // by its own name, so ps and top still say "train"
    }
    unsetenv("OPENBLAS_CORETYPE");  // exec failed: carry on with Prescott
    return -1;
}

// Subnormal floats cost ~100 cycles per operation on x86. Attention makes
// them in bulk: a bias like ALiBi's pushes far keys' scores 100 below the
// row's maximum, e^-100 is subnormal, and those weights then go through the
// backward's matrix products. Flushing them to zero (results and inputs)
// took ALiBi's training step from 400 ms to the same as NoPE's at the
// reference shape; the values lost are below 1.2e-38.
static void flush_subnormals(void) {
#ifdef __SSE__
    _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ (bit 15) and DAZ (bit 6)
#endif
}

void startup_threads(int threads) {
#ifdef _OPENMP
    omp_set_num_threads(threads);
#pragma omp parallel
    flush_subnormals();  // each thread has its own MXCSR
#else
    (void)threads;
#endif
    flush_subnormals();
    openblas_set_num_threads(1);
}

