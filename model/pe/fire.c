// fire.c — FIRE (Li et al. 2023, "Functional Interpolation for Relative
// Positions Improves Long Context Transformers", eq. 4 with the threshold of
// section 3.3): a learned function of the normalised distance,
//   b_h(i, j) = f_θ(ψ(i − j) / ψ(max(L, i)))_h,   ψ(x) = log(c·x + 1),
// f_θ an MLP 1 → 32 (SiLU) → H per layer (mlp.c), c > 0 and the threshold
// L > 0 learned per layer as c = exp(γ_c), L = exp(γ_L), initial c = 0.1 and
// L = ctx/4. Dividing by ψ(i) keeps the input in [0, 1] at any length (the
// "progressive interpolation"); the threshold keeps short prefixes from
// being stretched over the whole range. The bias depends on i, not only on
// i − j, and i − j ≥ 0 only: causal only. Under --rand-pos, i and j are the
// drawn positions, so each sequence of the batch has its own table.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"
#include "pe.h"

enum { SLOT_C = 4, SLOT_L = 5 };  // the MLP takes slots 0..3

typedef struct {
    int nseq, T;  // tables for nseq sequences of T positions (one without --rand-pos)
    float *bias;  // (nseq, H, T, T): b_h(i, j), 0 above the diagonal
    float *grad;  // (nseq, H, T, T): ∂loss/∂b_h(i, j)
    // In training, what each pair's MLP pass leaves for the backward pass (its
    // activations and SiLU′: exponentials and divisions, the bulk of FIRE's
    // cost), per layer, when it fits in pe_fire_keep_bytes: (layers, nseq,
    // T(T+1)/2 pairs, kept floats); kept[l] says layer l's is current. The
    // bits are the same with or without.
    float *keep;
    size_t keep_floats;
    int *kept;
    double *psi;  // ψ(n) = log(c·n + 1) for the distances n = 0..npsi−1 of the layer at hand
    int npsi;
} fire_state;

size_t pe_fire_keep_bytes = (size_t)256 << 20;

static pe_mlp fire_shape(const pe_t *pe) { return (pe_mlp){.slot = 0, .depth = 1, .out = pe->cfg->heads}; }

static void fire_init(pe_t *pe, param_table *tab) {
    pe_mlp m = fire_shape(pe);
    int L = pe->cfg->layers;
    pe_mlp_declare(&m, pe, tab, "pe_fire", L);
    pe->tensor[SLOT_C] = param_add(tab, "pe_fire_c", L, 0, INIT_CONST, logf(0.1f));
    float thr = pe->cfg->ctx / 4.0f;
    pe->tensor[SLOT_L] = param_add(tab, "pe_fire_l", L, 0, INIT_CONST, logf(thr > 1.0f ? thr : 1.0f));
    pe->state = xcalloc(1, sizeof(fire_state));
}

static void fire_free(pe_t *pe) {
    fire_state *st = pe->state;
    if (st) free(st->bias), free(st->grad), free(st->keep), free(st->kept), free(st->psi);
    free(st);
    pe->state = NULL;
}

static void fire_size(fire_state *st, int nseq, int H, int T) {
    if (st->bias && st->T == T && st->nseq == nseq) return;
    size_t n = size_mul((size_t)nseq * H, size_mul((size_t)T, (size_t)T, "FIRE table"), "FIRE table");
    free(st->bias), free(st->grad);
    st->bias = xcalloc(n, sizeof(float));
    st->grad = xcalloc(n, sizeof(float));
    st->T = T, st->nseq = nseq;
}

// Floats kept per pair, and where row i of sequence s, layer l begins (its
// i + 1 pairs' in the MLP's own layout).
static size_t fire_kept_per_pair(const pe_t *pe) {
    pe_mlp m = fire_shape(pe);
    return pe_mlp_kept_floats(&m);
}

static size_t fire_keep_at(const pe_t *pe, const fire_state *st, int layer, int s, int i) {
    size_t pairs = (size_t)st->T * (st->T + 1) / 2;
    return (((size_t)layer * st->nseq + s) * pairs + (size_t)i * (i + 1) / 2) * fire_kept_per_pair(pe);
}

// The kept passes for a training step, when they fit: 1 when layer's are kept.
static int fire_keep_ready(pe_t *pe, fire_state *st, int layer, const pe_batch *bt) {
    if (!bt->training) return 0;
    size_t n = (size_t)pe->cfg->layers * st->nseq * ((size_t)st->T * (st->T + 1) / 2) * fire_kept_per_pair(pe);
    if (n * sizeof(float) > pe_fire_keep_bytes) return 0;
    if (st->keep_floats != n) {
        free(st->keep), free(st->kept);
        st->keep = xmalloc(sizeof(float) * n);
        st->kept = xcalloc((size_t)pe->cfg->layers, sizeof(int));
        st->keep_floats = n;
    }
    st->kept[layer] = 1;
    return 1;
}

