// ops.c — see ops.h. Matrix products go through gemm_sgemm (gemm.h); the elementwise
// passes are threaded with OpenMP over rows.
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../core/common.h"
#include "gemm.h"
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

// This thread's share [lo, hi) of n items, one contiguous block per OpenMP
// thread. The matrix products split their rows this way while OpenBLAS runs
// single-threaded (see startup_threads in core/startup.c), so the two thread pools never
// compete for the cores. The split depends on the thread count, so
// bit-identical runs need the same --threads.
static void block_range(size_t n, size_t *lo, size_t *hi) {
#ifdef _OPENMP
    size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
#else
    size_t nt = 1, id = 0;
#endif
    size_t per = (n + nt - 1) / nt;
    *lo = id * per < n ? id * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *w, const float *b, size_t N, int C) {
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_LAYERNORM * N * C))
    for (size_t i = 0; i < N; i++) {
        const float *x = inp + i * C;
        float m = 0.0f;
#pragma omp simd reduction(+ : m)
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        float *o = out + i * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * w[c] + b[c];
        mean[i] = m;
        rstd[i] = s;
    }
}

void layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                        const float *inp, const float *w, const float *mean,
                        const float *rstd, size_t N, int C) {
    // forward: out = (x - mean) * rstd * w + b
    // The input gradient is independent per row; dw and db sum over rows, in
    // a fixed order so that runs are bit-reproducible.
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_LAYERNORM * N * C))
    for (size_t i = 0; i < N; i++) {
        const float *x = inp + i * C, *g = dout + i * C;
        float m = mean[i], s = rstd[i];
        float mean_dn = 0.0f, mean_dn_n = 0.0f;
#pragma omp simd reduction(+ : mean_dn, mean_dn_n)
        for (int c = 0; c < C; c++) {
            float n = (x[c] - m) * s, dn = g[c] * w[c];
            mean_dn += dn;
            mean_dn_n += dn * n;
        }
        mean_dn /= C;
        mean_dn_n /= C;
        float *dx = dinp + i * C;
#pragma omp simd
        for (int c = 0; c < C; c++) {
            float n = (x[c] - m) * s, dn = g[c] * w[c];
            dx[c] += s * (dn - mean_dn - n * mean_dn_n);
        }
    }
    // Each thread owns a strip of channels and walks every row in order.
#pragma omp parallel if (parallel : par_worth(PAR_NS_COLUMN_SUM * N * C))
    {
        size_t lo, hi;
        block_range((size_t)C, &lo, &hi);
        for (size_t i = 0; i < N; i++) {
            const float *x = inp + i * C, *g = dout + i * C;
            float m = mean[i], s = rstd[i];
#pragma omp simd
            for (size_t c = lo; c < hi; c++) {
                dw[c] += g[c] * (x[c] - m) * s;
                db[c] += g[c];
            }
        }
    }
}

// The matrix products split their rows into blocks of a fixed size, handed
// out to the OpenMP threads: an engine's result for an element depends on how
// many rows a call has (its blocking follows the shape), so a split that
// followed the thread count would make the last bits depend on --threads.
// With fixed blocks every thread count, and the build without OpenMP,
// compute the same bits (tests/ checks it). The engines themselves run
// single-threaded (core/startup.c, gemm.c), so no two thread pools compete.
// The rows of the activations go in the engine's blocks (gemm_row_block);
// the weight gradient's output rows in blocks of MM_BLOCK.
enum { MM_BLOCK = 128 };

static size_t mm_blocks(size_t n, size_t rows) { return (n + rows - 1) / rows; }

void matmul_forward(float *out, const float *inp, const float *w,
                    const float *bias, size_t N, int IC, int OC) {
    // out = inp · wᵀ (+ bias broadcast over rows)
    const size_t rows = (size_t)gemm_row_block();
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_MAC * N * IC * OC))
    for (size_t blk = 0; blk < mm_blocks(N, rows); blk++) {
        size_t lo = blk * rows, hi = lo + rows < N ? lo + rows : N;
        float beta = 0.0f;
        if (bias) {
            for (size_t i = lo; i < hi; i++) memcpy(out + i * OC, bias, sizeof(float) * OC);
            beta = 1.0f;
        }
        gemm_sgemm(0, 1, (int)(hi - lo), OC, IC, 1.0f,
                    inp + lo * IC, IC, w, IC, beta, out + lo * OC, OC);
    }
}

