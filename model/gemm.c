// gemm.c — see gemm.h.
#include "gemm.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef PELAB_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#if defined(PELAB_ONEDNN) && defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define BF16_CONVERT_INSN 1
#endif

#include "../core/common.h"

static int openblas_available(char *why, size_t whylen) { return 1; }

// With beta = 0 OpenBLAS clears C in a loop of its own (sgemm_beta, 3% of a
// training step's samples on a Zen 2) and then adds α·A·B to it, as it does
// for beta = 1: clearing C with memset and passing beta = 1 is the same
// arithmetic, so the same bits (every transpose at ten shapes, and
// scripts/same-bits.sh), and faster: attention's score product (64 × 256,
// K = 32) 21.2 → 14.9 µs on one thread.
static void openblas_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc) {
    if (beta == 0.0f) {
        if (ldc == N) memset(C, 0, sizeof(float) * (size_t)M * N);
        else
            for (int r = 0; r < M; r++) memset(C + (size_t)r * ldc, 0, sizeof(float) * (size_t)N);
        beta = 1.0f;
    }
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

// ---- bf16: oneDNN's matmul primitive on bf16 copies of A and B, fp32
// accumulation and output (gemm_set_precision) ----

// f32 -> bf16, rounded to nearest even (a NaN stays a NaN); branch-free, so
// that the compiler vectorises the loop below
static inline uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

#ifdef BF16_CONVERT_INSN
// A row in AVX512_BF16's VCVTNEPS2BF16: the same rounding as to_bf16, but a
// subnormal input becomes zero. Compiled for that extension whatever the
// build targets (the Makefile's x86-64 levels do not include it), and called
// only where the CPU has it.
__attribute__((target("avx512f,avx512bf16"))) static int row_bf16_insn(uint16_t *d, const float *x, int cols) {
    int c = 0;
    for (; c + 16 <= cols; c += 16)
        _mm256_storeu_si256((__m256i *)(d + c), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + c)));
    return c;
}
#endif

// The rows x cols block of X (row stride ld) as dense bf16 (row stride cols).
// Where the CPU converts in one instruction (row_bf16_insn) it is used, as
// -march=native builds on such a CPU did, so that bf16 runs keep their bits.
static void pack_bf16(uint16_t *dst, const float *X, int rows, int cols, int ld) {
#ifdef BF16_CONVERT_INSN
    const int insn = __builtin_cpu_supports("avx512bf16");
#endif
    for (int r = 0; r < rows; r++) {
        const float *x = X + (size_t)r * ld;
        uint16_t *d = dst + (size_t)r * cols;
        int c = 0;
#ifdef BF16_CONVERT_INSN
        if (insn) c = row_bf16_insn(d, x, cols);
#endif
        for (; c < cols; c++) d[c] = to_bf16(x[c]);
    }
}

enum { BF16_MAX_THREADS = 256, BF16_MAX_SHAPES = 512 };
typedef struct {
    int ta, tb, M, N, K, ldc;
    float alpha, beta;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t a, b, c, scratch;
    size_t scratch_bytes;
} bf16_shape;
static struct {
    dnnl_engine_t engine;
    dnnl_stream_t stream[BF16_MAX_THREADS];
    uint16_t *buf[BF16_MAX_THREADS];  // a thread's packed A then B
    size_t cap[BF16_MAX_THREADS];
    void *scratch[BF16_MAX_THREADS];  // a thread's scratchpad for the primitive it runs
    size_t scratch_cap[BF16_MAX_THREADS];
    bf16_shape shape[BF16_MAX_SHAPES];
    int n_shapes;
} bf;

// The calling thread's slot (its buffers and stream). Not omp_get_thread_num:
// inside a serialised nested region every thread is number 0. A slot is
// handed out on a thread's first product after each gemm_release.
static int bf16_generation = 1, bf16_slots;
static __thread int my_slot = -1, my_generation;

static int thread_index(void) {
    if (my_generation != bf16_generation) {
#ifdef _OPENMP
#pragma omp critical(pelab_bf16_shapes)
#endif
        my_slot = bf16_slots++;
        my_generation = bf16_generation;
    }
    return my_slot;
}

