// attn.c — see attn.h. Per head h of sequence b, in row chunks [i0, i0+nq):
//   S = Q Kᵀ / sqrt(hs) + bias   (keys 0..nk-1; nk = i0+nq when causal)
//   P = softmax(mask(S))          rows
//   Y = P V + value term
// Heads run in parallel (OpenMP); OpenBLAS itself is single-threaded.
#include "attn.h"

#include <math.h>
#include <string.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "gemm.h"
#include "ops.h"

size_t attn_scratch_floats(int T, int chunk) { return 2 * (size_t)chunk * (size_t)T; }

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

// The keys row i of the scores sees among 0..nk-1 are usually one run
// lo..hi-1 (the causal prefix, cut to i's segment when segments are
// contiguous, as the data loaders make them); returns 1 when they are not
// (segments that interleave), and the general masked loops must be used.
static int visible_run_segments(const attn_dims *d, const int *seg_b, int i, int nk, int *lo_out, int *hi_out) {
    int hi = d->causal && i + 1 < nk ? i + 1 : nk;
    int id = seg_b[i], lo = i, h = i + 1, stray = 0;
    // Most often (one document, or a row inside the first) every key the row
    // could see is in its segment: one vectorised pass says so.
    int all = 1, reach = hi > i + 1 ? hi : i + 1;
#pragma omp simd reduction(& : all)
    for (int j = 0; j < reach; j++) all &= seg_b[j] == id;
    if (all) {
        *lo_out = 0, *hi_out = reach;
        return 0;
    }
    while (lo > 0 && seg_b[lo - 1] == id) lo--;
    while (h < hi && seg_b[h] == id) h++;
    for (int j = 0; j < lo; j++) stray += seg_b[j] == id;
    for (int j = h; j < hi; j++) stray += seg_b[j] == id;
    *lo_out = lo, *hi_out = h;
    return stray > 0;
}

// (inline: it runs for every row of every score block, and without segments
// it is one comparison)
static inline int visible_run(const attn_dims *d, const int *seg_b, int i, int nk, int *lo_out, int *hi_out) {
    if (seg_b) return visible_run_segments(d, seg_b, i, nk, lo_out, hi_out);
    *lo_out = 0, *hi_out = d->causal && i + 1 < nk ? i + 1 : nk;
    return 0;
}

// Row i of the scores, keys 0..nk-1, in place: s = softmax(mask(s)), and
// zeros from the masked keys up to n (>= nk). The one-run case is a
// branch-free loop that vectorises. stat, when not NULL, receives the row's
// maximum and 1/sum, from which the fused kernel's backward pass recomputes
// the same weights bit for bit (probs_row).
const int attn_stat_dist[ATTN_STAT_DISTS] = {16, 64, 256};

// Row i's weights w (keys 0..nk-1) into acc (ATTN_NSTAT sums, attn.h).
static void row_stats(double *acc, const float *w, int i, int nk, int causal) {
    if (i >= 1) acc[0] += w[0], acc[1] += 1;
    int last = causal ? i : nk - 1;  // the last key the row sees
    for (int k = 0; k < ATTN_STAT_DISTS; k++) {
        int D = attn_stat_dist[k];
        double far = 0;
        int any = 0;
        for (int j = 0; j <= i - D; j++) far += w[j], any = 1;
        for (int j = i + D; j <= last; j++) far += w[j], any = 1;
        if (any) acc[2 + 2 * k] += far, acc[3 + 2 * k] += 1;
    }
}