void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                     const float *inp, const float *w, size_t N, int IC, int OC) {
    // forward: out = inp · wᵀ + bias
    // dinp  = dout · w       (row blocks of dinp; written, not added: no
    //                         zeroing pass over it first, no reading it back)
    // dw   += doutᵀ · inp    (row blocks of dw: each block owns some outputs)
    // dbias += Σ_rows dout   (with dw's blocks, row by row in order)
    if (dinp) {
        const size_t rows = (size_t)gemm_row_block();
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_MAC * N * IC * OC))
        for (size_t blk = 0; blk < mm_blocks(N, rows); blk++) {
            size_t lo = blk * rows, hi = lo + rows < N ? lo + rows : N;
            gemm_sgemm(0, 0, (int)(hi - lo), IC, OC, 1.0f,
                        dout + lo * OC, OC, w, IC, 0.0f, dinp + lo * IC, IC);
        }
    }
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_MAC * N * IC * OC))
    for (size_t blk = 0; blk < mm_blocks((size_t)OC, MM_BLOCK); blk++) {
        size_t lo = blk * MM_BLOCK, hi = lo + MM_BLOCK < (size_t)OC ? lo + MM_BLOCK : (size_t)OC;
        gemm_sgemm(1, 0, (int)(hi - lo), IC, (int)N, 1.0f,
                    dout + lo, OC, inp, IC, 1.0f, dw + lo * IC, IC);
        if (dbias) {
            float s[MM_BLOCK] = {0};
            size_t width = hi - lo;
            for (size_t i = 0; i < N; i++) {
                const float *g = dout + i * OC + lo;
#pragma omp simd
                for (size_t k = 0; k < width; k++) s[k] += g[k];
            }
            for (size_t k = 0; k < width; k++) dbias[lo + k] += s[k];
        }
    }
}

#define GELU_K 0.7978845608028654f  // sqrt(2/pi)

// tanh through ops_expf, which vectorises (glibc's tanhf does not);
// saturates cleanly to ±1.
static inline float fast_tanh(float u) { return 1.0f - 2.0f / (ops_expf(2.0f * u) + 1.0f); }

void gelu_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : par_worth(PAR_NS_GELU * n))
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + fast_tanh(GELU_K * (x + 0.044715f * x * x * x)));
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
    // forward: y = 0.5 x (1 + tanh(k (x + 0.044715 x³)))
#pragma omp parallel for simd schedule(static) if (parallel : par_worth(PAR_NS_GELU_BACK * n))
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        float t = fast_tanh(u);
        float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        float g = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
        dinp[i] = g * dout[i];
    }
}

void ops_zero(float *x, size_t n) {
#pragma omp parallel if (parallel : par_worth(PAR_NS_ZERO * n))
    {
        size_t lo, hi;
        block_range(n, &lo, &hi);
        if (hi > lo) memset(x + lo, 0, sizeof(float) * (hi - lo));
    }
}

double ops_sum_squares(const float *x, size_t n) {
    // Fixed blocks summed in order: the same bits whatever the thread count.
    enum { BLOCK = 1 << 16 };
    size_t nb = (n + BLOCK - 1) / BLOCK;
    double *part = xmalloc(sizeof(double) * (nb ? nb : 1));
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_SUM_SQUARES * n))
    for (size_t b = 0; b < nb; b++) {
        size_t hi = (b + 1) * BLOCK < n ? (b + 1) * BLOCK : n;
        double s = 0.0;
        for (size_t i = b * BLOCK; i < hi; i++) s += (double)x[i] * x[i];
        part[b] = s;
    }
    double s = 0.0;
    for (size_t b = 0; b < nb; b++) s += part[b];
    free(part);
    return s;
}

void residual_forward(float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : par_worth(PAR_NS_ADD * n))
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