static dnnl_status_t md_2d(dnnl_memory_desc_t *md, int rows, int cols, dnnl_data_type_t t, int transposed, int ld) {
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {transposed ? 1 : ld, transposed ? ld : 1};
    return dnnl_memory_desc_init_by_strides(md, 2, dims, t, strides);
}

// The primitive of one product's shape, made on first use (under a lock:
// the model calls from several threads) and kept until gemm_release.
static bf16_shape *bf16_find(int ta, int tb, int M, int N, int K, float alpha, float beta, int ldc, dnnl_status_t *st) {
    bf16_shape *found = NULL;
#ifdef _OPENMP
#pragma omp critical(pelab_bf16_shapes)
#endif
    {
        for (int i = 0; i < bf.n_shapes && !found; i++) {
            bf16_shape *h = &bf.shape[i];
            if (h->ta == ta && h->tb == tb && h->M == M && h->N == N && h->K == K && h->ldc == ldc && h->alpha == alpha &&
                h->beta == beta)
                found = h;
        }
        if (!found && bf.n_shapes < BF16_MAX_SHAPES) {
            bf16_shape *h = &bf.shape[bf.n_shapes];
            *h = (bf16_shape){ta, tb, M, N, K, ldc, alpha, beta, NULL, {0}, {0}, {0}, {0}, 0};
            dnnl_matmul_desc_t desc;
            dnnl_primitive_attr_t attr = NULL;
            dnnl_post_ops_t post = NULL;
            dnnl_primitive_desc_t pd = NULL;
            // A and B packed densely in their stored orientation (ld = their row length)
            if ((*st = md_2d(&h->a, M, K, dnnl_bf16, ta, ta ? M : K)) == dnnl_success &&
                (*st = md_2d(&h->b, K, N, dnnl_bf16, tb, tb ? K : N)) == dnnl_success &&
                (*st = md_2d(&h->c, M, N, dnnl_f32, 0, ldc)) == dnnl_success &&
                (*st = dnnl_matmul_desc_init(&desc, &h->a, &h->b, NULL, &h->c)) == dnnl_success &&
                (*st = dnnl_primitive_attr_create(&attr)) == dnnl_success &&
                // oneDNN shares one scratchpad between primitives unless told
                // otherwise, and the model's threads run products at once:
                // each thread passes its own
                (*st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user)) == dnnl_success &&
                (alpha == 1.0f || (*st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha)) == dnnl_success) &&
                (beta == 0.0f || ((*st = dnnl_post_ops_create(&post)) == dnnl_success &&
                                  (*st = dnnl_post_ops_append_sum(post, beta)) == dnnl_success &&
                                  (*st = dnnl_primitive_attr_set_post_ops(attr, post)) == dnnl_success)) &&
                (*st = dnnl_primitive_desc_create(&pd, &desc, attr, bf.engine, NULL)) == dnnl_success &&
                (*st = dnnl_primitive_create(&h->prim, pd)) == dnnl_success) {
                h->scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
                h->scratch_bytes = dnnl_memory_desc_get_size(&h->scratch);
                bf.n_shapes++;
                found = h;
            }
            if (pd) dnnl_primitive_desc_destroy(pd);
            if (post) dnnl_post_ops_destroy(post);
            if (attr) dnnl_primitive_attr_destroy(attr);
        } else if (!found)
            *st = dnnl_out_of_memory;
    }
    return found;
}

