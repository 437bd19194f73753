// xl.c — Transformer-XL's relative attention (Dai et al. 2019, eq. 3 with
// the scaling of the paper's code):
//   s_ij = [(q_i + u_h)·k_j + (q_i + v_h)·(W_R r_(i−j))_h] / sqrt(hs)
// r_δ is the d-wide sinusoid of the distance δ (clipped to ±k when --rel-clip
// is given); W_R ∈ R^(d×d), u, v ∈ R^(H×hs) per layer, u and v zero init.
//
// The position term is computed the fast way: G = (Q + v)·R_hᵀ over every
// distance a chunk needs, then gathered at δ = i − j. tests/ checks it
// against the direct O(T²·d) formula.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../gemm.h"
#include "../ops.h"
#include "pe.h"

typedef struct {
    int T, L, NH, chunk;
    float *r;      // (2T − 1, C): r_δ at row δ + T − 1
    float *R;      // (L, 2T − 1, C): W_R r_δ per layer
    float *dR;     // (2T − 1, C): gradient of the current layer's R
    float *work;   // per head: (CHUNK, hs) + (CHUNK, CHUNK + T − 1)
    size_t work_per_head;
} xl_state;

static const pe_option xl_options[] = {
    {.name = "rel-clip", .type = PE_OPT_INT, .lo = 1, .hi = 1 << 16, .def = NAN, .def_text = "no clipping",
     .help = "relative clipping distance k"},
    {0},
};

static int xl_check(const pe_t *pe, char *err, size_t errlen) {
    if (pe->cfg->d_model % 2 == 0) return 1;
    snprintf(err, errlen, "xl needs an even --d-model, got %d", pe->cfg->d_model);
    return 0;
}

static void xl_init(pe_t *pe, param_table *tab) {
    const model_config *c = pe->cfg;
    size_t L = c->layers, C = c->d_model;
    pe->tensor[0] = param_add(tab, "pe_xl_wr", size_mul(L * C, C, "xl W_R"), 1, INIT_NORMAL, 0.02f);
    pe->tensor[1] = param_add(tab, "pe_xl_u", L * C, 0, INIT_ZERO, 0);
    pe->tensor[2] = param_add(tab, "pe_xl_v", L * C, 0, INIT_ZERO, 0);
    pe->state = calloc(1, sizeof(xl_state));
    if (!pe->state) die_runtime("out of memory for Transformer-XL state");
}

static void xl_free(pe_t *pe) {
    xl_state *st = pe->state;
    if (st) free(st->r), free(st->R), free(st->dR), free(st->work);
    free(st);
    pe->state = NULL;
}

// Floats of one head's scratch: (chunk, hs) for q + v, then G, (chunk, chunk + T − 1).
static size_t xl_work_per_head(int chunk, int hs, int T) {
    return (size_t)chunk * hs + (size_t)chunk * ((size_t)chunk + T - 1);
}

// Sizes the tables for T and fills r_δ, interleaved like the sinusoidal encoding's
// table: r[2i] = sin(δ/10000^(2i/d)), r[2i+1] = cos(δ/10000^(2i/d)).
static void xl_sizes(pe_t *pe, int T, int chunk) {
    xl_state *st = pe->state;
    const model_config *c = pe->cfg;
    if (st->r && st->T == T && st->chunk == chunk) return;
    int C = c->d_model, hs = C / c->heads, n = 2 * T - 1;
    int clip = isnan(pe->opt[0]) ? 0 : (int)pe->opt[0];
    free(st->r), free(st->R), free(st->dR), free(st->work);
    st->r = xmalloc(sizeof(float) * size_mul((size_t)n, (size_t)C, "xl table"));
    st->R = xmalloc(sizeof(float) * size_mul((size_t)c->layers * n, (size_t)C, "xl table"));
    st->dR = xcalloc((size_t)n * C, sizeof(float));
    st->chunk = chunk;
    st->work_per_head = xl_work_per_head(st->chunk, hs, T);
    st->work = xmalloc(sizeof(float) * size_mul(st->work_per_head, (size_t)c->heads, "xl scratch"));
    for (int d = -(T - 1); d <= T - 1; d++) {
        int dc = d;
        if (clip > 0) dc = dc > clip ? clip : dc < -clip ? -clip : dc;
        float *row = st->r + (size_t)(d + T - 1) * C;
        for (int i = 0; i < C / 2; i++) {
            double a = dc / pow(10000.0, 2.0 * i / C);
            row[2 * i] = (float)sin(a);
            row[2 * i + 1] = (float)cos(a);
        }
    }
    st->T = T;
}

static size_t xl_table_floats(const pe_t *pe, int T, int chunk) {
    const model_config *c = pe->cfg;
    size_t n = 2 * (size_t)T - 1, hs = c->d_model / c->heads;
    // r, R (one per layer), dR, and each head's scratch
    return (c->layers + 2) * n * c->d_model + c->heads * xl_work_per_head(chunk, (int)hs, T);
}

