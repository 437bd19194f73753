// cope.c — CoPE, contextual position encoding (Golovneva et al. 2024,
// "Contextual Position Encoding: Learning to Count What's Important",
// section 3, eqs. 3–5). Per head, with gates from the unscaled q·k:
//   g_ij = σ(q_i·k_j),   p_ij = Σ_{t=j..i} g_it   (a soft count of the keys
//   between j and i), clipped at P = --cope-max-pos,
//   e[p] = (p − ⌊p⌋)·e[⌈p⌉] + (1 − p + ⌊p⌋)·e[⌊p⌋]   (interpolated),
//   s_ij += q_i·e[p_ij] / sqrt(hs),
// e ∈ R^((P+1)×hs) per layer, shared by the heads, init N(0, 0.02²). As in
// the paper, z_i[m] = q_i·e[m] is computed for the P + 1 integers and
// interpolated. Causal only (the count runs from j up to the query); pelab's
// causal data is one stream without segments, so every earlier key counts.
//
// Backward (per row i, keys j ≤ i): dz_i at ⌊p⌋ and ⌈p⌉ from ds_ij, dp_ij =
// ds_ij·(z_i[⌈p⌉] − z_i[⌊p⌋])/sqrt(hs) (0 where clipped), then through the
// cumulative sum: dg_it = Σ_{j ≤ t} dp_ij, and dg·g(1 − g) to q·k.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../gemm.h"
#include "pe.h"

enum { COPE_MAX_POS };

static const pe_option cope_options[] = {
    [COPE_MAX_POS] = {.name = "cope-max-pos", .type = PE_OPT_INT, .lo = 1, .hi = 1 << 16, .def = 64,
                      .help = "CoPE largest position P (counts are clipped there)"},
    {0},
};

typedef struct {
    int T, chunk, H;
    size_t per_head;  // floats of one head's scratch
    float *work;      // per head: G, p (chunk × T each), z, dz (chunk × (P+1) each), dE ((P+1) × hs)
} cope_state;

static int cope_P(const pe_t *pe) { return (int)pe->opt[COPE_MAX_POS]; }
static int cope_hs(const pe_t *pe) { return pe->cfg->d_model / pe->cfg->heads; }

static void cope_init(pe_t *pe, param_table *tab) {
    size_t rows = (size_t)cope_P(pe) + 1;
    pe->tensor[0] = param_add(tab, "pe_cope_e", size_mul((size_t)pe->cfg->layers * rows, (size_t)cope_hs(pe), "CoPE table"),
                              1, INIT_NORMAL, 0.02f);
    pe->state = xcalloc(1, sizeof(cope_state));
}

static void cope_free(pe_t *pe) {
    cope_state *st = pe->state;
    if (st) free(st->work);
    free(st);
    pe->state = NULL;
}

static size_t cope_per_head(const pe_t *pe, int T, int chunk) {
    size_t P1 = (size_t)cope_P(pe) + 1;
    return 2 * (size_t)chunk * T + 2 * (size_t)chunk * P1 + P1 * cope_hs(pe);
}

static size_t cope_table_floats(const pe_t *pe, int T, int chunk) { return pe->cfg->heads * cope_per_head(pe, T, chunk); }

static void cope_layer_begin(pe_t *pe, const float *params, int layer, const pe_batch *bt) {
    int T = bt->span;
    cope_state *st = pe->state;
    if (st->work && st->T == T && st->chunk == bt->chunk) return;
    free(st->work);
    st->per_head = cope_per_head(pe, T, bt->chunk);
    st->work = xcalloc(size_mul(st->per_head, (size_t)pe->cfg->heads, "CoPE scratch"), sizeof(float));
    st->T = T, st->chunk = bt->chunk, st->H = pe->cfg->heads;
}

typedef struct {
    float *G, *p, *z, *dz, *dE;
} cope_bufs;

static cope_bufs cope_head(const pe_t *pe, int h) {
    const cope_state *st = pe->state;
    size_t P1 = (size_t)cope_P(pe) + 1, CT = (size_t)st->chunk * st->T;
    float *w = st->work + (size_t)h * st->per_head;
    return (cope_bufs){w, w + CT, w + 2 * CT, w + 2 * CT + (size_t)st->chunk * P1,
                       w + 2 * CT + 2 * (size_t)st->chunk * P1};
}

// G = q·kᵀ (unscaled), gates into G, positions into p, z = q·Eᵀ.
static void cope_positions(const pe_t *pe, const float *params, int layer, const float *q, const float *k, int ld,
                           int i0, int nq, int nk, cope_bufs *b) {
    int T = ((const cope_state *)pe->state)->T, P = cope_P(pe), hs = cope_hs(pe);
    const float *E = params + pe->off[0] + (size_t)layer * (P + 1) * hs;
    gemm_sgemm(0, 1, nq, nk, hs, 1.0f, q, ld, k, ld, 0.0f, b->G, T);
    gemm_sgemm(0, 1, nq, P + 1, hs, 1.0f, q, ld, E, hs, 0.0f, b->z, P + 1);
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        float *g = b->G + (size_t)r * T, *p = b->p + (size_t)r * T, cum = 0.0f;
        for (int j = (i < nk - 1 ? i : nk - 1); j >= 0; j--) {
            g[j] = 1.0f / (1.0f + expf(-g[j]));
            cum += g[j];
            p[j] = cum;
        }
    }
}