static void onednn_bf16_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                             const float *B, int ldb, float beta, float *C, int ldc) {
    if (M == 0 || N == 0) return;
    dnnl_status_t st = dnnl_success;
    bf16_shape *h = K == 0 ? NULL : bf16_find(ta, tb, M, N, K, alpha, beta, ldc, &st);
    if (K == 0) {  // no products: C = beta · C, as sgemm does
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0 : beta * C[(size_t)i * ldc + j];
        return;
    }
    int t = thread_index();
    if (!h || t >= BF16_MAX_THREADS)
        die_runtime("internal: oneDNN's bf16 matmul failed (status %d) on M=%d N=%d K=%d", (int)st, M, N, K);
    size_t need = (size_t)M * K + (size_t)K * N;
    if (bf.cap[t] < need) {
        free(bf.buf[t]);
        bf.buf[t] = xmalloc(need * sizeof *bf.buf[t]);
        bf.cap[t] = need;
    }
    if (!bf.stream[t] && (st = dnnl_stream_create(&bf.stream[t], bf.engine, dnnl_stream_default_flags)) != dnnl_success)
        die_runtime("internal: oneDNN stream (status %d)", (int)st);
    if (bf.scratch_cap[t] < h->scratch_bytes) {
        free(bf.scratch[t]);
        bf.scratch[t] = xmalloc(h->scratch_bytes);
        bf.scratch_cap[t] = h->scratch_bytes;
    }
    uint16_t *a = bf.buf[t], *b = a + (size_t)M * K;
    if (ta) pack_bf16(a, A, K, M, lda); else pack_bf16(a, A, M, K, lda);
    if (tb) pack_bf16(b, B, N, K, ldb); else pack_bf16(b, B, K, N, ldb);
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL, ms = NULL;
    if ((st = dnnl_memory_create(&ma, &h->a, bf.engine, a)) == dnnl_success &&
        (st = dnnl_memory_create(&mb, &h->b, bf.engine, b)) == dnnl_success &&
        (st = dnnl_memory_create(&mc, &h->c, bf.engine, C)) == dnnl_success &&
        (st = dnnl_memory_create(&ms, &h->scratch, bf.engine, bf.scratch[t])) == dnnl_success) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc},
                                   {DNNL_ARG_SCRATCHPAD, ms}};
        if ((st = dnnl_primitive_execute(h->prim, bf.stream[t], 4, args)) == dnnl_success)
            st = dnnl_stream_wait(bf.stream[t]);
    }
    if (ma) dnnl_memory_destroy(ma);
    if (mb) dnnl_memory_destroy(mb);
    if (mc) dnnl_memory_destroy(mc);
    if (ms) dnnl_memory_destroy(ms);
    if (st != dnnl_success)
        die_runtime("internal: oneDNN's bf16 matmul failed (status %d) on M=%d N=%d K=%d", (int)st, M, N, K);
}

static void bf16_release(void) {
    for (int i = 0; i < bf.n_shapes; i++) dnnl_primitive_destroy(bf.shape[i].prim);
    bf.n_shapes = 0;
    for (int t = 0; t < BF16_MAX_THREADS; t++) {
        if (bf.stream[t]) dnnl_stream_destroy(bf.stream[t]);
        free(bf.buf[t]);
        free(bf.scratch[t]);
        bf.stream[t] = NULL, bf.buf[t] = NULL, bf.cap[t] = 0, bf.scratch[t] = NULL, bf.scratch_cap[t] = 0;
    }
    if (bf.engine) dnnl_engine_destroy(bf.engine);
    bf.engine = NULL;
    bf16_slots = 0;
    bf16_generation++;
}

static int bf16_start(char *why, size_t whylen) {
    dnnl_status_t st = bf.engine ? dnnl_success : dnnl_engine_create(&bf.engine, dnnl_cpu, 0);
    if (st != dnnl_success) {
        snprintf(why, whylen, "oneDNN could not make a CPU engine (status %d)", (int)st);
        return 0;
    }
    bf16_shape *h = bf16_find(0, 0, 16, 16, 16, 1.0f, 0.0f, 16, &st);
    if (!h) {
        snprintf(why, whylen, "oneDNN has no bf16 matrix product for this CPU (status %d)", (int)st);
        return 0;
    }
    return 1;
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

static void onednn_bf16_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                             const float *B, int ldb, float beta, float *C, int ldc) {
    die_runtime("internal: oneDNN is not built into this binary");
}

static void bf16_release(void) {}

static int bf16_start(char *why, size_t whylen) {
    snprintf(why, whylen, "not built: install Debian's libdnnl-dev (scripts/install-deps.sh --onednn) and rebuild");
    return 0;
}
#endif

static int cpu_has_avx512(void);

