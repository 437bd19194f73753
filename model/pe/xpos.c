// xpos.c — xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer",
// section 3.2, eq. 11): RoPE (base 10000) with an exponential scale per pair,
//   q̃_n = ζ^(n/γ) ⊙ R(nθ) q_n,   k̃_m = ζ^(−m/γ) ⊙ R(mθ) k_m,
//   ζ_i = (2i/hs + 0.4)/1.4 for pair i,  γ = --xpos-scale-base (512),
// so q̃_n·k̃_m carries ζ^((n−m)/γ): attention decays with distance. With keys
// after the query the scale grows instead, so xPos is causal only. pelab
// measures n and m from the middle of the training context (ctx/2) — the
// product is the same, and the factors stay within float range at long lengths.
#include <math.h>
#include <stdlib.h>

#include "pe.h"
#include "rope.h"

enum { XPOS_SCALE_BASE };

static const pe_option xpos_options[] = {
    [XPOS_SCALE_BASE] = {.name = "xpos-scale-base", .type = PE_OPT_FLOAT, .lo = 1, .hi = 1e30, .def = 512,
                         .help = "xPos scale base γ"},
    {0},
};

typedef struct {
    int T;
    float *cs;      // (T, half, 2)
    float *sq, *sk; // (T, half)
} xpos_state;

static int xpos_check(const pe_t *pe, char *err, size_t errlen) {
    const model_config *c = pe->cfg;
    if ((c->d_model / c->heads) % 2) {
        snprintf(err, errlen, "xpos needs an even head size; --d-model %d / --heads %d = %d", c->d_model, c->heads,
                 c->d_model / c->heads);
        return 0;
    }
    return 1;
}

static void xpos_init(pe_t *pe, param_table *tab) { pe->state = xcalloc(1, sizeof(xpos_state)); }

static void xpos_free(pe_t *pe) {
    xpos_state *st = pe->state;
    if (st) free(st->cs), free(st->sq), free(st->sk);
    free(st);
    pe->state = NULL;
}

static xpos_state *xpos_table(pe_t *pe, int T) {
    xpos_state *st = pe->state;
    if (st->cs && st->T == T) return st;
    int hs = pe->cfg->d_model / pe->cfg->heads, half = hs / 2;
    size_t n = size_mul((size_t)T, (size_t)half, "xpos table");
    free(st->cs), free(st->sq), free(st->sk);
    st->cs = xmalloc(sizeof(float) * 2 * n);
    st->sq = xmalloc(sizeof(float) * n);
    st->sk = xmalloc(sizeof(float) * n);
    float theta[half > 0 ? half : 1], pos_mul, mscale;
    rope_frequencies(&(rope_ext){.hs = hs, .ctx = pe->cfg->ctx, .base = 10000.0, .s = 1.0f}, 0, theta, &pos_mul, &mscale);
    rope_angles(st->cs, T, half, theta, 1.0f);
    double gamma = pe->opt[XPOS_SCALE_BASE];
    for (int t = 0; t < T; t++)
        for (int m = 0; m < half; m++) {
            double zeta = (2.0 * m / hs + 0.4) / 1.4, e = (t - pe->cfg->ctx / 2) / gamma;
            st->sq[(size_t)t * half + m] = (float)pow(zeta, e);
            st->sk[(size_t)t * half + m] = (float)pow(zeta, -e);
        }
    st->T = T;
    return st;
}

static size_t xpos_table_floats(const pe_t *pe, int T, int chunk) { return 4 * (size_t)T * (pe->cfg->d_model / pe->cfg->heads / 2); }

static void xpos_qk(pe_t *pe, float *qkv, int B, int T, int dir, const int *pos) {
    xpos_state *st = xpos_table(pe, pos ? pe->cfg->rand_pos : T);
    rope_apply(qkv, B, T, pe->cfg->d_model, pe->cfg->heads, st->cs, st->sq, st->sk, 1.0f, dir, pos);
}

static void xpos_qk_forward(pe_t *pe, float *qkv, int B, int T, const int *pos, int L) { xpos_qk(pe, qkv, B, T, 1, pos); }

// forward: x̃ = D R x with D diagonal  →  dx = Rᵀ D dx̃ = D R(−θ) dx̃
static void xpos_qk_backward(pe_t *pe, float *dqkv, int B, int T, const int *pos, int L) { xpos_qk(pe, dqkv, B, T, -1, pos); }

const pe_ops pe_xpos_ops = {
    .name = "xpos",
    .summary = "RoPE with an exponential decay of the scores with distance (Sun et al. 2022)",
    .options = xpos_options,
    .check = xpos_check,
    .causal_only = 1,  // the scale grows for keys after the query
    .reads_positions = 1,
    .init = xpos_init,
    .free = xpos_free,
    .table_floats = xpos_table_floats,
    .qk_forward = xpos_qk_forward,
    .qk_backward = xpos_qk_backward,
};
