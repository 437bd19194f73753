// startup.c — see startup.h.
#include "startup.h"

#include "common.h"

#include <cblas.h>
#include <stdio.h>
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

// OpenBLAS 0.3.21 (Debian 12) does not recognise some current Xeons (a VM's
// generic "Intel Xeon Processor") and falls back to its Prescott (SSE3)
// kernels, several times slower than the AVX2/AVX-512 ones the CPU can run.
// The best kernel the CPU supports, or NULL when OpenBLAS chose well.
static const char *better_blas_kernel(void) {
    const char *core = openblas_get_corename();
    if (!core || strcasecmp(core, "prescott") != 0) return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return NULL;
}

int startup_environment(char **argv) {
    // Both libraries read these when they load, before main: the only way
    // to set them is to set them and start again, once (PELAB_ENV_SET).
    // A user's own OPENBLAS_CORETYPE or OMP_WAIT_POLICY is always respected.
    if (getenv("PELAB_ENV_SET")) return 0;
    setenv("PELAB_ENV_SET", "1", 1);
    int again = 0;
#ifdef _OPENMP
    // libgomp's default spins idle threads for 300,000 rounds at every
    // barrier; with other processes on the same cores the spinning threads
    // and the others slow each other (docs/performance.md). Sleeping at once
    // (OMP_WAIT_POLICY=PASSIVE) costs 1.8x on an idle machine; a short spin
    // then sleep costs nothing measurable idle and keeps most of the gain.
    // Results do not change: only waiting.
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) setenv("GOMP_SPINCOUNT", "10000", 1), again = 1;
#endif
    const char *pick = getenv("OPENBLAS_CORETYPE") ? NULL : better_blas_kernel();
    if (pick) setenv("OPENBLAS_CORETYPE", pick, 1), again = 1;
    if (!again || !argv) return 0;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        execv(self, argv);  // by its own name, so ps and top still say "train"
    }
    if (pick) unsetenv("OPENBLAS_CORETYPE");  // exec failed: carry on as loaded
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
    const char *e = getenv("PELAB_PARALLEL_MIN");
    if (e) {
        char *end;
        double v = strtod(e, &end);
        if (end == e || *end || !(v >= 0.0) || v > 1e300)
            die_usage("PELAB_PARALLEL_MIN=%s: not a number of nanoseconds >= 0 (the smallest parallel region; unset, %g)", e,
                      PAR_MIN_NS);
        par_min_ns = v;
    }
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


// The value of /proc/cpuinfo's first line whose key (the text before the
// colon, trailing blanks aside) is `key`, into buf; 0 when there is none.
static int cpuinfo_value(const char *key, char *buf, size_t n) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[512];
    int found = 0;
    size_t k = strlen(key);
    while (!found && fgets(line, sizeof line, f)) {
        const char *c = strchr(line, ':');
        if (!c || strncmp(line, key, k) || line + k + strspn(line + k, " \t") != c) continue;
        c++;
        c += strspn(c, " \t");
        snprintf(buf, n, "%.*s", (int)strcspn(c, "\n"), c);
        found = 1;
    }
    fclose(f);
    return found;
}

void startup_cpu_name(char *buf, size_t n) {
    if (!cpuinfo_value("model name", buf, n)) snprintf(buf, n, "unknown");
}

void startup_cpu_kind(char *buf, size_t n) {
    char family[32], model[32];
    if (!cpuinfo_value("cpu family", family, sizeof family)) snprintf(family, sizeof family, "?");
    if (!cpuinfo_value("model", model, sizeof model)) snprintf(model, sizeof model, "?");
    const char *vec = "no AVX2";
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) vec = "AVX-512";
    else if (__builtin_cpu_supports("avx2")) vec = "AVX2, no AVX-512";
#else
    vec = "not x86";
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    const char *build = "x86-64-v4";
#elif defined(__AVX2__) && defined(__FMA__)
    const char *build = "x86-64-v3";
#else
    const char *build = "below x86-64-v3";
#endif
    snprintf(buf, n, "family %s, model %s; %s; build %s", family, model, vec, build);
}

const char *startup_blas_kernel(void) {
    const char *k = openblas_get_corename();
    return k ? k : "unknown";
}