static void xl_layer_begin(pe_t *pe, const float *params, int layer, const pe_batch *bt) {
    int T = bt->span;
    // R = r · W_Rᵀ, i.e. R_δ = W_R r_δ
    xl_sizes(pe, T, bt->chunk);
    xl_state *st = pe->state;
    int C = pe->cfg->d_model, n = 2 * T - 1;
    matmul_forward(st->R + (size_t)layer * n * C, st->r, params + pe->off[0] + (size_t)layer * C * C, NULL, n, C, C);
}

static void xl_layer_end(pe_t *pe, const float *params, float *grads, int layer, const pe_batch *bt) {
    int T = bt->span;
    // forward: R = r · W_Rᵀ  →  dW_R += dRᵀ · r
    xl_state *st = pe->state;
    int C = pe->cfg->d_model, n = 2 * T - 1;
    matmul_backward(NULL, grads + pe->off[0] + (size_t)layer * C * C, NULL, st->dR, st->r, NULL, n, C, C);
    memset(st->dR, 0, sizeof(float) * (size_t)n * C);
}

static float dot(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int e = 0; e < n; e++) s += a[e] * b[e];
    return s;
}

// Positions 0..n−1 of a sequence are consecutive (also when there are none,
// pos NULL): then pos_i − pos_j = i − j and the band of the fast way applies.
static int consecutive(const int *pos, int n) {
    for (int t = 1; pos && t < n; t++)
        if (pos[t] != pos[t - 1] + 1) return 0;
    return 1;
}

// Head h's columns of R_δ (layer) and of its gradient, δ = pos[i] − pos[j].
static const float *xl_rel(const pe_t *pe, int layer, int h, const int *pos, int i, int j) {
    const xl_state *st = pe->state;
    int C = pe->cfg->d_model, hs = C / pe->cfg->heads;
    return st->R + ((size_t)layer * (2 * st->T - 1) + (pos[i] - pos[j] + st->T - 1)) * C + h * hs;
}

static float *xl_rel_grad(const pe_t *pe, int h, const int *pos, int i, int j) {
    const xl_state *st = pe->state;
    int C = pe->cfg->d_model, hs = C / pe->cfg->heads;
    return st->dR + (size_t)(pos[i] - pos[j] + st->T - 1) * C + h * hs;
}

// u_h and v_h of one layer and head, from a params or a grads buffer.
static float *xl_head_vec(const pe_t *pe, const float *base, int which, int layer, int h) {
    int C = pe->cfg->d_model, hs = C / pe->cfg->heads;
    return (float *)base + pe->off[which] + (size_t)layer * C + h * hs;
}

static void xl_score_forward(pe_t *pe, const float *params, int layer, int h, int b, const float *q, const float *k,
                             int ld, int i0, int nq, int nk, float *s, int lds, const int *pos) {
    xl_state *st = pe->state;
    const model_config *c = pe->cfg;
    int C = c->d_model, hs = C / c->heads, T = st->T, n = 2 * T - 1;
    float scale = 1.0f / sqrtf((float)hs);
    const float *u = xl_head_vec(pe, params, 1, layer, h), *v = xl_head_vec(pe, params, 2, layer, h);
    float *qv = st->work + h * st->work_per_head, *G = qv + (size_t)st->chunk * hs;
    // u·k_j, the same for every row (kept in G's space until G is made)
    float *uk = G;
    for (int j = 0; j < nk; j++) {
        float dot = 0.0f;
        for (int e = 0; e < hs; e++) dot += u[e] * k[(size_t)j * ld + e];
        uk[j] = dot * scale;
    }
    // (elementwise adds and products, vectorised: the same operations, so the same bits)
    for (int r = 0; r < nq; r++) {
        float *row = s + (size_t)r * lds;
#pragma omp simd
        for (int j = 0; j < nk; j++) row[j] += uk[j];
    }
    for (int r = 0; r < nq; r++)
#pragma omp simd
        for (int e = 0; e < hs; e++) qv[(size_t)r * hs + e] = q[(size_t)r * ld + e] + v[e];
    if (!consecutive(pos, i0 + nq > nk ? i0 + nq : nk)) {  // drawn distances are not a band: the direct formula
        for (int r = 0; r < nq; r++) {
            float *row = s + (size_t)r * lds;
            for (int j = 0; j < nk; j++) row[j] += scale * dot(qv + (size_t)r * hs, xl_rel(pe, layer, h, pos, i0 + r, j), hs);
        }
        return;
    }
    // G[r, δ − δlo] = (q_i + v)·R_h[δ], δ from δlo = i0 − nk + 1 to i0 + nq − 1
    int dlo = i0 - nk + 1, nd = nq + nk - 1;
    const float *Rh = st->R + ((size_t)layer * n + (dlo + T - 1)) * C + h * hs;
    gemm_sgemm(0, 1, nq, nd, hs, scale, qv, hs, Rh, C, 0.0f, G, nd);
    for (int r = 0; r < nq; r++) {
        const float *g = G + (size_t)r * nd + r + nk - 1;  // g[−j] is δ = i0 + r − j
        float *row = s + (size_t)r * lds;
#pragma omp simd
        for (int j = 0; j < nk; j++) row[j] += g[-j];
    }
}

