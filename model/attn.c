// attn.c — see attn.h. Per head h of sequence b, in row chunks [i0, i0+nq):
//   S = Q Kᵀ / sqrt(hs) + bias   (keys 0..nk-1; nk = i0+nq when causal)
//   P = softmax(mask(S))          rows
//   Y = P V + value term
// Heads run in parallel (OpenMP); OpenBLAS itself is single-threaded.
#include "attn.h"

#include <cblas.h>
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "ops.h"

size_t attn_scratch_floats(int T, int chunk) { return (size_t)chunk * (size_t)T; }

static int thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static inline int key_allowed(const attn_dims *d, const int *seg_b, int i, int j) {
    if (d->causal && j > i) return 0;
    return !seg_b || seg_b[i] == seg_b[j];
}

// Row i of the scores, keys 0..nk-1, in place: s = softmax(mask(s)), and
// zeros from the masked keys up to n (>= nk). The visible keys are usually
// one run lo..hi-1 (the causal prefix, cut to i's segment when segments are
// contiguous, as the data loaders make them); that case is a branch-free loop
// that vectorises. Anything else takes the general masked loop.
static void softmax_row(float *s, const attn_dims *d, const int *seg_b, int i, int nk, int n) {
    int lo = 0, hi = d->causal && i + 1 < nk ? i + 1 : nk;
    int general = 0;
    if (seg_b) {
        int id = seg_b[i], h = i + 1, stray = 0;
        for (lo = i; lo > 0 && seg_b[lo - 1] == id;) lo--;
        while (h < hi && seg_b[h] == id) h++;
        for (int j = 0; j < lo; j++) stray += seg_b[j] == id;
        for (int j = h; j < hi; j++) stray += seg_b[j] == id;
        hi = h;
        general = stray > 0;
    }
    float mx = -INFINITY, sum = 0.0f;
    if (general) {
        for (int j = 0; j < nk; j++)
            if (key_allowed(d, seg_b, i, j) && s[j] > mx) mx = s[j];
        for (int j = 0; j < nk; j++) {
            s[j] = key_allowed(d, seg_b, i, j) ? ops_expf(s[j] - mx) : 0.0f;
            sum += s[j];
        }
        float inv = 1.0f / sum;
        for (int j = 0; j < nk; j++) s[j] *= inv;
        memset(s + nk, 0, sizeof(float) * (size_t)(n - nk));
        return;
    }
#pragma omp simd reduction(max : mx)
    for (int j = lo; j < hi; j++) mx = s[j] > mx ? s[j] : mx;
#pragma omp simd reduction(+ : sum)
    for (int j = lo; j < hi; j++) {
        s[j] = ops_expf(s[j] - mx);
        sum += s[j];
    }
    float inv = 1.0f / sum;
#pragma omp simd
    for (int j = lo; j < hi; j++) s[j] *= inv;
    memset(s, 0, sizeof(float) * (size_t)lo);
    memset(s + hi, 0, sizeof(float) * (size_t)(n - hi));
}

