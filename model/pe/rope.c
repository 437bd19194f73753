// rope.c — RoFormer (Su et al. 2021), interleaved pairs: (q[2m], q[2m+1])
// and the same pair of k are rotated by the angle t·θ_m, θ_m = base^(−2m/hs),
// so q̃_i·k̃_j depends on i − j only.
//
// Context extension at evaluation (docs/encodings.md, factor s):
//   pi    positions divided by s                  (Chen et al. 2023)
//   ntk   base·s^(hs/(hs−2))                      ("NTK-aware" scaling)
//   yarn  θ'_m = (1−γ)·θ_m/s + γ·θ_m, γ = ramp((ctx/λ_m − α)/(β − α)),
//         λ_m = 2π/θ_m, α = 1, β = 32, logits × (0.1·ln s + 1)²  (Peng et al. 2023)
//
// Fine-tuning (--init, Chen et al. 2023 and Peng et al. 2023 fine-tune PI
// and YaRN at the longer length): the extension applies in training too,
// relative to the checkpoint's ctx, and stays with the model.
//
// p-RoPE (Barbero et al. 2024, "Round and Round We Go!", section 6):
// --rope-fraction p rotates only the first round(p·hs/2) pairs, those of the
// highest frequencies; the others keep angle 0 (no position). p = 1 is RoPE,
// p = 0 is NoPE.
#include <math.h>
#include <stdlib.h>

#include "pe.h"
#include "rope.h"

enum { ROPE_BASE, ROPE_SCALE, ROPE_FACTOR, ROPE_FRACTION };
enum { ROPE_SCALE_NONE, ROPE_SCALE_PI, ROPE_SCALE_NTK, ROPE_SCALE_YARN };  // --rope-scale's choices, in order
static const char *const rope_scale_names[] = {"none", "pi", "ntk", "yarn", NULL};

static const pe_option rope_options[] = {
    [ROPE_BASE] = {.name = "rope-base", .type = PE_OPT_FLOAT, .lo = 1.0001, .hi = 1e12, .def = 10000,
                   .help = "RoPE base"},
    [ROPE_SCALE] = {.name = "rope-scale", .type = PE_OPT_CHOICE, .choices = rope_scale_names, .def = ROPE_SCALE_NONE,
                    .eval_only = 1, .tunes = 1,
                    .help = "RoPE extension at evaluation (with --init: while fine-tuning, and kept): none, pi, ntk, yarn"},
    [ROPE_FACTOR] = {.name = "rope-factor", .type = PE_OPT_FLOAT, .lo = 1, .hi = 1e6, .def = NAN,
                     .def_text = "eval length / training ctx; with --init: ctx / the checkpoint's ctx", .eval_only = 1,
                     .tunes = 1, .help = "RoPE extension factor"},
    [ROPE_FRACTION] = {.name = "rope-fraction", .type = PE_OPT_FLOAT, .lo = 0, .hi = 1, .def = 1,
                       .help = "p-RoPE: the fraction of pairs rotated, highest frequencies first"},
    {0},
};

typedef struct {
    int T, table_scale, hs;  // what cs was made for
    float table_factor;
    float *cs;       // (T, hs/2, 2): cos, sin of each pair's angle
    float mscale;    // multiplies q (so the logits) — YaRN's attention scale
} rope_state;

