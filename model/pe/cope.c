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
// cumulative sum: dg_it = Σ_{j ≤ t} dp_ij, and dg·g(1 − g) to q·k. In
// training under the blocks kernel the forward's gates and z are kept (the
// size of attention's own (T, T) weights) and the backward reads them; the
// fused kernel, which keeps no (T, T) tables, computes them again.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../gemm.h"
#include "../ops.h"
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
    // Training under the blocks kernel: the forward's gates (T × T, the
    // attention weights' layout) and z rows (T × (P+1)) per layer, sequence and
    // head, written there by the forward's products and read by the backward
    // instead of computing them a second time (the same bits).
    int keep;         // the batch now running keeps them (pe_batch.keep_pairs)
    int kept_B, kept_T;
    float *kept;
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
    if (st) free(st->work), free(st->kept);
    free(st);
    pe->state = NULL;
}

static size_t cope_per_head(const pe_t *pe, int T, int chunk) {
    size_t P1 = (size_t)cope_P(pe) + 1;
    return 2 * (size_t)chunk * T + 2 * (size_t)chunk * P1 + P1 * cope_hs(pe);
}

static size_t cope_table_floats(const pe_t *pe, int T, int chunk) { return pe->cfg->heads * cope_per_head(pe, T, chunk); }

// One sequence and head's kept values: T rows of gates (T each), then T rows of z.
static size_t cope_kept_per_seq(const pe_t *pe, int T) { return (size_t)T * (T + cope_P(pe) + 1); }

static size_t cope_kept_floats(const pe_t *pe, int B, int T) {
    size_t seqs = size_mul((size_t)pe->cfg->layers * B, (size_t)pe->cfg->heads, "CoPE kept gates");
    return size_mul(seqs, cope_kept_per_seq(pe, T), "CoPE kept gates");
}

static void cope_layer_begin(pe_t *pe, const float *params, int layer, const pe_batch *bt) {
    int T = bt->span;
    cope_state *st = pe->state;
    st->keep = bt->keep_pairs;
    if (st->keep && (!st->kept || st->kept_B != bt->B || st->kept_T != T)) {
        free(st->kept);
        st->kept = xmalloc(size_mul(cope_kept_floats(pe, bt->B, T), sizeof(float), "CoPE kept gates"));
        st->kept_B = bt->B, st->kept_T = T;
    }
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

// Head h's buffers for the block of rows from i0 of sequence b: when the
// batch keeps them, the gates and z are the kept store's rows.
static cope_bufs cope_block(const pe_t *pe, int layer, int h, int b, int i0) {
    const cope_state *st = pe->state;
    cope_bufs w = cope_head(pe, h);
    if (st->keep) {
        int T = st->kept_T;
        float *seq = st->kept + (((size_t)layer * st->kept_B + b) * st->H + h) * cope_kept_per_seq(pe, T);
        w.G = seq + (size_t)i0 * T;
        w.z = seq + (size_t)T * T + (size_t)i0 * (cope_P(pe) + 1);
    }
    return w;
}

static inline int imin(int a, int b) { return a < b ? a : b; }

// Row p's running sum of the gates g from key `from` down to key `to`,
// continuing from cum; returns the sum reached.
static float count_down(const float *g, float *p, int from, int to, float cum) {
    for (int j = from; j >= to; j--) {
        cum += g[j];
        p[j] = cum;
    }
    return cum;
}

// The positions from the gates in G: p_ij = Σ_{t=j..i} g_it, summed from the
// query down (the order the forward pass adds them in, so the same bits when
// the backward pass counts kept gates again). A row's sum is one chain of
// dependent additions; four rows walk down together so that their chains
// overlap, each row adding in its own order (the same bits as one row at a
// time).
static void cope_counts(const pe_t *pe, int i0, int nq, int nk, cope_bufs *w) {
    int T = ((const cope_state *)pe->state)->T, r = 0;
    for (; r + 4 <= nq; r += 4) {
        const float *g0 = w->G + (size_t)r * T, *g1 = g0 + T, *g2 = g1 + T, *g3 = g2 + T;
        float *p0 = w->p + (size_t)r * T, *p1 = p0 + T, *p2 = p1 + T, *p3 = p2 + T;
        int last = imin(i0 + r, nk - 1);
        // the keys only the later rows see, then all four side by side
        float c0 = 0.0f, c1 = count_down(g1, p1, imin(i0 + r + 1, nk - 1), last + 1, 0.0f);
        float c2 = count_down(g2, p2, imin(i0 + r + 2, nk - 1), last + 1, 0.0f);
        float c3 = count_down(g3, p3, imin(i0 + r + 3, nk - 1), last + 1, 0.0f);
        for (int j = last; j >= 0; j--) {
            c0 += g0[j], c1 += g1[j], c2 += g2[j], c3 += g3[j];
            p0[j] = c0, p1[j] = c1, p2[j] = c2, p3[j] = c3;
        }
    }
    for (; r < nq; r++)
        count_down(w->G + (size_t)r * T, w->p + (size_t)r * T, imin(i0 + r, nk - 1), 0, 0.0f);
}

// The gates σ(q·k) into G from the unscaled q·kᵀ in qk (nq, ldqk; qk may be
// G itself), positions into p, z = q·Eᵀ.
static void cope_positions_from(const pe_t *pe, const float *params, int layer, const float *q, int ld, int i0, int nq,
                                int nk, const float *qk, int ldqk, cope_bufs *b) {
    int T = ((const cope_state *)pe->state)->T, P = cope_P(pe), hs = cope_hs(pe);
    const float *E = params + pe->off[0] + (size_t)layer * (P + 1) * hs;
    gemm_sgemm(0, 1, nq, P + 1, hs, 1.0f, q, ld, E, hs, 0.0f, b->z, P + 1);
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        float *g = b->G + (size_t)r * T;
        int n = (i < nk - 1 ? i : nk - 1) + 1;
        ops_one_plus_exp_neg(g, qk + (size_t)r * ldqk, (size_t)n);
#pragma omp simd
        for (int j = 0; j < n; j++) g[j] = 1.0f / g[j];
    }
    cope_counts(pe, i0, nq, nk, b);
}