double crossentropy_forward(float *probs, const float *logits, const int *targets,
                            size_t N, int V, size_t *count) {
    double *row_loss = xmalloc(sizeof(double) * (N ? N : 1));  // (N)
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_XENT * N * V))
    for (size_t i = 0; i < N; i++) {
        const float *z = logits + i * V;
        float *p = probs + i * V;
        float mx = z[0];
        for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        double sum = 0.0;
#pragma omp simd
        for (int v = 0; v < V; v++) p[v] = z[v] - mx;
        ops_expf_exact(p, p, (size_t)V);
        for (int v = 0; v < V; v++) sum += p[v];
        float inv = (float)(1.0 / sum);
#pragma omp simd
        for (int v = 0; v < V; v++) p[v] *= inv;
        // -log softmax at the target, as log-sum-exp in double
        row_loss[i] = targets[i] >= 0 ? log(sum) + (double)mx - (double)z[targets[i]] : 0.0;
    }
    // Summed serially: the mean is reproducible whatever the thread count.
    double loss = 0.0;
    size_t n = 0;
    for (size_t i = 0; i < N; i++) {
        if (targets[i] < 0) continue;
        loss += row_loss[i];
        n++;
    }
    free(row_loss);
    *count = n;
    return n ? loss / (double)n : 0.0;
}

void crossentropy_backward(float *dlogits, const float *probs, const int *targets,
                           size_t N, int V, size_t count, float dloss) {
    float scale = count ? dloss / (float)count : 0.0f;
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_XENT_BACK * N * V))
    for (size_t i = 0; i < N; i++) {
        float *d = dlogits + i * V;
        const float *p = probs + i * V;
        if (targets[i] < 0) {
            memset(d, 0, sizeof(float) * V);
            continue;
        }
#pragma omp simd
        for (int v = 0; v < V; v++) d[v] = p[v] * scale;
        d[targets[i]] -= scale;
    }
}

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define EXPF_EXACT8 1
// glibc's expf: x·32/ln2 = k + r with k an integer (rounded to nearest by
// adding 1.5·2^52) and |r| <= 1/2, in double precision; then
// e^x = 2^(k/32) · 2^(r/32), 2^(k/32) from a table of 2^(i/32), i = k mod 32,
// with k div 32 added to its exponent bits, and 2^(r/32) ≈ 1 + C2 r + C1 r² +
// C0 r³ (a minimax cubic); the double result rounded to float once. Each
// step below is the operation glibc's FMA build performs, in its order.
static const uint64_t exp2_32nds[32] = {
    // the bits of 2^(i/32) rounded to double, less i << 47 (so that adding
    // k << 47 puts k div 32 in the exponent and leaves i's bits alone)
    0x3ff0000000000000u, 0x3fefd9b0d3158574u, 0x3fefb5586cf9890fu, 0x3fef9301d0125b51u,
    0x3fef72b83c7d517bu, 0x3fef54873168b9aau, 0x3fef387a6e756238u, 0x3fef1e9df51fdee1u,
    0x3fef06fe0a31b715u, 0x3feef1a7373aa9cbu, 0x3feedea64c123422u, 0x3feece086061892du,
    0x3feebfdad5362a27u, 0x3feeb42b569d4f82u, 0x3feeab07dd485429u, 0x3feea47eb03a5585u,
    0x3feea09e667f3bcdu, 0x3fee9f75e8ec5f74u, 0x3feea11473eb0187u, 0x3feea589994cce13u,
    0x3feeace5422aa0dbu, 0x3feeb737b0cdc5e5u, 0x3feec49182a3f090u, 0x3feed503b23e255du,
    0x3feee89f995ad3adu, 0x3feeff76f2fb5e47u, 0x3fef199bdd85529cu, 0x3fef3720dcef9069u,
    0x3fef5818dcfba487u, 0x3fef7c97337b9b5fu, 0x3fefa4afa2a490dau, 0x3fefd0765b6e4540u,
};

