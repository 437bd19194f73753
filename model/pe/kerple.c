// kerple.c — KERPLE (Chi et al. 2022, "KERPLE: Kernelized Relative
// Positional Embedding for Length Extrapolation"), the two kernels of its
// eq. 7 (section 4), per layer and head, added after the 1/sqrt(hs) scaling:
//   log    b_h(i, j) = −r₁·log(1 + r₂·|i − j|)      r₁, r₂ > 0
//   power  b_h(i, j) = −r₁·|i − j|^r₂               r₁ > 0, 0 < r₂ ≤ 2
// Positivity: pelab trains unconstrained ρ and uses r₁ = softplus(ρ₁), and
// r₂ = softplus(ρ₂) (log) or r₂ = 2·sigmoid(ρ₂) (power), where the paper
// clamps; smooth maps keep the finite-difference checks meaningful.
// Initial values: r₁ = 1, r₂ = 1 (both kernels).
#include <math.h>
#include <stdlib.h>

#include "distbias.h"
#include "pe.h"

enum { KERPLE_KIND };
enum { KERPLE_LOG, KERPLE_POWER };
static const char *const kerple_kinds[] = {"log", "power", NULL};

static const pe_option kerple_options[] = {
    [KERPLE_KIND] = {.name = "kerple-kind", .type = PE_OPT_CHOICE, .choices = kerple_kinds, .def = KERPLE_LOG,
                     .help = "KERPLE kernel: log or power"},
    {0},
};

static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

static void kerple_init(pe_t *pe, param_table *tab) {
    size_t n = (size_t)pe->cfg->layers * pe->cfg->heads;
    float rho1 = logf(expf(1.0f) - 1.0f);  // softplus⁻¹(1)
    float rho2 = pe->opt[KERPLE_KIND] == KERPLE_LOG ? rho1 : 0.0f;  // 2·sigmoid(0) = 1
    pe->tensor[0] = param_add(tab, "pe_kerple_r1", n, 0, INIT_CONST, rho1);
    pe->tensor[1] = param_add(tab, "pe_kerple_r2", n, 0, INIT_CONST, rho2);
    pe->state = xcalloc(1, sizeof(distbias));
}

// r₁, r₂ of one layer and head, and dr/dρ of each.
static void kerple_r(const pe_t *pe, const float *params, int layer, int h, float r[2], float dr[2]) {
    size_t k = (size_t)layer * pe->cfg->heads + h;
    float p1 = params[pe->off[0] + k], p2 = params[pe->off[1] + k];
    r[0] = softplus(p1), dr[0] = sigmoid(p1);
    if (pe->opt[KERPLE_KIND] == KERPLE_LOG) {
        r[1] = softplus(p2), dr[1] = sigmoid(p2);
    } else {
        float s = sigmoid(p2);
        r[1] = 2.0f * s, dr[1] = 2.0f * s * (1.0f - s);
    }
}

static void kerple_layer_begin(pe_t *pe, const float *params, int layer, const pe_batch *bt) {
    int T = bt->span;
    distbias *db = pe->state;
    int H = pe->cfg->heads;
    distbias_size(db, H, T);
    for (int h = 0; h < H; h++) {
        float r[2], dr[2], *b = distbias_row(db, h) + T - 1;
        kerple_r(pe, params, layer, h, r, dr);
        for (int n = -(T - 1); n <= T - 1; n++) {
            float a = (float)abs(n);
            b[n] = pe->opt[KERPLE_KIND] == KERPLE_LOG ? -r[0] * log1pf(r[1] * a) : -r[0] * powf(a, r[1]);
        }
    }
}

// From ∂loss/∂b_h(n) to the layer's ρ₁, ρ₂:
//   log:   ∂b/∂r₁ = −log(1 + r₂a),  ∂b/∂r₂ = −r₁·a/(1 + r₂a)      (a = |n|)
//   power: ∂b/∂r₁ = −a^r₂,          ∂b/∂r₂ = −r₁·a^r₂·ln a (0 at a = 0)
static void kerple_layer_end(pe_t *pe, const float *params, float *grads, int layer, const pe_batch *bt) {
    int T = bt->span;
    distbias *db = pe->state;
    int H = pe->cfg->heads;
    for (int h = 0; h < H; h++) {
        float r[2], dr[2];
        kerple_r(pe, params, layer, h, r, dr);
        const float *g = distbias_grad_row(db, h) + T - 1;
        double g1 = 0, g2 = 0;
        for (int n = -(T - 1); n <= T - 1; n++) {
            if (g[n] == 0.0f) continue;
            float a = (float)abs(n);
            if (pe->opt[KERPLE_KIND] == KERPLE_LOG) {
                g1 += g[n] * -log1pf(r[1] * a);
                g2 += g[n] * -r[0] * a / (1.0f + r[1] * a);
            } else {
                float p = powf(a, r[1]);
                g1 += g[n] * -p;
                if (a > 0) g2 += g[n] * -r[0] * p * logf(a);
            }
        }
        size_t k = (size_t)layer * H + h;
        grads[pe->off[0] + k] += (float)g1 * dr[0];
        grads[pe->off[1] + k] += (float)g2 * dr[1];
    }
    distbias_zero_grad(db);
}

const pe_ops pe_kerple_ops = {
    .name = "kerple",
    .summary = "a learned log (or power) decay -r1 log(1 + r2 |i-j|) per layer and head (Chi et al. 2022)",
    .options = kerple_options,
    .init = kerple_init,
    .free = distbias_free_state,
    .layer_begin = kerple_layer_begin,
    .table_floats = distbias_table_floats,
    .layer_end = kerple_layer_end,
    .score_forward = distbias_score_forward,
    .reads_positions = 1,
    .score_backward = distbias_score_backward,
};