// The largest of s[lo..hi), -inf for none. A maximum has the same value
// in any order (but for the sign of a zero, which e^(s - max) does not
// see, and which of several NaNs, after which the row is NaN either way),
// so this may take the vector lanes in any order: with AVX-512 sixteen
// lanes and one reduction in registers; gcc's `omp simd` reduction goes
// through a 16-float array on the stack, one scalar step per lane.
static inline float run_max(const float *s, int lo, int hi) {
#ifdef __AVX512F__
    __m512 m = _mm512_set1_ps(-INFINITY);
    int j = lo;
    for (; j + 16 <= hi; j += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(s + j));
    if (j < hi) {
        __mmask16 k = (__mmask16)((1u << (hi - j)) - 1);
        m = _mm512_mask_max_ps(m, k, m, _mm512_maskz_loadu_ps(k, s + j));
    }
    return _mm512_reduce_max_ps(m);
#else
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int j = lo; j < hi; j++) mx = s[j] > mx ? s[j] : mx;
    return mx;
#endif
}

static void softmax_row(float *s, const attn_dims *d, const int *seg_b, int i, int nk, int n, float *stat) {
    int lo, hi;
    int general = visible_run(d, seg_b, i, nk, &lo, &hi);
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
        if (stat) stat[0] = mx, stat[1] = inv;
        return;
    }
    mx = run_max(s, lo, hi);
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
    if (stat) stat[0] = mx, stat[1] = inv;
}

// The weights of row i again from its scores and the forward pass's stat:
// the same operations as softmax_row, so the same bits.
static void probs_row(float *s, const attn_dims *d, const int *seg_b, int i, int nk, const float *stat) {
    const float mx = stat[0], inv = stat[1];
    int lo, hi;
    if (visible_run(d, seg_b, i, nk, &lo, &hi)) {
        for (int j = 0; j < nk; j++) {
            float e = key_allowed(d, seg_b, i, j) ? ops_expf(s[j] - mx) : 0.0f;
            s[j] = e * inv;
        }
        return;
    }
#pragma omp simd
    for (int j = lo; j < hi; j++) {
        float e = ops_expf(s[j] - mx);
        s[j] = e * inv;
    }
    memset(s, 0, sizeof(float) * (size_t)lo);
    memset(s + hi, 0, sizeof(float) * (size_t)(nk - hi));
}

// Rows of weights P (m, ldp) and their gradients G (m, ldg), keys 0..nk-1:
// G becomes the gradient of the scores, dS = P ⊙ (dP − Σ_j dP P), in place.
static void softmax_backward_rows(const float *P, int ldp, float *G, int ldg, int m, int nk) {
    for (int r = 0; r < m; r++) {
        const float *p = P + (size_t)r * ldp;
        float *g = G + (size_t)r * ldg;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int j = 0; j < nk; j++) dot += g[j] * p[j];
#pragma omp simd
        for (int j = 0; j < nk; j++) g[j] = p[j] * (g[j] - dot);
    }
}

// One head h of sequence b: its q, k, v (T, hs; row stride 3C) inside qkv,
// their gradients inside dqkv (NULL: none), and the sequence's segments and
// positions (NULL when absent).
typedef struct {
    const float *Q, *K, *V;
    float *dQ, *dK, *dV;
    const int *seg, *pos;
} head_seq;

static head_seq head_of(const attn_dims *d, const float *qkv, float *dqkv, int b, int h) {
    size_t at = (size_t)b * d->T * 3 * d->C + (size_t)h * (d->C / d->NH);
    head_seq s = {qkv + at, qkv + at + d->C, qkv + at + 2 * d->C, NULL, NULL, NULL,
                  d->seg ? d->seg + (size_t)b * d->T : NULL, d->pos ? d->pos + (size_t)b * d->T : NULL};
    if (dqkv) s.dQ = dqkv + at, s.dK = s.dQ + d->C, s.dV = s.dQ + 2 * d->C;
    return s;
}