// Eight lanes; lanes whose |x| is 88 or more (or NaN) are left to expf,
// which handles overflow, underflow and the special values.
#ifdef __AVX512F__
static void expf_exact8(float *y, const float *x) {
    const __m512d inv_ln2_32 = _mm512_set1_pd(0x1.71547652b82fep+5), shift = _mm512_set1_pd(0x1.8p+52);
    const __m512d c0 = _mm512_set1_pd(0x1.c6af84b912394p-20), c1 = _mm512_set1_pd(0x1.ebfce50fac4f3p-13),
                  c2 = _mm512_set1_pd(0x1.62e42ff0c52d6p-6), one = _mm512_set1_pd(1.0);
    const __m512i t0 = _mm512_loadu_si512(exp2_32nds), t1 = _mm512_loadu_si512(exp2_32nds + 8),
                  t2 = _mm512_loadu_si512(exp2_32nds + 16), t3 = _mm512_loadu_si512(exp2_32nds + 24);
    __m256 xf = _mm256_loadu_ps(x);
    // glibc's test: the top 12 bits of |x| at or above those of 88
    __m256i top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(xf), 20), _mm256_set1_epi32(0x7ff));
    __mmask8 big = _mm256_cmpge_epi32_mask(top, _mm256_set1_epi32(0x42b));
    float xs[8];  // (y may be x)
    if (big) _mm256_storeu_ps(xs, xf);
    __m512d xd = _mm512_cvtps_pd(xf);
    __m512d kd = _mm512_fmadd_pd(inv_ln2_32, xd, shift);
    __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    __m512d r = _mm512_fmsub_pd(inv_ln2_32, xd, kd);
    __m512i lo = _mm512_permutex2var_epi64(t0, ki, t1), hi = _mm512_permutex2var_epi64(t2, ki, t3);
    __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    __m512i t = _mm512_add_epi64(_mm512_mask_blend_epi64(upper, lo, hi), _mm512_slli_epi64(ki, 47));
    __m512d z = _mm512_fmadd_pd(c0, r, c1), r2 = _mm512_mul_pd(r, r);
    __m512d p = _mm512_fmadd_pd(r, c2, one);
    p = _mm512_fmadd_pd(z, r2, p);
    p = _mm512_mul_pd(p, _mm512_castsi512_pd(t));
    _mm256_storeu_ps(y, _mm512_cvtpd_ps(p));
    if (big)
        for (int l = 0; l < 8; l++)
            if (big >> l & 1) y[l] = expf(xs[l]);
}
#else
// The same operations on AVX2: two halves of four doubles, the table read
// with a gather.
static void expf_exact8(float *y, const float *x) {
    const __m256d inv_ln2_32 = _mm256_set1_pd(0x1.71547652b82fep+5), shift = _mm256_set1_pd(0x1.8p+52);
    const __m256d c0 = _mm256_set1_pd(0x1.c6af84b912394p-20), c1 = _mm256_set1_pd(0x1.ebfce50fac4f3p-13),
                  c2 = _mm256_set1_pd(0x1.62e42ff0c52d6p-6), one = _mm256_set1_pd(1.0);
    __m256 xf = _mm256_loadu_ps(x);
    __m256i top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(xf), 20), _mm256_set1_epi32(0x7ff));
    int big = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x42a))));
    float xs[8];  // (y may be x)
    if (big) _mm256_storeu_ps(xs, xf);
    for (int h = 0; h < 2; h++) {
        __m256d xd = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(xf, 1) : _mm256_castps256_ps128(xf));
        __m256d kd = _mm256_fmadd_pd(inv_ln2_32, xd, shift);
        __m256i ki = _mm256_castpd_si256(kd);
        kd = _mm256_sub_pd(kd, shift);
        __m256d r = _mm256_fmsub_pd(inv_ln2_32, xd, kd);
        __m256i t = _mm256_i64gather_epi64((const long long *)exp2_32nds,
                                           _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
        t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
        __m256d z = _mm256_fmadd_pd(c0, r, c1), r2 = _mm256_mul_pd(r, r);
        __m256d p = _mm256_fmadd_pd(r, c2, one);
        p = _mm256_fmadd_pd(z, r2, p);
        p = _mm256_mul_pd(p, _mm256_castsi256_pd(t));
        _mm_storeu_ps(y + 4 * h, _mm256_cvtpd_ps(p));
    }
    if (big)
        for (int l = 0; l < 8; l++)
            if (big >> l & 1) y[l] = expf(xs[l]);
}
#endif
#endif

void ops_expf_exact(float *y, const float *x, size_t n) {
    size_t i = 0;
#ifdef EXPF_EXACT8
    for (; i + 8 <= n; i += 8) expf_exact8(y + i, x + i);
#endif
    for (; i < n; i++) y[i] = expf(x[i]);
}

void ops_one_plus_exp_neg(float *y, const float *x, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] = -x[i];
    ops_expf_exact(y, y, n);
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] = 1.0f + y[i];
}
