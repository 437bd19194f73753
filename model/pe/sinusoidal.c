// sinusoidal.c — Vaswani et al. 2017, section 3.5:
//   P(t, 2i) = sin(t / base^(2i/d)),  P(t, 2i+1) = cos(t / base^(2i/d)),
// times --sin-scale (default 1/sqrt(d): the unit-amplitude table would swamp
// token embeddings drawn at 0.02). Fixed, so no parameters and no gradient.
#include <math.h>

#include "pe.h"

enum { SIN_BASE, SIN_SCALE };

static const pe_option sinusoidal_options[] = {
    [SIN_BASE] = {.name = "sin-base", .type = PE_OPT_FLOAT, .lo = 1.0001, .hi = 1e12, .def = 10000,
                  .help = "sinusoidal base"},
    [SIN_SCALE] = {.name = "sin-scale", .type = PE_OPT_FLOAT, .lo = 1e-9, .hi = 1e6, .def = NAN,
                   .def_text = "1/sqrt(d-model)", .help = "sinusoidal amplitude"},
    {0},
};

static int sinusoidal_check(const pe_t *pe, char *err, size_t errlen) {
    if (pe->cfg->d_model % 2 == 0) return 1;
    snprintf(err, errlen, "sinusoidal needs an even --d-model, got %d", pe->cfg->d_model);
    return 0;
}

static void sinusoidal_input_forward(pe_t *pe, const float *params, float *x, int B, int T, const int *pos) {
    (void)params;
    int C = pe->cfg->d_model;
    float base = (float)pe->opt[SIN_BASE];
    float amp = isnan(pe->opt[SIN_SCALE]) ? 1.0f / sqrtf((float)C) : (float)pe->opt[SIN_SCALE];
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_SINUSOID * T * C * (pos ? B : 1)))
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < (pos ? B : 1); b++) {  // without positions, one row serves every sequence
            int p = pos ? pos[(size_t)b * T + t] : t;
            for (int i = 0; i < C / 2; i++) {
                double angle = (double)p / pow((double)base, 2.0 * i / C);
                float s = (float)sin(angle) * amp, co = (float)cos(angle) * amp;
                for (int bb = pos ? b : 0; bb < (pos ? b + 1 : B); bb++) {
                    float *row = x + ((size_t)bb * T + t) * C;
                    row[2 * i] += s;
                    row[2 * i + 1] += co;
                }
            }
        }
    }
}

const pe_ops pe_sinusoidal_ops = {
    .name = "sinusoidal",
    .absolute = 1,
    .summary = "fixed sines and cosines added to the input (Vaswani et al. 2017)",
    .options = sinusoidal_options,
    .check = sinusoidal_check,
    .input_forward = sinusoidal_input_forward,
    .reads_positions = 1,
    // a fixed table: no input_backward
};