void attn_forward(float *y, float *att, const float *qkv, const attn_dims *d, float *scratch) {
    const int B = d->B, T = d->T, C = d->C, NH = d->NH, hs = C / NH, ld = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    pe_t *rel = d->rel;
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_ATTN * B * NH * T * T * hs))
    for (int h = 0; h < NH; h++) {
        float *mine = scratch + (size_t)thread_id() * attn_scratch_floats(T, d->chunk);
        for (int b = 0; b < B; b++) {
            const head_seq hq = head_of(d, qkv, NULL, b, h);
            const float *Q = hq.Q, *K = hq.K, *V = hq.V;
            const int *seg_b = hq.seg, *pos_b = hq.pos;
            for (int i0 = 0; i0 < T; i0 += d->chunk) {
                int nq = T - i0 < d->chunk ? T - i0 : d->chunk;
                int nk = d->causal ? i0 + nq : T;
                float *S = att ? att + (((size_t)b * NH + h) * T + i0) * T : mine;  // (nq, T)
                int raw = rel && rel->ops->score_forward_raw;  // the encoding scales q·kᵀ itself
                gemm_sgemm(0, 1, nq, nk, hs, raw ? 1.0f : scale,
                            Q + (size_t)i0 * ld, ld, K, ld, 0.0f, S, T);
                if (raw)
                    rel->ops->score_forward_raw(rel, d->params, d->layer, h, b, Q + (size_t)i0 * ld, K, ld,
                                                i0, nq, nk, S, T, pos_b, scale);
                else if (rel && rel->ops->score_forward)
                    rel->ops->score_forward(rel, d->params, d->layer, h, b, Q + (size_t)i0 * ld, K, ld,
                                            i0, nq, nk, S, T, pos_b);
                for (int r = 0; r < nq; r++) softmax_row(S + (size_t)r * T, d, seg_b, i0 + r, nk, att ? T : nk, NULL);
                if (d->stats)
                    for (int r = 0; r < nq; r++) row_stats(d->stats + (size_t)h * ATTN_NSTAT, S + (size_t)r * T, i0 + r, nk, d->causal);
                float *Y = y + ((size_t)b * T + i0) * C + h * hs;  // (nq, hs), stride C
                gemm_sgemm(0, 0, nq, hs, nk, 1.0f,
                            S, T, V, ld, 0.0f, Y, C);
                if (rel && rel->ops->value_forward)
                    rel->ops->value_forward(rel, d->params, d->layer, h, b, S, T, i0, nq, nk, Y, C, pos_b);
            }
        }
    }
}

void attn_backward(float *dqkv, float *grads, const float *dy, const float *att,
                   const float *qkv, const attn_dims *d, float *scratch) {
    const int B = d->B, T = d->T, C = d->C, NH = d->NH, hs = C / NH, ld = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    pe_t *rel = d->rel;
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_ATTN_BACK * B * NH * T * T * hs))
    for (int h = 0; h < NH; h++) {
        float *dP = scratch + (size_t)thread_id() * attn_scratch_floats(T, d->chunk);  // (nq, T)
        for (int b = 0; b < B; b++) {
            const head_seq hq = head_of(d, qkv, dqkv, b, h);
            const float *Q = hq.Q, *K = hq.K, *V = hq.V;
            float *dQ = hq.dQ, *dK = hq.dK, *dV = hq.dV;
            const int *pos_b = hq.pos;
            for (int i0 = 0; i0 < T; i0 += d->chunk) {
                int nq = T - i0 < d->chunk ? T - i0 : d->chunk;
                int nk = d->causal ? i0 + nq : T;
                const float *P = att + (((size_t)b * NH + h) * T + i0) * T;  // (nq, T)
                const float *dY = dy + ((size_t)b * T + i0) * C + h * hs;   // (nq, hs)
                // forward: Y = P V (+ value term)
                gemm_sgemm(0, 1, nq, nk, hs, 1.0f,
                            dY, C, V, ld, 0.0f, dP, T);
                if (rel && rel->ops->value_backward)
                    rel->ops->value_backward(rel, d->params, grads, d->layer, h, b, P, T, i0, nq, nk,
                                             dY, C, dP, T, pos_b);
                gemm_sgemm(1, 0, nk, hs, nq, 1.0f,
                            P, T, dY, C, 1.0f, dV, ld);
                // forward: P = softmax(S) per row
                softmax_backward_rows(P, T, dP, T, nq, nk);
                // forward: S = Q Kᵀ · scale + bias
                if (rel && rel->ops->score_backward)
                    rel->ops->score_backward(rel, d->params, grads, d->layer, h, b, Q + (size_t)i0 * ld, K,
                                             ld, dQ + (size_t)i0 * ld, dK, i0, nq, nk, dP, T, pos_b);
                gemm_sgemm(0, 0, nq, hs, nk, scale,
                            dP, T, K, ld, 1.0f, dQ + (size_t)i0 * ld, ld);
                gemm_sgemm(1, 0, nk, hs, nq, scale,
                            dP, T, Q + (size_t)i0 * ld, ld, 1.0f, dK, ld);
            }
        }
    }
}