// Row blocks: OpenBLAS's bits change with the rows of a call, so its blocks
// stay at the 128 every result was made with. oneDNN's are the same for any
// call of 16 rows or more, and its products with a transposed B (the linear
// layers' forward) repack B on every call: 512 rows spread that over four
// times the work (the reference step 1.9% faster than at 128; 1024 rows,
// 3.1%, would leave threads past the second idle at the reference batch).
static const char openblas_what[] = "OpenBLAS's cblas_sgemm";
enum { openblas_row_block = 128 };
static int openblas_auto_prefers(void) { return 0; }   // the fallback: the list's first
static const char onednn_what[] = "oneDNN's sgemm";
enum { onednn_row_block = 512 };
// on a CPU with AVX-512, where it computes in wider registers than the
// OpenBLAS kernel pelab pins
static int onednn_auto_prefers(void) { return cpu_has_avx512(); }

#define GEMM_ENTRY(n) {#n, n##_what, n##_available, n##_sgemm, n##_row_block, n##_auto_prefers},
const gemm_engine gemm_engines[] = {GEMM_LIST(GEMM_ENTRY)};
const int gemm_engine_count = (int)(sizeof gemm_engines / sizeof gemm_engines[0]);

static const gemm_engine *engine_in_use = &gemm_engines[0];

static int bf16_on;  // gemm_set_precision

void gemm_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc) {
    if (!bf16_on) {
        engine_in_use->sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#ifdef _OPENMP
    // as oneDNN's sgemm: one thread for a product, so that its bits follow its shape only
    int n = omp_get_max_threads();
    if (n > 1 && !omp_in_parallel()) {
        omp_set_num_threads(1);
        onednn_bf16_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        omp_set_num_threads(n);
        return;
    }
#endif
    onednn_bf16_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static int cpu_has_bf16(void);

// bf16_start on one thread (oneDNN's primitives are made as the products
// will run them).
static int bf16_start_alone(char *why, size_t whylen) {
#ifdef _OPENMP
    int n = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    int ok = bf16_start(why, whylen);
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
    return ok;
}

int gemm_set_precision(const char *name, char *err, size_t errlen) {
    char why[200] = "";
    bf16_on = 0;
    if (!strcmp(name, "fp32")) return 1;
    if (!strcmp(name, "auto")) {  // bf16 only where it is the CPU's own product, else fp32; never refused
        bf16_on = !strcmp(engine_in_use->name, "onednn") && cpu_has_bf16() && bf16_start_alone(why, sizeof why);
        return 1;
    }
    if (strcmp(name, "bf16")) {
        snprintf(err, errlen, "--precision: unknown precision '%s' (fp32, bf16, auto)", name);
        return 0;
    }
    if (strcmp(engine_in_use->name, "onednn")) {
        snprintf(err, errlen, "--precision bf16 needs the oneDNN engine (--gemm onednn); the engine in use is %s",
                 engine_in_use->name);
        return 0;
    }
    if (!bf16_start_alone(why, sizeof why)) {
        snprintf(err, errlen, "--precision bf16: %s", why);
        return 0;
    }
    bf16_on = 1;
    return 1;
}

const char *gemm_precision(void) { return bf16_on ? "bf16" : "fp32"; }

void gemm_release(void) {
    bf16_release();
    bf16_on = 0;
}

const char *gemm_name(void) { return engine_in_use->name; }

int gemm_row_block(void) { return engine_in_use->row_block; }

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

// AVX512_BF16: bf16 products in the CPU's own instructions (without it
// oneDNN emulates them, in other bits).
static int cpu_has_bf16(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
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
    bf16_on = 0;
    if (!strcmp(name, "auto")) {
        engine_in_use = &gemm_engines[0];
        for (int i = 0; i < gemm_engine_count; i++) {
            const gemm_engine *e = &gemm_engines[i];
            if (e->auto_prefers() && e->available(why, sizeof why) && engine_correct(e)) {
                engine_in_use = e;
                break;
            }
        }
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
    size_t n = (size_t)snprintf(err, errlen, "--gemm: unknown engine '%s' (auto", name);
    for (int i = 0; i < gemm_engine_count && n < errlen; i++)
        n += (size_t)snprintf(err + n, errlen - n, ", %s", gemm_engines[i].name);
    if (n < errlen) snprintf(err + n, errlen - n, ")");
    return 0;
}