static void cope_score_forward(pe_t *pe, const float *params, int layer, int h, int b, const float *q, const float *k,
                               int ld, int i0, int nq, int nk, float *s, int lds, const int *pos) {
    cope_bufs w = cope_head(pe, h);
    int T = ((cope_state *)pe->state)->T, P = cope_P(pe);
    float scale = 1.0f / sqrtf((float)cope_hs(pe));
    cope_positions(pe, params, layer, q, k, ld, i0, nq, nk, &w);
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        const float *p = w.p + (size_t)r * T, *z = w.z + (size_t)r * (P + 1);
        float *row = s + (size_t)r * lds;
        for (int j = 0; j <= i && j < nk; j++) {
            float pc = p[j] < P ? p[j] : (float)P, f = floorf(pc), fr = pc - f;
            int lo = (int)f, hi = lo < P ? lo + 1 : P;
            row[j] += (z[lo] * (1.0f - fr) + z[hi] * fr) * scale;
        }
    }
}

static void cope_score_backward(pe_t *pe, const float *params, float *grads, int layer, int h, int b, const float *q,
                                const float *k, int ld, float *dq, float *dk, int i0, int nq, int nk,
                                const float *ds, int lds, const int *pos) {
    cope_bufs w = cope_head(pe, h);
    int T = ((cope_state *)pe->state)->T, P = cope_P(pe), hs = cope_hs(pe);
    float scale = 1.0f / sqrtf((float)hs);
    const float *E = params + pe->off[0] + (size_t)layer * (P + 1) * hs;
    cope_positions(pe, params, layer, q, k, ld, i0, nq, nk, &w);
    memset(w.dz, 0, sizeof(float) * (size_t)nq * (P + 1));
    for (int r = 0; r < nq; r++) {
        int i = i0 + r, last = i < nk - 1 ? i : nk - 1;
        const float *z = w.z + (size_t)r * (P + 1), *d = ds + (size_t)r * lds;
        float *g = w.G + (size_t)r * T, *p = w.p + (size_t)r * T, *dz = w.dz + (size_t)r * (P + 1);
        // p becomes dp, in place
        for (int j = 0; j <= last; j++) {
            float pc = p[j] < P ? p[j] : (float)P, f = floorf(pc), fr = pc - f;
            int lo = (int)f, hi = lo < P ? lo + 1 : P;
            dz[lo] += d[j] * (1.0f - fr) * scale;
            dz[hi] += d[j] * fr * scale;
            p[j] = p[j] < P ? d[j] * scale * (z[hi] - z[lo]) : 0.0f;
        }
        // p_ij = Σ_{t=j..i} g_it  →  dg_it = Σ_{j ≤ t} dp_ij; then through σ: G becomes d(q·k)
        float acc = 0.0f;
        for (int t = 0; t <= last; t++) {
            acc += p[t];
            g[t] = acc * g[t] * (1.0f - g[t]);
        }
        for (int t = last + 1; t < nk; t++) g[t] = 0.0f;
    }
    // d(q·k): dq += dG·k, dk += dGᵀ·q; dz: dq += dz·E, dE_h += dzᵀ·q
    gemm_sgemm(0, 0, nq, hs, nk, 1.0f, w.G, T, k, ld, 1.0f, dq, ld);
    gemm_sgemm(1, 0, nk, hs, nq, 1.0f, w.G, T, q, ld, 1.0f, dk, ld);
    gemm_sgemm(0, 0, nq, hs, P + 1, 1.0f, w.dz, P + 1, E, hs, 1.0f, dq, ld);
    gemm_sgemm(1, 0, P + 1, hs, nq, 1.0f, w.dz, P + 1, q, ld, 1.0f, w.dE, hs);
}

// The heads' shares of dE, added in head order.
static void cope_layer_end(pe_t *pe, const float *params, float *grads, int layer, const pe_batch *bt) {
    int P = cope_P(pe), hs = cope_hs(pe);
    size_t n = (size_t)(P + 1) * hs;
    float *dE = grads + pe->off[0] + (size_t)layer * n;
    for (int h = 0; h < pe->cfg->heads; h++) {
        float *mine = cope_head(pe, h).dE;
        for (size_t x = 0; x < n; x++) dE[x] += mine[x];
        memset(mine, 0, sizeof(float) * n);
    }
}

const pe_ops pe_cope_ops = {
    .name = "cope",
    .summary = "positions counted by learned gates sigma(q.k), interpolated embeddings (Golovneva et al. 2024)",
    .options = cope_options,
    .kinks = 1,
    .causal_only = 1,
    .init = cope_init,
    .free = cope_free,
    .layer_begin = cope_layer_begin,
    .table_floats = cope_table_floats,
    .layer_end = cope_layer_end,
    .score_forward = cope_score_forward,
    .score_backward = cope_score_backward,
};