// ---- the fused kernel (--attn-kernel fused) ----
//
// Per head and block of chunk query rows. When causal, every product splits
// into the keys before the block (one product over all its rows) and the
// block's diagonal, taken DIAG_ROWS rows at a time with only the keys up to
// each sub-block's last row: of the diagonal only the upper halves of
// DIAG_ROWS-wide tiles are computed and masked, where the blocks kernel
// computes the whole upper half of the chunk-wide diagonal block. Training
// keeps two floats per query row (the softmax's maximum and 1/sum) instead of
// the (T, T) weights; the backward pass recomputes the scores, the encoding's
// bias and the weights block by block, bit for bit as the forward pass made
// them.
enum { DIAG_ROWS = 16 };

static inline int imin(int a, int b) { return a < b ? a : b; }

// out (nq, ·) = alpha · X Kᵀ over the keys the block's rows see: X (nq, hs)
// the block's rows, Kx (T, hs) the keys.
static void rows_by_keys(float *out, int ldo, const float *X, int ldX, const float *Kx, int ldK, int hs, float alpha,
                         const attn_dims *d, int i0, int nq) {
    if (!d->causal) {
        gemm_sgemm(0, 1, nq, d->T, hs, alpha, X, ldX, Kx, ldK, 0.0f, out, ldo);
        return;
    }
    if (i0 > 0) gemm_sgemm(0, 1, nq, i0, hs, alpha, X, ldX, Kx, ldK, 0.0f, out, ldo);
    for (int r0 = 0; r0 < nq; r0 += DIAG_ROWS) {
        int m = imin(DIAG_ROWS, nq - r0);
        gemm_sgemm(0, 1, m, r0 + m, hs, alpha, X + (size_t)r0 * ldX, ldX,
                    Kx + (size_t)i0 * ldK, ldK, 0.0f, out + (size_t)r0 * ldo + i0, ldo);
    }
}

// out (nq, hs) = beta · out + alpha · A Vx over the keys the block's rows
// see: A (nq, ldA) weights or score gradients over keys, Vx (T, hs).
static void rows_from_keys(float *out, int ldo, const float *A, int ldA, const float *Vx, int ldV, int hs, float alpha,
                           float beta, const attn_dims *d, int i0, int nq) {
    if (!d->causal) {
        gemm_sgemm(0, 0, nq, hs, d->T, alpha, A, ldA, Vx, ldV, beta, out, ldo);
        return;
    }
    if (i0 > 0) gemm_sgemm(0, 0, nq, hs, i0, alpha, A, ldA, Vx, ldV, beta, out, ldo);
    for (int r0 = 0; r0 < nq; r0 += DIAG_ROWS) {
        int m = imin(DIAG_ROWS, nq - r0);
        gemm_sgemm(0, 0, m, hs, r0 + m, alpha, A + (size_t)r0 * ldA + i0, ldA,
                    Vx + (size_t)i0 * ldV, ldV, i0 > 0 ? 1.0f : beta, out + (size_t)r0 * ldo, ldo);
    }
}

