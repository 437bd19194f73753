// pe_rope.c — RoFormer (Su et al. 2021), interleaved pairs: (q[2m], q[2m+1])
// and the same pair of k are rotated by the angle t·θ_m, θ_m = base^(−2m/hs),
// so q̃_i·k̃_j depends on i − j only.
//
// Context extension at evaluation (SPEC "RoPE context extension", factor s):
//   pi    positions divided by s                  (Chen et al. 2023)
//   ntk   base·s^(hs/(hs−2))                      ("NTK-aware" scaling)
//   yarn  θ'_m = (1−γ)·θ_m/s + γ·θ_m, γ = ramp((ctx/λ_m − α)/(β − α)),
//         λ_m = 2π/θ_m, α = 1, β = 32, logits × (0.1·ln s + 1)²  (Peng et al. 2023)
#include <math.h>
#include <stdlib.h>

#include "model.h"

typedef struct {
    int T, scale, hs;
    float factor;
    float *cs;       // (T, hs/2, 2): cos, sin of each pair's angle
    float mscale;    // multiplies q (so the logits) — YaRN's attention scale
} rope_state;

// Fills theta (hs/2) and the position multiplier for the current extension.
void rope_frequencies(const model_config *c, int scale, float s, float *theta, float *pos_mul, float *mscale) {
    int hs = c->d_model / c->heads, half = hs / 2;
    double base = c->rope_base;
    if (scale == ROPE_SCALE_NTK) base *= pow(s, (double)hs / (hs - 2 > 0 ? hs - 2 : 1));
    *pos_mul = scale == ROPE_SCALE_PI ? 1.0f / s : 1.0f;
    *mscale = 1.0f;
    for (int m = 0; m < half; m++) {
        double th = pow(base, -2.0 * m / hs);
        if (scale == ROPE_SCALE_YARN) {
            double r = c->ctx / (2.0 * M_PI / th), alpha = 1.0, beta = 32.0;
            double g = (r - alpha) / (beta - alpha);
            g = g < 0 ? 0 : g > 1 ? 1 : g;
            th = (1.0 - g) * th / s + g * th;
        }
        theta[m] = (float)th;
    }
    if (scale == ROPE_SCALE_YARN) {
        float k = 0.1f * logf(s) + 1.0f;
        *mscale = k * k;
    }
}

static rope_state *rope_table(pe_t *pe, int T) {
    rope_state *st = pe->state;
    if (!st) st = pe->state = calloc(1, sizeof *st);
    if (!st) die_runtime("out of memory for the RoPE table");
    float factor = pe->rope_scale ? pe->rope_factor : 1.0f;
    if (st->cs && st->T == T && st->scale == pe->rope_scale && st->factor == factor) return st;
    int hs = pe->cfg->d_model / pe->cfg->heads, half = hs / 2;
    free(st->cs);
    st->cs = xmalloc(sizeof(float) * size_mul((size_t)T, (size_t)hs, "rope table"));
    float theta[half > 0 ? half : 1], pos_mul;
    rope_frequencies(pe->cfg, pe->rope_scale, factor, theta, &pos_mul, &st->mscale);
    for (int t = 0; t < T; t++)
        for (int m = 0; m < half; m++) {
            double a = (double)t * pos_mul * theta[m];
            st->cs[((size_t)t * half + m) * 2] = (float)cos(a);
            st->cs[((size_t)t * half + m) * 2 + 1] = (float)sin(a);
        }
    st->T = T, st->scale = pe->rope_scale, st->factor = factor, st->hs = hs;
    return st;
}

// Rotates q and k of every head by +angle (dir = 1) or −angle (dir = −1,
// the transpose, for the backward pass); q (not k) is also scaled.
static void rope_rotate(pe_t *pe, float *qkv, int B, int T, int dir) {
    rope_state *st = rope_table(pe, T);
    int C = pe->cfg->d_model, NH = pe->cfg->heads, hs = C / NH, half = hs / 2;
    float sgn = (float)dir, ms = st->mscale;
#pragma omp parallel for schedule(static)
    for (size_t bt = 0; bt < (size_t)B * T; bt++) {
        const float *cs = st->cs + (bt % T) * half * 2;
        float *row = qkv + bt * 3 * C;
        for (int part = 0; part < 2; part++) {  // q, then k
            float mul = part == 0 ? ms : 1.0f;
            for (int h = 0; h < NH; h++) {
                float *x = row + part * C + h * hs;
                for (int m = 0; m < half; m++) {
                    float c = cs[2 * m], s = sgn * cs[2 * m + 1];
                    float a = x[2 * m], b = x[2 * m + 1];
                    x[2 * m] = (a * c - b * s) * mul;
                    x[2 * m + 1] = (a * s + b * c) * mul;
                }
            }
        }
    }
}

static void rope_qk_forward(pe_t *pe, float *qkv, int B, int T) { rope_rotate(pe, qkv, B, T, 1); }

static void rope_qk_backward(pe_t *pe, float *dqkv, int B, int T) {
    // forward: x̃ = mscale·R(tθ) x  →  dx = mscale·R(tθ)ᵀ dx̃ = mscale·R(−tθ) dx̃
    rope_rotate(pe, dqkv, B, T, -1);
}

static void rope_free(pe_t *pe) {
    rope_state *st = pe->state;
    if (st) free(st->cs);
    free(st);
    pe->state = NULL;
}

const pe_ops pe_rope_ops = {
    .name = "rope",
    .free = rope_free,
    .qk_forward = rope_qk_forward,
    .qk_backward = rope_qk_backward,
};
