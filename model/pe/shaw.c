// shaw.c — Shaw, Uszkoreit & Vaswani 2018, "Self-Attention with Relative
// Position Representations", eqs. 3–5:
//   s_ij = q_i·(k_j + aK[c(j − i)]) / sqrt(hs)
//   y_i  = Σ_j α_ij (v_j + aV[c(j − i)])
// c(x) = clamp(x, −k, k), k = --rel-clip (default 16); aK, aV ∈ R^((2k+1)×hs)
// per layer, shared by the heads. Under --rand-pos, j − i is the distance of
// the drawn positions. Each head accumulates its gradient of aK
// and aV in its own scratch; layer_end adds them up in head order.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../gemm.h"
#include "pe.h"

typedef struct {
    int k, nrel, hs, NH, chunk;
    float *work;            // per head: (chunk, nrel) for G / A
    float *dK, *dV;         // per head: (nrel, hs)
} shaw_state;

static const pe_option shaw_options[] = {
    {.name = "rel-clip", .type = PE_OPT_INT, .lo = 1, .hi = 1 << 16, .def = 16, .help = "relative clipping distance k"},
    {0},
};

static void shaw_init(pe_t *pe, param_table *tab) {
    const model_config *c = pe->cfg;
    int k = (int)pe->opt[0], nrel = 2 * k + 1, hs = c->d_model / c->heads;
    size_t per_layer = (size_t)nrel * hs;
    pe->tensor[0] = param_add(tab, "pe_shaw_k", size_mul(per_layer, (size_t)c->layers, "shaw table"), 1, INIT_NORMAL, 0.02f);
    pe->tensor[1] = param_add(tab, "pe_shaw_v", per_layer * c->layers, 1, INIT_NORMAL, 0.02f);
    shaw_state *st = xcalloc(1, sizeof *st);
    st->k = k, st->nrel = nrel, st->hs = hs, st->NH = c->heads;
    pe->state = st;
}

static void shaw_free(pe_t *pe) {
    shaw_state *st = pe->state;
    if (st) free(st->work), free(st->dK), free(st->dV);
    free(st);
    pe->state = NULL;
}

// Sizes the per-head scratch for the current attention chunk (serial).
static void shaw_layer_begin(pe_t *pe, const float *params, int layer, const pe_batch *bt) {
    shaw_state *st = pe->state;
    if (!st->dK) {
        size_t per_head = (size_t)st->nrel * st->hs;
        st->dK = xcalloc(size_mul(per_head, (size_t)st->NH, "shaw scratch"), sizeof(float));
        st->dV = xcalloc(per_head * st->NH, sizeof(float));
    }
    if (st->work && st->chunk == bt->chunk) return;
    free(st->work);
    st->chunk = bt->chunk;
    st->work = xmalloc(sizeof(float) * size_mul((size_t)st->NH * st->chunk, (size_t)st->nrel, "shaw scratch"));
}

// Keys 0..nk-1 of query i fall in three runs by their clipped distance
// c(j − i): j < lo all in bucket 0 (j − i <= −k), lo <= j < hi in bucket
// j − i + k, j >= hi all in bucket 2k (j − i >= k). Walking the runs instead
// of clamping every j lets the middle loops vectorise. The sums into the two
// end buckets stay serial, in key order, so results are bit-identical to the
// plain per-key loop.
static void rel_runs(int i, int k, int nk, int *lo, int *hi) {
    int a = i - k + 1, b = i + k;
    a = a < 0 ? 0 : a > nk ? nk : a;
    b = b < a ? a : b > nk ? nk : b;
    *lo = a, *hi = b;
}

// The clipped distance of key j from query i under --rand-pos positions, plus k.
static int rel_bucket(const int *pos, int i, int j, int k) {
    int d = pos[j] - pos[i];
    return (d < -k ? -k : d > k ? k : d) + k;
}

// row[j] += g[c(j − i) + k] for every key j (j − i is pos[j] − pos[i] with pos)
static void rel_gather_add(float *row, const float *g, int i, int k, int nk, const int *pos) {
    if (pos) {
        for (int j = 0; j < nk; j++) row[j] += g[rel_bucket(pos, i, j, k)];
        return;
    }
    int lo, hi;
    rel_runs(i, k, nk, &lo, &hi);
    float first = g[0], last = g[2 * k];
    for (int j = 0; j < lo; j++) row[j] += first;
    for (int j = lo; j < hi; j++) row[j] += g[j - i + k];
    for (int j = hi; j < nk; j++) row[j] += last;
}

// a[c(j − i) + k] += row[j] for every key j
static void rel_scatter_add(float *a, const float *row, int i, int k, int nk, const int *pos) {
    if (pos) {
        for (int j = 0; j < nk; j++) a[rel_bucket(pos, i, j, k)] += row[j];
        return;
    }
    int lo, hi;
    rel_runs(i, k, nk, &lo, &hi);
    float first = a[0];
    for (int j = 0; j < lo; j++) first += row[j];
    a[0] = first;
    for (int j = lo; j < hi; j++) a[j - i + k] += row[j];
    float last = a[2 * k];
    for (int j = hi; j < nk; j++) last += row[j];
    a[2 * k] = last;
}