void rope_frequencies(int hs, int ctx, double base, int scale, float s, float *theta, float *pos_mul, float *mscale) {
    int half = hs / 2;
    if (scale == ROPE_SCALE_NTK) base *= pow(s, (double)hs / (hs - 2 > 0 ? hs - 2 : 1));
    *pos_mul = scale == ROPE_SCALE_PI ? 1.0f / s : 1.0f;
    *mscale = 1.0f;
    for (int m = 0; m < half; m++) {
        double th = pow(base, -2.0 * m / hs);
        if (scale == ROPE_SCALE_YARN) {
            double r = ctx / (2.0 * M_PI / th), alpha = 1.0, beta = 32.0;
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

static int rope_check(const pe_t *pe, char *err, size_t errlen) {
    const model_config *c = pe->cfg;
    if ((c->d_model / c->heads) % 2) {
        snprintf(err, errlen, "rope needs an even head size; --d-model %d / --heads %d = %d", c->d_model, c->heads,
                 c->d_model / c->heads);
        return 0;
    }
    if (!isnan(pe->opt[ROPE_FACTOR]) && pe->opt[ROPE_SCALE] == ROPE_SCALE_NONE) {
        snprintf(err, errlen, "--rope-factor needs --rope-scale pi, ntk or yarn");
        return 0;
    }
    return 1;
}

// The extension in force for an evaluation at length L (L = 0: training, and
// every evaluation that applies none: the order probe, pictures, sampling):
// at L the chosen extension, with the factor given or L / ctx (1 at or below
// the training length). A fine-tuned model (--init, cfg->base_ctx > 0) keeps
// the extension it was fine-tuned with, in training and at every evaluation,
// with the factor given or ctx / base_ctx (at least 1).
static void rope_extension(const pe_t *pe, int L, int *scale, float *factor) {
    int T = pe->cfg->ctx, base = pe->cfg->base_ctx;
    float given = (float)pe->opt[ROPE_FACTOR];
    if (base > 0) {
        *scale = (int)pe->opt[ROPE_SCALE];
        *factor = !isnan(given) ? given : T > base ? (float)T / base : 1.0f;
        return;
    }
    *scale = L > 0 ? (int)pe->opt[ROPE_SCALE] : ROPE_SCALE_NONE;
    *factor = L <= 0 ? 1.0f : !isnan(given) ? given : L > T ? (float)L / T : 1.0f;
}

static void rope_init(pe_t *pe, param_table *tab) { pe->state = xcalloc(1, sizeof(rope_state)); }

// The table for T positions under the extension of an evaluation at L (a
// cache: made again only when T or the extension changes).
static rope_state *rope_table(pe_t *pe, int T, int L) {
    rope_state *st = pe->state;
    int scale;
    float factor;
    rope_extension(pe, L, &scale, &factor);
    if (!scale) factor = 1.0f;
    if (st->cs && st->T == T && st->table_scale == scale && st->table_factor == factor) return st;
    int hs = pe->cfg->d_model / pe->cfg->heads, half = hs / 2;
    free(st->cs);
    st->cs = xmalloc(sizeof(float) * size_mul((size_t)T, (size_t)hs, "rope table"));
    float theta[half > 0 ? half : 1], pos_mul;
    int ctx = pe->cfg->base_ctx > 0 ? pe->cfg->base_ctx : pe->cfg->ctx;  // the length the frequencies were made for
    rope_frequencies(hs, ctx, (float)pe->opt[ROPE_BASE], scale, factor, theta, &pos_mul, &st->mscale);
    int rotated = (int)lround(pe->opt[ROPE_FRACTION] * half);  // p-RoPE: the highest frequencies
    for (int m = rotated; m < half; m++) theta[m] = 0.0f;
    rope_angles(st->cs, T, half, theta, pos_mul);
    st->T = T, st->table_scale = scale, st->table_factor = factor, st->hs = hs;
    return st;
}

void rope_apply(float *qkv, int B, int T, int C, int NH, const float *cs, const float *sq, const float *sk,
                float qmul, int dir, const int *pos) {
    int hs = C / NH, half = hs / 2;
    float sgn = (float)dir;
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_ROPE * B * T * C))
    for (size_t bt = 0; bt < (size_t)B * T; bt++) {
        size_t t = pos ? (size_t)pos[bt] : bt % T;
        const float *c_s = cs + t * half * 2;
        float *row = qkv + bt * 3 * C;
        for (int part = 0; part < 2; part++) {  // q, then k
            const float *scale = sq ? (part == 0 ? sq : sk) + t * half : NULL;
            float mul = part == 0 ? qmul : 1.0f;
            for (int h = 0; h < NH; h++) {
                float *x = row + part * C + h * hs;
                for (int m = 0; m < half; m++) {
                    float c = c_s[2 * m], s = sgn * c_s[2 * m + 1], f = scale ? scale[m] : mul;
                    float a = x[2 * m], b = x[2 * m + 1];
                    x[2 * m] = (a * c - b * s) * f;
                    x[2 * m + 1] = (a * s + b * c) * f;
                }
            }
        }
    }
}

void rope_angles(float *cs, int T, int half, const float *theta, float pos_mul) {
    for (int t = 0; t < T; t++)
        for (int m = 0; m < half; m++) {
            double a = (double)t * pos_mul * theta[m];
            cs[((size_t)t * half + m) * 2] = (float)cos(a);
            cs[((size_t)t * half + m) * 2 + 1] = (float)sin(a);
        }
}

static void rope_rotate(pe_t *pe, float *qkv, int B, int T, int dir, const int *pos, int L) {
    rope_state *st = rope_table(pe, pos ? pe->cfg->rand_pos : T, L);  // a row per position that can occur
    rope_apply(qkv, B, T, pe->cfg->d_model, pe->cfg->heads, st->cs, NULL, NULL, st->mscale, dir, pos);
}

static void rope_qk_forward(pe_t *pe, float *qkv, int B, int T, const int *pos, int L) {
    rope_rotate(pe, qkv, B, T, 1, pos, L);
}

static void rope_qk_backward(pe_t *pe, float *dqkv, int B, int T, const int *pos, int L) {
    // forward: x̃ = mscale·R(tθ) x  →  dx = mscale·R(tθ)ᵀ dx̃ = mscale·R(−tθ) dx̃
    rope_rotate(pe, dqkv, B, T, -1, pos, L);
}

static void rope_free(pe_t *pe) {
    rope_state *st = pe->state;
    if (st) free(st->cs);
    free(st);
    pe->state = NULL;
}

const pe_ops pe_rope_ops = {
    .name = "rope",
    .summary = "q and k rotated by position-dependent angles (Su et al. 2021)",
    .options = rope_options,
    .check = rope_check,
    .init = rope_init,
    .free = rope_free,
    .qk_forward = rope_qk_forward,
    .qk_backward = rope_qk_backward,
    .reads_positions = 1,
};