// out (T, hs) += alpha · Aᵀ X over the block's rows: A (nq, ldA) weights or
// score gradients over keys, X (nq, hs) the block's rows. The keys before the
// block take every row in one product; each DIAG_ROWS keys of the diagonal
// only the rows that see them.
static void keys_from_rows(float *out, int ldo, const float *A, int ldA, const float *X, int ldX, int hs, float alpha,
                           const attn_dims *d, int i0, int nq) {
    if (!d->causal) {
        gemm_sgemm(1, 0, d->T, hs, nq, alpha, A, ldA, X, ldX, 1.0f, out, ldo);
        return;
    }
    if (i0 > 0)
        gemm_sgemm(1, 0, i0, hs, nq, alpha, A, ldA, X, ldX, 1.0f, out, ldo);
    for (int c0 = 0; c0 < nq; c0 += DIAG_ROWS) {
        int w = imin(DIAG_ROWS, nq - c0);
        gemm_sgemm(1, 0, w, hs, nq - c0, alpha, A + (size_t)c0 * ldA + i0 + c0,
                    ldA, X + (size_t)c0 * ldX, ldX, 1.0f, out + (size_t)(i0 + c0) * ldo, ldo);
    }
}

// The sub-blocks of a block: all its rows at once when bidirectional.
static inline int sub_rows(const attn_dims *d, int nq) { return d->causal ? DIAG_ROWS : nq; }
// Keys that rows r0..r0+m-1 of the block at i0 see.
static inline int sub_keys(const attn_dims *d, int i0, int r0, int m) { return d->causal ? i0 + r0 + m : d->T; }

// The block's scores S (nq, T) = Q Kᵀ · scale + bias; then, per sub-block,
// the weights: softmax_row saving stat (forward; stat NULL at evaluation) or
// probs_row from it (backward).
static void block_weights(float *S, const float *Q, const float *K, int ld, int hs, float scale, const attn_dims *d,
                          int b, int h, int i0, int nq, const int *seg_b, const int *pos_b, float *stat, const float *saved) {
    const int T = d->T;
    pe_t *rel = d->rel;
    rows_by_keys(S, T, Q + (size_t)i0 * ld, ld, K, ld, hs, scale, d, i0, nq);
    for (int r0 = 0; r0 < nq; r0 += sub_rows(d, nq)) {
        int m = imin(sub_rows(d, nq), nq - r0), i = i0 + r0, nk = sub_keys(d, i0, r0, m);
        float *Sr = S + (size_t)r0 * T;
        if (rel && rel->ops->score_forward)
            rel->ops->score_forward(rel, d->params, d->layer, h, b, Q + (size_t)i * ld, K, ld, i, m, nk, Sr, T, pos_b);
        for (int r = 0; r < m; r++) {
            float *row = Sr + (size_t)r * T;
            if (saved) probs_row(row, d, seg_b, i + r, nk, saved + 2 * (size_t)(i + r));
            else softmax_row(row, d, seg_b, i + r, nk, nk, stat ? stat + 2 * (size_t)(i + r) : NULL);
        }
    }
}

void attn_fused_forward(float *y, float *stats, const float *qkv, const attn_dims *d, float *scratch) {
    const int B = d->B, T = d->T, C = d->C, NH = d->NH, hs = C / NH, ld = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    pe_t *rel = d->rel;
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_ATTN * B * NH * T * T * hs))
    for (int h = 0; h < NH; h++) {
        float *S = scratch + (size_t)thread_id() * attn_scratch_floats(T, d->chunk);  // (chunk, T)
        for (int b = 0; b < B; b++) {
            const head_seq hq = head_of(d, qkv, NULL, b, h);
            const float *Q = hq.Q, *K = hq.K, *V = hq.V;
            const int *seg_b = hq.seg, *pos_b = hq.pos;
            float *st = stats ? stats + ((size_t)b * NH + h) * T * 2 : NULL;  // (T, 2)
            for (int i0 = 0; i0 < T; i0 += d->chunk) {
                int nq = imin(d->chunk, T - i0);
                block_weights(S, Q, K, ld, hs, scale, d, b, h, i0, nq, seg_b, pos_b, st, NULL);
                if (d->stats)  // a causal row's keys past its own are not computed here: row_stats reads up to i
                    for (int r = 0; r < nq; r++) row_stats(d->stats + (size_t)h * ATTN_NSTAT, S + (size_t)r * T, i0 + r, T, d->causal);
                float *Y = y + ((size_t)b * T + i0) * C + h * hs;
                rows_from_keys(Y, C, S, T, V, ld, hs, 1.0f, 0.0f, d, i0, nq);
                if (rel && rel->ops->value_forward)
                    for (int r0 = 0; r0 < nq; r0 += sub_rows(d, nq)) {
                        int m = imin(sub_rows(d, nq), nq - r0);
                        rel->ops->value_forward(rel, d->params, d->layer, h, b, S + (size_t)r0 * T, T, i0 + r0, m,
                                                sub_keys(d, i0, r0, m), Y + (size_t)r0 * C, C, pos_b);
                    }
            }
        }
    }
}