void attn_forward(float *y, float *att, const float *qkv, const attn_dims *d, float *scratch) {
    const int B = d->B, T = d->T, C = d->C, NH = d->NH, hs = C / NH, ld = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    pe_t *rel = d->rel;
#pragma omp parallel for schedule(static)
    for (int h = 0; h < NH; h++) {
        float *mine = scratch + (size_t)thread_id() * attn_scratch_floats(T, d->chunk);
        for (int b = 0; b < B; b++) {
            const float *Q = qkv + (size_t)b * T * ld + h * hs;  // (T, hs), row stride ld
            const float *K = Q + C, *V = Q + 2 * C;
            const int *seg_b = d->seg ? d->seg + (size_t)b * T : NULL;
            const int *pos_b = d->pos ? d->pos + (size_t)b * T : NULL;
            for (int i0 = 0; i0 < T; i0 += d->chunk) {
                int nq = T - i0 < d->chunk ? T - i0 : d->chunk;
                int nk = d->causal ? i0 + nq : T;
                float *S = att ? att + (((size_t)b * NH + h) * T + i0) * T : mine;  // (nq, T)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, hs, scale,
                            Q + (size_t)i0 * ld, ld, K, ld, 0.0f, S, T);
                if (rel && rel->ops->score_forward)
                    rel->ops->score_forward(rel, d->params, d->layer, h, Q + (size_t)i0 * ld, K, ld,
                                            i0, nq, nk, S, T, pos_b);
                for (int r = 0; r < nq; r++) softmax_row(S + (size_t)r * T, d, seg_b, i0 + r, nk, att ? T : nk);
                float *Y = y + ((size_t)b * T + i0) * C + h * hs;  // (nq, hs), stride C
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, hs, nk, 1.0f,
                            S, T, V, ld, 0.0f, Y, C);
                if (rel && rel->ops->value_forward)
                    rel->ops->value_forward(rel, d->params, d->layer, h, S, T, i0, nq, nk, Y, C, pos_b);
            }
        }
    }
}

void attn_backward(float *dqkv, float *grads, const float *dy, const float *att,
                   const float *qkv, const attn_dims *d, float *scratch) {
    const int B = d->B, T = d->T, C = d->C, NH = d->NH, hs = C / NH, ld = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    pe_t *rel = d->rel;
#pragma omp parallel for schedule(static)
    for (int h = 0; h < NH; h++) {
        float *dP = scratch + (size_t)thread_id() * attn_scratch_floats(T, d->chunk);  // (nq, T)
        for (int b = 0; b < B; b++) {
            const float *Q = qkv + (size_t)b * T * ld + h * hs;
            const float *K = Q + C, *V = Q + 2 * C;
            float *dQ = dqkv + (size_t)b * T * ld + h * hs;
            float *dK = dQ + C, *dV = dQ + 2 * C;
            const int *pos_b = d->pos ? d->pos + (size_t)b * T : NULL;
            for (int i0 = 0; i0 < T; i0 += d->chunk) {
                int nq = T - i0 < d->chunk ? T - i0 : d->chunk;
                int nk = d->causal ? i0 + nq : T;
                const float *P = att + (((size_t)b * NH + h) * T + i0) * T;  // (nq, T)
                const float *dY = dy + ((size_t)b * T + i0) * C + h * hs;   // (nq, hs)
                // forward: Y = P V (+ value term)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, hs, 1.0f,
                            dY, C, V, ld, 0.0f, dP, T);
                if (rel && rel->ops->value_backward)
                    rel->ops->value_backward(rel, d->params, grads, d->layer, h, P, T, i0, nq, nk,
                                             dY, C, dP, T, pos_b);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hs, nq, 1.0f,
                            P, T, dY, C, 1.0f, dV, ld);
                // forward: P = softmax(S) per row → dS = P ⊙ (dP − Σ_j dP P)
                for (int r = 0; r < nq; r++) {
                    const float *p = P + (size_t)r * T;
                    float *g = dP + (size_t)r * T;
                    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                    for (int j = 0; j < nk; j++) dot += g[j] * p[j];
#pragma omp simd
                    for (int j = 0; j < nk; j++) g[j] = p[j] * (g[j] - dot);
                }
                // forward: S = Q Kᵀ · scale + bias
                if (rel && rel->ops->score_backward)
                    rel->ops->score_backward(rel, d->params, grads, d->layer, h, Q + (size_t)i0 * ld, K,
                                             ld, dQ + (size_t)i0 * ld, dK, i0, nq, nk, dP, T, pos_b);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, hs, nk, scale,
                            dP, T, K, ld, 1.0f, dQ + (size_t)i0 * ld, ld);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hs, nq, scale,
                            dP, T, Q + (size_t)i0 * ld, ld, 1.0f, dK, ld);
            }
        }
    }
}