// The same with G = q·kᵀ (unscaled) computed here first.
static void cope_positions(const pe_t *pe, const float *params, int layer, const float *q, const float *k, int ld,
                           int i0, int nq, int nk, cope_bufs *b) {
    int T = ((const cope_state *)pe->state)->T;
    gemm_sgemm(0, 1, nq, nk, cope_hs(pe), 1.0f, q, ld, k, ld, 0.0f, b->G, T);
    cope_positions_from(pe, params, layer, q, ld, i0, nq, nk, b->G, T, b);
}

// A count p clipped at P: its neighbours ⌊p⌋ = *lo and ⌈p⌉ = *hi (both P
// where clipped) and the weight of *hi. p ≥ 0 (a sum of gates), so ⌊p⌋ is
// the conversion's truncation: the value floorf gives, in a form gcc
// vectorises (it leaves floorf scalar while floating-point traps are kept).
static inline float cope_split(float p, int P, int *lo, int *hi) {
    float pc = p < P ? p : (float)P;
    *lo = (int)pc, *hi = *lo < P ? *lo + 1 : P;
    return pc - (float)*lo;
}

// s += q_i·e[p_ij] / sqrt(hs), interpolated, for the keys j ≤ i.
static void cope_add_term(const pe_t *pe, const cope_bufs *w, int i0, int nq, int nk, float *s, int lds, float scale) {
    int T = ((const cope_state *)pe->state)->T, P = cope_P(pe);
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        const float *p = w->p + (size_t)r * T, *z = w->z + (size_t)r * (P + 1);
        float *row = s + (size_t)r * lds;
        int n = imin(i + 1, nk);
#pragma omp simd
        for (int j = 0; j < n; j++) {
            int lo, hi;
            float fr = cope_split(p[j], P, &lo, &hi);
            row[j] += (z[lo] * (1.0f - fr) + z[hi] * fr) * scale;
        }
    }
}

static void cope_score_forward(pe_t *pe, const float *params, int layer, int h, int b, const float *q, const float *k,
                               int ld, int i0, int nq, int nk, float *s, int lds, const int *pos) {
    cope_bufs w = cope_block(pe, layer, h, b, i0);
    cope_positions(pe, params, layer, q, k, ld, i0, nq, nk, &w);
    cope_add_term(pe, &w, i0, nq, nk, s, lds, 1.0f / sqrtf((float)cope_hs(pe)));
}

