// rope.c — RoFormer (Su et al. 2021), interleaved pairs: (q[2m], q[2m+1])
// and the same pair of k are rotated by the angle t·θ_m, θ_m = base^(−2m/hs),
// so q̃_i·k̃_j depends on i − j only.
//
// Context extension at evaluation (docs/encodings.md, factor s): the rows of
// ROPE_SCALINGS below, one function each.
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
#include <string.h>

#include "pe.h"
#include "rope.h"

// The ramp YaRN and Llama 3 share: pair m, of wavelength λ_m = 2π/θ_m, keeps
// θ_m where it turns more than β times in the trained length (r = ctx/λ_m ≥
// β), is divided by s where it turns fewer than α times (r ≤ α), and is a
// linear mix of the two between: θ' = (1−γ)·θ/s + γ·θ, γ = (r − α)/(β − α).
static void ramp(const rope_ext *e, double *th, double alpha, double beta) {
    for (int m = 0; m < e->hs / 2; m++) {
        double r = e->ctx / (2.0 * M_PI / th[m]), g = (r - alpha) / (beta - alpha);
        g = g < 0 ? 0 : g > 1 ? 1 : g;
        th[m] = (1.0 - g) * th[m] / e->s + g * th[m];
    }
}

static void scale_none(const rope_ext *e, double *th, float *pos_mul, float *qmul) {}

// Position Interpolation (Chen et al. 2023, eq. 4): f'(x, m) = f(x, m/s).
static void scale_pi(const rope_ext *e, double *th, float *pos_mul, float *qmul) { *pos_mul = 1.0f / e->s; }

// "NTK-aware" scaling (bloc97 2023; Peng et al. 2023, section 3.2): the base
// b' = b·s^(hs/(hs−2)), so the lowest frequency is divided by s and the
// highest kept.
static void scale_ntk(const rope_ext *e, double *th, float *pos_mul, float *qmul) {
    double b = e->base * pow(e->s, (double)e->hs / (e->hs - 2 > 0 ? e->hs - 2 : 1));
    for (int m = 0; m < e->hs / 2; m++) th[m] = pow(b, -2.0 * m / e->hs);
}

// YaRN (Peng et al. 2023, eqs. 17–23): the ramp with α = 1, β = 32, and the
// logits × (0.1·ln s + 1)² (their √(1/t) on q and on k).
static void scale_yarn(const rope_ext *e, double *th, float *pos_mul, float *qmul) {
    ramp(e, th, 1.0, 32.0);
    float k = 0.1f * logf(e->s) + 1.0f;
    *qmul = k * k;
}

// Llama 3.1's frequency bands (Meta 2024, "The Llama 3 Herd of Models",
// section 3.3's long-context pre-training; the rule as released with the
// weights): the ramp with α = --rope-low-freq-factor (1), β =
// --rope-high-freq-factor (4) and no change of the logits.
static void scale_llama3(const rope_ext *e, double *th, float *pos_mul, float *qmul) { ramp(e, th, e->low, e->high); }

// LongRoPE (Ding et al. 2024, eq. 3 with n̂ = 0): per-pair rescale factors
// λ_m found by search, θ'_m = θ_m / λ_m (--rope-factors, hs/2 values), and
// cos and sin × √(1 + ln s / ln ctx) as Phi-3 applies it (Abdin et al. 2024),
// so the logits × (1 + ln s / ln ctx).
static void scale_longrope(const rope_ext *e, double *th, float *pos_mul, float *qmul) {
    for (int m = 0; m < e->hs / 2 && m < e->n_factors; m++) th[m] /= e->factors[m];
    *qmul = (float)(1.0 + log(e->s) / log(e->ctx > 1 ? e->ctx : 2));
}

#define ROPE_SCALINGS(X)                                                                    \
    X(none, "no extension")                                                                 \
    X(pi, "positions divided by s (Chen et al. 2023)")                                      \
    X(ntk, "the base raised so the lowest frequency is divided by s (NTK-aware)")           \
    X(yarn, "a ramp by wavelength between PI and none, logits sharpened (Peng et al. 2023)") \
    X(llama3, "Llama 3.1's ramp between frequency bands, its own edges (Meta 2024)")         \
    X(longrope, "searched per-pair factors, logits sharpened (Ding et al. 2024)")