static size_t fire_table_floats(const pe_t *pe, int T, int chunk) {
    size_t keep = (size_t)pe->cfg->layers * ((size_t)T * (T + 1) / 2) * fire_kept_per_pair(pe);
    return 2 * (size_t)pe->cfg->heads * T * T + (keep * sizeof(float) <= pe_fire_keep_bytes ? keep : 0);
}

// c and L of a layer.
static void fire_cl(const pe_t *pe, const float *params, int layer, double *c, double *L) {
    *c = exp(params[pe->off[SLOT_C] + layer]);
    *L = exp(params[pe->off[SLOT_L] + layer]);
}

// ψ of every distance 0..n−1 under the layer's c: one log per distance
// instead of one per pair (the same expression, so the same bits).
static const double *fire_psi(fire_state *st, double c, int n) {
    if (st->npsi < n) {
        free(st->psi);
        st->psi = xmalloc(sizeof(double) * (size_t)n);
        st->npsi = n;
    }
    for (int d = 0; d < n; d++) st->psi[d] = log(c * d + 1.0);
    return st->psi;
}

// Position i of sequence s: i itself, or under --rand-pos the drawn one.
static int fire_pos(const pe_batch *bt, int s, int i) { return bt->pos ? bt->pos[(size_t)s * bt->T + i] : i; }

// The tables: one (without --rand-pos; T is then the length) or one per
// sequence of the batch (its drawn positions, bt->T of them).
static void fire_layer_begin(pe_t *pe, const float *params, int layer, const pe_batch *bt) {
    fire_state *st = pe->state;
    int H = pe->cfg->heads, nseq = bt->pos ? bt->B : 1, T = bt->pos ? bt->T : bt->span;
    fire_size(st, nseq, H, T);
    pe_mlp m = fire_shape(pe);
    double c, L;
    fire_cl(pe, params, layer, &c, &L);
    size_t TT = (size_t)T * T;
    int keep = fire_keep_ready(pe, st, layer, bt);
    const double *psi = fire_psi(st, c, bt->span);
    // Every pair on its own: the rows can go to any thread, the bits stay.
#pragma omp parallel for schedule(dynamic, 8) if (parallel : par_worth(PAR_NS_FIRE * nseq * T * T * pe_mlp_floats(&m)))
    for (int row = 0; row < nseq * T; row++) {
        int s = row / T, i = row % T, pi = fire_pos(bt, s, i);
        float *b = st->bias + (size_t)s * H * TT + (size_t)i * T, *x = xmalloc(sizeof(float) * (i + 1)),
              *out = xmalloc(sizeof(float) * (i + 1) * H);
        double den = log(c * (L > pi ? L : pi) + 1.0);
        float *kept = keep ? st->keep + fire_keep_at(pe, st, layer, s, i) : NULL;
        for (int j = 0; j <= i; j++) x[j] = (float)(psi[pi - fire_pos(bt, s, j)] / den);
        pe_mlp_forward_many(&m, pe, params, layer, i + 1, x, out, kept);
        for (int j = 0; j <= i; j++)
            for (int h = 0; h < H; h++) b[h * TT + j] = out[(size_t)j * H + h];
        free(x), free(out);
    }
}

// Head h's table for sequence b (its own under --rand-pos, when pos is given;
// else the one table).
static size_t fire_table_at(const pe_t *pe, int h, int b, int i0, const int *pos) {
    const fire_state *st = pe->state;
    size_t s = pos ? (size_t)b : 0;
    return ((s * pe->cfg->heads + h) * st->T + i0) * st->T;
}

static void fire_score_forward(pe_t *pe, const float *params, int layer, int h, int b, const float *q, const float *k,
                               int ld, int i0, int nq, int nk, float *s, int lds, const int *pos) {
    const fire_state *st = pe->state;
    const float *tab = st->bias + fire_table_at(pe, h, b, i0, pos);
    for (int r = 0; r < nq; r++)
#pragma omp simd
        for (int j = 0; j < nk; j++) s[(size_t)r * lds + j] += tab[(size_t)r * st->T + j];
}

static void fire_score_backward(pe_t *pe, const float *params, float *grads, int layer, int h, int b, const float *q,
                                const float *k, int ld, float *dq, float *dk, int i0, int nq, int nk,
                                const float *ds, int lds, const int *pos) {
    fire_state *st = pe->state;
    float *g = st->grad + fire_table_at(pe, h, b, i0, pos);
    for (int r = 0; r < nq; r++)
#pragma omp simd
        for (int j = 0; j < nk; j++) g[(size_t)r * st->T + j] += ds[(size_t)r * lds + j];
}

