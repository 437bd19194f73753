// gemm.c — see gemm.h.
#include "gemm.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef PELAB_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include "../core/common.h"

static int openblas_available(char *why, size_t whylen) { return 1; }

static void openblas_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                lda, B, ldb, beta, C, ldc);
}

#ifdef PELAB_ONEDNN
static int onednn_available(char *why, size_t whylen) { return 1; }

static void onednn_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                         const float *B, int ldb, float beta, float *C, int ldc) {
    dnnl_status_t st;
#ifdef _OPENMP
    // oneDNN threads a product itself when called outside a parallel region,
    // and may then split K: bits that follow the thread count. The model
    // calls from inside its loops; anyone else gets one thread too.
    int n = omp_get_max_threads();
    if (n > 1 && !omp_in_parallel()) {
        omp_set_num_threads(1);
        st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        omp_set_num_threads(n);
    } else
#endif
        st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (st != dnnl_success)
        die_runtime("internal: oneDNN's sgemm failed (status %d) on M=%d N=%d K=%d", (int)st, M, N, K);
}
#else
static int onednn_available(char *why, size_t whylen) {
    snprintf(why, whylen, "not built: install Debian's libdnnl-dev (scripts/install-deps.sh --onednn) and rebuild");
    return 0;
}

static void onednn_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                         const float *B, int ldb, float beta, float *C, int ldc) {
    die_runtime("internal: oneDNN is not built into this binary");
}
#endif

const gemm_engine gemm_engines[] = {
    {"openblas", "OpenBLAS's cblas_sgemm", openblas_available, openblas_sgemm},
    {"onednn", "oneDNN's sgemm", onednn_available, onednn_sgemm},
};
const int gemm_engine_count = (int)(sizeof gemm_engines / sizeof gemm_engines[0]);

static const gemm_engine *engine_in_use = &gemm_engines[0];

void gemm_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc) {
    engine_in_use->sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

const char *gemm_name(void) { return engine_in_use->name; }

// The engine's product of a few awkward shapes (odd sizes, both
// transpositions, strides wider than the rows, beta 0 and 1) against the
// same product in double precision: 0 when any element is further than a
// float product of that length can be.
static int engine_correct(const gemm_engine *e) {
    enum { M = 37, N = 29, K = 67, LD = 71 };
    static float A[K * LD], B[K * LD], C[M * LD];
    double ref[M * N];
    for (int i = 0; i < K * LD; i++) {
        A[i] = (float)sin(0.37 * i + 0.1);
        B[i] = (float)cos(0.23 * i + 0.7);
    }
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int beta = 0; beta < 2; beta++) {
                for (int i = 0; i < M * LD; i++) C[i] = 0.5f;
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        double s = 0;
                        for (int k = 0; k < K; k++)
                            s += (double)(ta ? A[k * LD + i] : A[i * LD + k]) * (tb ? B[j * LD + k] : B[k * LD + j]);
                        ref[i * N + j] = 0.75 * s + 0.5 * beta;
                    }
                e->sgemm(ta, tb, M, N, K, 0.75f, A, LD, B, LD, (float)beta, C, LD);
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++)
                        if (!(fabs(C[i * LD + j] - ref[i * N + j]) <= 1e-4 * K)) return 0;
            }
    return 1;
}

static int cpu_has_avx512(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

int gemm_use(const char *name, char *err, size_t errlen) {
    char why[200] = "";
    if (!strcmp(name, "auto")) {
        const gemm_engine *dnn = &gemm_engines[1];
        engine_in_use = &gemm_engines[0];
        if (dnn->available(why, sizeof why) && cpu_has_avx512() && engine_correct(dnn)) engine_in_use = dnn;
        return 1;
    }
    for (int i = 0; i < gemm_engine_count; i++) {
        const gemm_engine *e = &gemm_engines[i];
        if (strcmp(name, e->name)) continue;
        if (!e->available(why, sizeof why)) {
            snprintf(err, errlen, "--gemm %s: %s", name, why);
            return 0;
        }
        if (!engine_correct(e)) {
            snprintf(err, errlen, "--gemm %s: the engine's products disagree with a double-precision check on this "
                     "machine; use --gemm openblas", name);
            return 0;
        }
        engine_in_use = e;
        return 1;
    }
    snprintf(err, errlen, "--gemm: unknown engine '%s' (auto, openblas, onednn)", name);
    return 0;
}