static void shaw_score_forward(pe_t *pe, const float *params, int layer, int h, int b, const float *q, const float *k,
                               int ld, int i0, int nq, int nk, float *s, int lds, const int *pos) {
    shaw_state *st = pe->state;
    int nrel = st->nrel, hs = st->hs;
    const float *aK = params + pe->off[0] + (size_t)layer * nrel * hs;
    float *G = st->work + (size_t)h * st->chunk * nrel;  // (nq, nrel) = Q aKᵀ / sqrt(hs)
    gemm_sgemm(0, 1, nq, nrel, hs, 1.0f / sqrtf((float)hs), q, ld, aK, hs,
                0.0f, G, nrel);
    for (int r = 0; r < nq; r++) {
        float *row = s + (size_t)r * lds;
        const float *g = G + (size_t)r * nrel;
        rel_gather_add(row, g, i0 + r, st->k, nk, pos);
    }
}

static void shaw_score_backward(pe_t *pe, const float *params, float *grads, int layer, int h, int b, const float *q,
                                const float *k, int ld, float *dq, float *dk, int i0, int nq, int nk,
                                const float *ds, int lds, const int *pos) {
    // forward: s_ij += G[i, c(j−i)], G = Q aKᵀ / sqrt(hs)
    shaw_state *st = pe->state;
    int nrel = st->nrel, hs = st->hs;
    const float *aK = params + pe->off[0] + (size_t)layer * nrel * hs;
    float *dG = st->work + (size_t)h * st->chunk * nrel;
    memset(dG, 0, sizeof(float) * (size_t)nq * nrel);
    for (int r = 0; r < nq; r++) {
        const float *row = ds + (size_t)r * lds;
        float *g = dG + (size_t)r * nrel;
        rel_scatter_add(g, row, i0 + r, st->k, nk, pos);
    }
    float sc = 1.0f / sqrtf((float)hs);
    gemm_sgemm(0, 0, nq, hs, nrel, sc, dG, nrel, aK, hs, 1.0f, dq, ld);
    gemm_sgemm(1, 0, nrel, hs, nq, sc, dG, nrel, q, ld, 1.0f,
                st->dK + (size_t)h * nrel * hs, hs);
}

// A[r, c] = Σ_{j: c(j−i) = c} p_ij — the attention mass at each clipped distance
static float *shaw_bucket_weights(shaw_state *st, int h, const float *p, int ldp, int i0, int nq, int nk,
                                  const int *pos) {
    float *A = st->work + (size_t)h * st->chunk * st->nrel;
    memset(A, 0, sizeof(float) * (size_t)nq * st->nrel);
    for (int r = 0; r < nq; r++) {
        const float *row = p + (size_t)r * ldp;
        float *a = A + (size_t)r * st->nrel;
        rel_scatter_add(a, row, i0 + r, st->k, nk, pos);
    }
    return A;
}

static void shaw_value_forward(pe_t *pe, const float *params, int layer, int h, int b, const float *p, int ldp, int i0,
                               int nq, int nk, float *y, int ldy, const int *pos) {
    shaw_state *st = pe->state;
    int nrel = st->nrel, hs = st->hs;
    const float *aV = params + pe->off[1] + (size_t)layer * nrel * hs;
    float *A = shaw_bucket_weights(st, h, p, ldp, i0, nq, nk, pos);
    gemm_sgemm(0, 0, nq, hs, nrel, 1.0f, A, nrel, aV, hs, 1.0f, y, ldy);
}

static void shaw_value_backward(pe_t *pe, const float *params, float *grads, int layer, int h, int b, const float *p,
                                int ldp, int i0, int nq, int nk, const float *dy, int ldy, float *dp, int lddp, const int *pos) {
    // forward: y_i += Σ_c A[i, c] aV[c]
    shaw_state *st = pe->state;
    int nrel = st->nrel, hs = st->hs;
    const float *aV = params + pe->off[1] + (size_t)layer * nrel * hs;
    float *A = shaw_bucket_weights(st, h, p, ldp, i0, nq, nk, pos);
    gemm_sgemm(1, 0, nrel, hs, nq, 1.0f, A, nrel, dy, ldy, 1.0f,
                st->dV + (size_t)h * nrel * hs, hs);
    // dp_ij += dy_i · aV[c(j−i)]: dA = dy aVᵀ (nq, nrel), then gathered
    gemm_sgemm(0, 1, nq, nrel, hs, 1.0f, dy, ldy, aV, hs, 0.0f, A, nrel);
    for (int r = 0; r < nq; r++) {
        float *row = dp + (size_t)r * lddp;
        const float *a = A + (size_t)r * nrel;
        rel_gather_add(row, a, i0 + r, st->k, nk, pos);
    }
}

static void shaw_layer_end(pe_t *pe, const float *params, float *grads, int layer, const pe_batch *bt) {
    shaw_state *st = pe->state;
    size_t per = (size_t)st->nrel * st->hs;
    float *dK = grads + pe->off[0] + (size_t)layer * per, *dV = grads + pe->off[1] + (size_t)layer * per;
    for (int h = 0; h < st->NH; h++)
        for (size_t i = 0; i < per; i++) {
            dK[i] += st->dK[h * per + i];
            dV[i] += st->dV[h * per + i];
        }
    memset(st->dK, 0, sizeof(float) * per * st->NH);
    memset(st->dV, 0, sizeof(float) * per * st->NH);
}

const pe_ops pe_shaw_ops = {
    .name = "shaw",
    .summary = "learned key and value vectors per clipped distance (Shaw et al. 2018)",
    .options = shaw_options,
    .init = shaw_init,
    .free = shaw_free,
    .score_forward = shaw_score_forward,
    .score_backward = shaw_score_backward,
    .value_forward = shaw_value_forward,
    .value_backward = shaw_value_backward,
    .layer_begin = shaw_layer_begin,
    .layer_end = shaw_layer_end,
    .reads_positions = 1,
};