#define SCALING_ROW(n, sum) {#n, sum, scale_##n},
const rope_scaling rope_scalings[] = {ROPE_SCALINGS(SCALING_ROW)};
const int rope_scaling_count = sizeof rope_scalings / sizeof rope_scalings[0];
#define SCALING_NAME(n, sum) #n,
static const char *const rope_scale_names[] = {ROPE_SCALINGS(SCALING_NAME) NULL};  // --rope-scale's choices

enum { ROPE_BASE, ROPE_SCALE, ROPE_FACTOR, ROPE_FRACTION, ROPE_LOW, ROPE_HIGH, ROPE_FACTORS };

static const pe_option rope_options[] = {
    [ROPE_BASE] = {.name = "rope-base", .type = PE_OPT_FLOAT, .lo = 1.0001, .hi = 1e12, .def = 10000,
                   .help = "RoPE base"},
    [ROPE_SCALE] = {.name = "rope-scale", .type = PE_OPT_CHOICE, .choices = rope_scale_names, .def = 0,
                    .eval_only = 1, .tunes = 1,
                    .help = "RoPE extension at evaluation (with --init: while fine-tuning, and kept): none, pi, ntk, "
                            "yarn, llama3, longrope"},
    [ROPE_FACTOR] = {.name = "rope-factor", .type = PE_OPT_FLOAT, .lo = 1, .hi = 1e6, .def = NAN,
                     .def_text = "eval length / training ctx; with --init: ctx / the checkpoint's ctx", .eval_only = 1,
                     .tunes = 1, .help = "RoPE extension factor"},
    [ROPE_FRACTION] = {.name = "rope-fraction", .type = PE_OPT_FLOAT, .lo = 0, .hi = 1, .def = 1,
                       .help = "p-RoPE: the fraction of pairs rotated, highest frequencies first"},
    [ROPE_LOW] = {.name = "rope-low-freq-factor", .type = PE_OPT_FLOAT, .lo = 1e-3, .hi = 1e6, .def = 1, .eval_only = 1,
                  .tunes = 1, .help = "llama3: pairs turning at most this often in the trained length are divided by s"},
    [ROPE_HIGH] = {.name = "rope-high-freq-factor", .type = PE_OPT_FLOAT, .lo = 1e-3, .hi = 1e6, .def = 4,
                   .eval_only = 1, .tunes = 1,
                   .help = "llama3: pairs turning at least this often in the trained length are kept"},
    [ROPE_FACTORS] = {.name = "rope-factors", .type = PE_OPT_LIST, .lo = 1e-3, .hi = 1e6, .def = NAN,
                      .def_text = "none; longrope needs head size / 2 of them", .eval_only = 1, .tunes = 1,
                      .help = "longrope: each pair's rescale factor, highest frequency first"},
    {0},
};

typedef struct {
    int T, table_scale, hs;  // what cs was made for
    float table_factor;
    float *cs;       // (T, hs/2, 2): cos, sin of each pair's angle
    float mscale;    // multiplies q (so the logits) — YaRN's and LongRoPE's attention scale
} rope_state;

void rope_frequencies(const rope_ext *e, int scaling, float *theta, float *pos_mul, float *mscale) {
    int half = e->hs / 2;
    double th[half > 0 ? half : 1];
    for (int m = 0; m < half; m++) th[m] = pow(e->base, -2.0 * m / e->hs);
    *pos_mul = 1.0f;
    *mscale = 1.0f;
    if (e->s != 1.0f) rope_scalings[scaling].freq(e, th, pos_mul, mscale);  // every row is the identity at s = 1
    for (int m = 0; m < half; m++) theta[m] = (float)th[m];
}

static int hs_of(const model_config *c) { return c->d_model / c->heads; }