// The blocks kernel's: the gates from attention's own q·kᵀ, which is then
// scaled (the same gates as a product of CoPE's own: the same call).
static void cope_score_forward_raw(pe_t *pe, const float *params, int layer, int h, int b, const float *q,
                                   const float *k, int ld, int i0, int nq, int nk, float *s, int lds, const int *pos,
                                   float scale) {
    cope_bufs w = cope_block(pe, layer, h, b, i0);
    cope_positions_from(pe, params, layer, q, ld, i0, nq, nk, s, lds, &w);
    for (int r = 0; r < nq; r++) {
        float *row = s + (size_t)r * lds;
#pragma omp simd
        for (int j = 0; j < nk; j++) row[j] *= scale;
    }
    cope_add_term(pe, &w, i0, nq, nk, s, lds, scale);
}

// One row's walk over its keys in the backward pass: dz at ⌊p⌋ and ⌈p⌉
// added to in memory as j rises (where clipped, ⌊p⌋ = ⌈p⌉ = P takes both
// terms, in that order), no branch on whether ⌊p⌋ changed (it does every key
// or two, unpredictably); dp summed in a register.
typedef struct {
    const float *z, *d, *p;
    float *g, *dz;
    int last;
    float acc;
} cope_grad_row;

static cope_grad_row cope_grad_begin(const cope_bufs *w, const float *ds, int lds, int r, int i0, int nk, int T, int P) {
    size_t at = (size_t)r;
    return (cope_grad_row){w->z + at * (P + 1), ds + at * lds, w->p + at * T, w->G + at * T,
                           w->dz + at * (P + 1), imin(i0 + r, nk - 1), 0.0f};
}

// (inlined whole, so that two rows' walks keep their state in registers)
static inline __attribute__((always_inline)) void cope_grad_step(cope_grad_row *w, int j, int P, float scale) {
    float pj = w->p[j], dj = w->d[j];
    int lo, hi;
    float fr = cope_split(pj, P, &lo, &hi);
    w->dz[lo] += dj * (1.0f - fr) * scale;
    w->dz[hi] += dj * fr * scale;
    float dp = pj < P ? dj * scale * (w->z[hi] - w->z[lo]) : 0.0f;
    w->acc += dp;
    float gj = w->g[j];
    w->g[j] = w->acc * gj * (1.0f - gj);
}

// The rest of a row's walk from key j, then the gradients of the keys it
// does not see zeroed.
static void cope_grad_finish(cope_grad_row w, int j, int nk, int P, float scale) {
    for (; j <= w.last; j++) cope_grad_step(&w, j, P, scale);
    for (int t = w.last + 1; t < nk; t++) w.g[t] = 0.0f;
}

static void cope_score_backward(pe_t *pe, const float *params, float *grads, int layer, int h, int b, const float *q,
                                const float *k, int ld, float *dq, float *dk, int i0, int nq, int nk,
                                const float *ds, int lds, const int *pos) {
    cope_bufs w = cope_block(pe, layer, h, b, i0);
    int T = ((cope_state *)pe->state)->T, P = cope_P(pe), hs = cope_hs(pe);
    float scale = 1.0f / sqrtf((float)hs);
    const float *E = params + pe->off[0] + (size_t)layer * (P + 1) * hs;
    if (((cope_state *)pe->state)->keep) cope_counts(pe, i0, nq, nk, &w);  // G becomes d(q·k) below: used once
    else cope_positions(pe, params, layer, q, k, ld, i0, nq, nk, &w);
    memset(w.dz, 0, sizeof(float) * (size_t)nq * (P + 1));
    // Per row: dz at ⌊p⌋ and ⌈p⌉, and dp; p_ij = Σ_{t=j..i} g_it, so dg_it =
    // Σ_{j ≤ t} dp_ij, summed as j rises; then through σ: G becomes d(q·k)
    // (cope_grad_step). Two rows advance side by side, each in its own order.
    for (int r = 0; r < nq; r += 2) {
        cope_grad_row a = cope_grad_begin(&w, ds, lds, r, i0, nk, T, P);
        int j = 0;
        if (r + 1 < nq) {
            cope_grad_row b = cope_grad_begin(&w, ds, lds, r + 1, i0, nk, T, P);
            for (; j <= a.last; j++) {
                cope_grad_step(&a, j, P, scale);
                cope_grad_step(&b, j, P, scale);
            }
            cope_grad_finish(b, j, nk, P, scale);
        }
        cope_grad_finish(a, j, nk, P, scale);
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
    .kept_floats = cope_kept_floats,
    .layer_end = cope_layer_end,
    .score_forward = cope_score_forward,
    .score_forward_raw = cope_score_forward_raw,
    .score_backward = cope_score_backward,
};