static void xl_score_backward(pe_t *pe, const float *params, float *grads, int layer, int h, int b, const float *q,
                              const float *k, int ld, float *dq, float *dk, int i0, int nq, int nk,
                              const float *ds, int lds, const int *pos) {
    xl_state *st = pe->state;
    const model_config *c = pe->cfg;
    int C = c->d_model, hs = C / c->heads, T = st->T, n = 2 * T - 1;
    float scale = 1.0f / sqrtf((float)hs);
    const float *u = xl_head_vec(pe, params, 1, layer, h), *v = xl_head_vec(pe, params, 2, layer, h);
    float *du = xl_head_vec(pe, grads, 1, layer, h), *dv = xl_head_vec(pe, grads, 2, layer, h);
    float *qv = st->work + h * st->work_per_head, *dG = qv + (size_t)st->chunk * hs;
    // forward: s_ij += u·k_j · scale. Column sums of ds, row by row (in
    // dG's space, before dG is made).
    float *col = dG;
    memset(col, 0, sizeof(float) * (size_t)nk);
    for (int r = 0; r < nq; r++) {
        const float *row = ds + (size_t)r * lds;
#pragma omp simd
        for (int j = 0; j < nk; j++) col[j] += row[j];
    }
    for (int j = 0; j < nk; j++) {
        float cj = col[j] * scale;
        float *dkj = dk + (size_t)j * ld;
        const float *kj = k + (size_t)j * ld;
#pragma omp simd
        for (int e = 0; e < hs; e++) {
            du[e] += cj * kj[e];
            dkj[e] += cj * u[e];
        }
    }
    if (!consecutive(pos, i0 + nq > nk ? i0 + nq : nk)) {  // s_ij += (q_i + v)·R_h[pos_i − pos_j] · scale
        for (int r = 0; r < nq; r++) {
            const float *qr = q + (size_t)r * ld;
            float *dqr = dq + (size_t)r * ld;
            for (int j = 0; j < nk; j++) {
                float g = ds[(size_t)r * lds + j] * scale;
                const float *R = xl_rel(pe, layer, h, pos, i0 + r, j);
                float *dRr = xl_rel_grad(pe, h, pos, i0 + r, j);
                for (int e = 0; e < hs; e++) {
                    dqr[e] += g * R[e];
                    dv[e] += g * R[e];
                    dRr[e] += g * (qr[e] + v[e]);
                }
            }
        }
        return;
    }
    // forward: s_ij += G[i, i − j], G = (Q + v) R_hᵀ · scale
    int dlo = i0 - nk + 1, nd = nq + nk - 1;
    memset(dG, 0, sizeof(float) * (size_t)nq * nd);
    for (int r = 0; r < nq; r++) {
        float *g = dG + (size_t)r * nd + r + nk - 1;
        const float *row = ds + (size_t)r * lds;
#pragma omp simd
        for (int j = 0; j < nk; j++) g[-j] = row[j] * scale;
    }
    const float *Rh = st->R + ((size_t)layer * n + (dlo + T - 1)) * C + h * hs;
    // d(q + v) = dG · R_h: into qv's buffer, then to dq and dv
    for (int r = 0; r < nq; r++)
#pragma omp simd
        for (int e = 0; e < hs; e++) qv[(size_t)r * hs + e] = q[(size_t)r * ld + e] + v[e];
    // dR_h += dGᵀ (Q + v)
    gemm_sgemm(1, 0, nd, hs, nq, 1.0f, dG, nd, qv, hs, 1.0f,
                st->dR + (size_t)(dlo + T - 1) * C + h * hs, C);
    // dq += dG R_h (written over qv, no longer needed), dv += Σ_rows
    gemm_sgemm(0, 0, nq, hs, nd, 1.0f, dG, nd, Rh, C, 0.0f, qv, hs);
    for (int r = 0; r < nq; r++)
#pragma omp simd
        for (int e = 0; e < hs; e++) {
            dq[(size_t)r * ld + e] += qv[(size_t)r * hs + e];
            dv[e] += qv[(size_t)r * hs + e];
        }
}

const pe_ops pe_xl_ops = {
    .name = "xl",
    .summary = "content and position terms with learned u, v and a projected sinusoid of i-j (Dai et al. 2019)",
    .options = xl_options,
    .check = xl_check,
    .init = xl_init,
    .free = xl_free,
    .layer_begin = xl_layer_begin,
    .table_floats = xl_table_floats,
    .layer_end = xl_layer_end,
    .score_forward = xl_score_forward,
    .score_backward = xl_score_backward,
    .reads_positions = 1,
};