static int rope_check(const pe_t *pe, char *err, size_t errlen) {
    const model_config *c = pe->cfg;
    if ((c->d_model / c->heads) % 2) {
        snprintf(err, errlen, "rope needs an even head size; --d-model %d / --heads %d = %d", c->d_model, c->heads,
                 c->d_model / c->heads);
        return 0;
    }
    const char *scale = rope_scale_names[(int)pe->opt[ROPE_SCALE]];
    if (!isnan(pe->opt[ROPE_FACTOR]) && strcmp(scale, "none") == 0) {
        snprintf(err, errlen, "--rope-factor needs --rope-scale pi, ntk, yarn, llama3 or longrope");
        return 0;
    }
    const model_config *cf = pe->cfg;
    int llama3 = strcmp(scale, "llama3") == 0, longrope = strcmp(scale, "longrope") == 0, half = hs_of(cf) / 2;
    for (int k = ROPE_LOW; k <= ROPE_HIGH; k++)
        if (!llama3 && config_setting(cf, rope_options[k].name)) {
            snprintf(err, errlen, "--%s is llama3's: give it with --rope-scale llama3", rope_options[k].name);
            return 0;
        }
    if (llama3 && !(pe->opt[ROPE_LOW] < pe->opt[ROPE_HIGH])) {
        snprintf(err, errlen, "--rope-low-freq-factor %g must be below --rope-high-freq-factor %g", pe->opt[ROPE_LOW],
                 pe->opt[ROPE_HIGH]);
        return 0;
    }
    int n = isnan(pe->opt[ROPE_FACTORS]) ? 0 : (int)pe->opt[ROPE_FACTORS];
    if (n && !longrope) {
        snprintf(err, errlen, "--rope-factors is longrope's: give it with --rope-scale longrope");
        return 0;
    }
    if (longrope && n != half) {
        snprintf(err, errlen, "--rope-scale longrope needs --rope-factors with one factor per pair: head size %d / 2 = %d "
                 "values, %d given", hs_of(cf), half, n);
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
    *scale = L > 0 ? (int)pe->opt[ROPE_SCALE] : 0;  // row 0: none
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
    rope_ext e = {.hs = hs,
                  .ctx = pe->cfg->base_ctx > 0 ? pe->cfg->base_ctx : pe->cfg->ctx,  // the length the frequencies were made for
                  .base = (float)pe->opt[ROPE_BASE], .s = factor, .low = pe->opt[ROPE_LOW], .high = pe->opt[ROPE_HIGH]};
    e.factors = pe_option_values(pe, ROPE_FACTORS, &e.n_factors);
    rope_frequencies(&e, scale, theta, &pos_mul, &st->mscale);
    int rotated = (int)lround(pe->opt[ROPE_FRACTION] * half);  // p-RoPE: the highest frequencies
    for (int m = rotated; m < half; m++) theta[m] = 0.0f;
    rope_angles(st->cs, T, half, theta, pos_mul);
    st->T = T, st->table_scale = scale, st->table_factor = factor, st->hs = hs;
    return st;
}

// One head's pairs x[2m], x[2m+1] rotated by the angles in c_s (cos, sin
// interleaved; sin times sgn) and multiplied by f[m]. One loop body without
// a branch, so that the compiler vectorises it (the pairs' two lanes split
// and joined by permutes); the same operations, fused as the scalar loop
// fuses them, so the same bits.
static inline void rotate_pairs(float *restrict x, const float *restrict c_s, const float *restrict f, float sgn,
                                int half) {
#pragma omp simd
    for (int m = 0; m < half; m++) {
        float c = c_s[2 * m], s = sgn * c_s[2 * m + 1];
        float a = x[2 * m], b = x[2 * m + 1];
        x[2 * m] = (a * c - b * s) * f[m];
        x[2 * m + 1] = (a * s + b * c) * f[m];
    }
}

void rope_apply(float *qkv, int B, int T, int C, int NH, const float *cs, const float *sq, const float *sk,
                float qmul, int dir, const int *pos) {
    int hs = C / NH, half = hs / 2;
    float sgn = (float)dir;
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_ROPE * B * T * C))
    for (size_t bt = 0; bt < (size_t)B * T; bt++) {
        size_t t = pos ? (size_t)pos[bt] : bt % T;
        const float *c_s = cs + t * half * 2;
        float *row = qkv + bt * 3 * C, muls[half];
        for (int part = 0; part < 2; part++) {  // q, then k
            const float *f = sq ? (part == 0 ? sq : sk) + t * half : muls;
            if (!sq)
                for (int m = 0; m < half; m++) muls[m] = part == 0 ? qmul : 1.0f;
            for (int h = 0; h < NH; h++) rotate_pairs(row + part * C + h * hs, c_s, f, sgn, half);
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