// Through the MLP, then x = A/D, A = ψ(n), D = ψ(M), n = p_i − p_j, M = max(L, p_i):
//   ∂x/∂c = (n/(cn + 1))/D − A·(M/(cM + 1))/D²,  ∂x/∂L = −A·(c/(cL + 1))/D² when L > p_i;
// c = exp(γ_c) and L = exp(γ_L) multiply by c and L.
// The rows (of every sequence, one after the other) go in fixed blocks of
// FIRE_ROWS, each summing its own share of the gradients; the shares are
// added in block order, so the thread count does not change the bits.
enum { FIRE_ROWS = 16 };

static void fire_layer_end(pe_t *pe, const float *params, float *grads, int layer, const pe_batch *bt) {
    fire_state *st = pe->state;
    int H = pe->cfg->heads, nseq = st->nseq, nrows = nseq * st->T, nblk = (nrows + FIRE_ROWS - 1) / FIRE_ROWS;
    int T = st->T;
    pe_mlp m = fire_shape(pe);
    double c, L;
    fire_cl(pe, params, layer, &c, &L);
    size_t TT = (size_t)T * T, nf = pe_mlp_floats(&m);
    float *share = xcalloc((size_t)nblk * nf, sizeof(float));
    double *gcl = xcalloc(2 * (size_t)nblk, sizeof(double));
    int keep = st->kept && st->kept[layer];  // this step's forward pass kept its exponentials
    if (keep) st->kept[layer] = 0;
    const double *psi = fire_psi(st, c, bt->span);
#pragma omp parallel for schedule(dynamic, 1) if (parallel : par_worth(PAR_NS_FIRE_BACK * nseq * T * T * nf))
    for (int blk = 0; blk < nblk; blk++) {
        float *local = share + (size_t)blk * nf;
        // A row's inputs, output gradients, which of them are not all zero
        // (the others add nothing and are skipped) and ∂/∂x.
        float *x = xmalloc(sizeof(float) * T), *dout = xmalloc(sizeof(float) * T * H), *dx = xmalloc(sizeof(float) * T);
        unsigned char *on = xmalloc((size_t)T);
        double gc = 0, gl = 0;
        int hi = (blk + 1) * FIRE_ROWS < nrows ? (blk + 1) * FIRE_ROWS : nrows;
        for (int row = blk * FIRE_ROWS; row < hi; row++) {
            int s = row / T, i = row % T, pi = fire_pos(bt, s, i);
            const float *g = st->grad + (size_t)s * H * TT + (size_t)i * T;
            double M = L > pi ? L : pi, D = log(c * M + 1.0);
            for (int j = 0; j <= i; j++) {
                float *o = dout + (size_t)j * H;
                int any = 0;
                for (int h = 0; h < H; h++) o[h] = g[h * TT + j], any |= o[h] != 0.0f;
                on[j] = (unsigned char)any;
                x[j] = (float)(psi[pi - fire_pos(bt, s, j)] / D);
            }
            if (keep)
                pe_mlp_backward_kept(&m, pe, params, layer, i + 1, x, dout, on,
                                     st->keep + fire_keep_at(pe, st, layer, s, i), local, dx);
            else
                for (int j = 0; j <= i; j++)
                    if (on[j]) dx[j] = pe_mlp_backward_local(&m, pe, params, layer, x[j], dout + (size_t)j * H, local);
            for (int j = 0; j <= i; j++) {
                if (!on[j]) continue;
                int nj = pi - fire_pos(bt, s, j);
                double n = nj, A = psi[nj];
                gc += dx[j] * ((n / (c * n + 1.0)) / D - A * (M / (c * M + 1.0)) / (D * D));
                if (L > pi) gl += dx[j] * (-A * (c / (c * L + 1.0)) / (D * D));
            }
        }
        gcl[2 * blk] = gc, gcl[2 * blk + 1] = gl;
        free(x), free(dout), free(dx), free(on);
    }
    double gc = 0, gl = 0;
    for (int blk = 0; blk < nblk; blk++) {
        pe_mlp_add(&m, pe, grads, layer, share + (size_t)blk * nf);
        gc += gcl[2 * blk], gl += gcl[2 * blk + 1];
    }
    free(share), free(gcl);
    grads[pe->off[SLOT_C] + layer] += (float)(gc * c);
    grads[pe->off[SLOT_L] + layer] += (float)(gl * L);
    memset(st->grad, 0, sizeof(float) * nseq * H * TT);
}

const pe_ops pe_fire_ops = {
    .name = "fire",
    .summary = "a learned MLP of the log distance over the log query position, per layer (Li et al. 2023)",
    .causal_only = 1,
    .reads_positions = 1,
    .query_position = 1,
    .init = fire_init,
    .free = fire_free,
    .layer_begin = fire_layer_begin,
    .table_floats = fire_table_floats,
    .layer_end = fire_layer_end,
    .score_forward = fire_score_forward,
    .score_backward = fire_score_backward,
};