void attn_fused_backward(float *dqkv, float *grads, const float *dy, const float *stats, const float *qkv,
                         const attn_dims *d, float *scratch) {
    const int B = d->B, T = d->T, C = d->C, NH = d->NH, hs = C / NH, ld = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    pe_t *rel = d->rel;
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_ATTN_BACK * B * NH * T * T * hs))
    for (int h = 0; h < NH; h++) {
        float *P = scratch + (size_t)thread_id() * attn_scratch_floats(T, d->chunk);  // (chunk, T)
        float *dP = P + (size_t)d->chunk * T;                                        // (chunk, T)
        for (int b = 0; b < B; b++) {
            const head_seq hq = head_of(d, qkv, dqkv, b, h);
            const float *Q = hq.Q, *K = hq.K, *V = hq.V;
            float *dQ = hq.dQ, *dK = hq.dK, *dV = hq.dV;
            const int *seg_b = hq.seg, *pos_b = hq.pos;
            const float *st = stats + ((size_t)b * NH + h) * T * 2;
            for (int i0 = 0; i0 < T; i0 += d->chunk) {
                int nq = imin(d->chunk, T - i0);
                const float *dY = dy + ((size_t)b * T + i0) * C + h * hs;  // (nq, hs), stride C
                // forward: P = softmax(Q Kᵀ · scale + bias), recomputed; Y = P V (+ value term)
                block_weights(P, Q, K, ld, hs, scale, d, b, h, i0, nq, seg_b, pos_b, NULL, st);
                rows_by_keys(dP, T, dY, C, V, ld, hs, 1.0f, d, i0, nq);
                for (int r0 = 0; r0 < nq; r0 += sub_rows(d, nq)) {
                    int m = imin(sub_rows(d, nq), nq - r0), i = i0 + r0, nk = sub_keys(d, i0, r0, m);
                    float *Pr = P + (size_t)r0 * T, *g = dP + (size_t)r0 * T;
                    if (rel && rel->ops->value_backward)
                        rel->ops->value_backward(rel, d->params, grads, d->layer, h, b, Pr, T, i, m, nk, dY + (size_t)r0 * C,
                                                 C, g, T, pos_b);
                    softmax_backward_rows(Pr, T, g, T, m, nk);
                    // forward: S = Q Kᵀ · scale + bias
                    if (rel && rel->ops->score_backward)
                        rel->ops->score_backward(rel, d->params, grads, d->layer, h, b, Q + (size_t)i * ld, K, ld,
                                                 dQ + (size_t)i * ld, dK, i, m, nk, g, T, pos_b);
                }
                rows_from_keys(dQ + (size_t)i0 * ld, ld, dP, T, K, ld, hs, scale, 1.0f, d, i0, nq);
                keys_from_rows(dV, ld, P, T, dY, C, hs, 1.0f, d, i0, nq);
                keys_from_rows(dK, ld, dP, T, Q + (size_t)i0 * ld, ld, hs, scale, d, i0, nq);
            }
        }
    }
}
