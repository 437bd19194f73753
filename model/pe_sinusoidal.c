// pe_sinusoidal.c — Vaswani et al. 2017, section 3.5:
//   P(t, 2i) = sin(t / base^(2i/d)),  P(t, 2i+1) = cos(t / base^(2i/d)),
// times --sin-scale (default 1/sqrt(d): the unit-amplitude table would swamp
// token embeddings drawn at 0.02). Fixed, so no parameters and no gradient.
#include <math.h>

#include "model.h"

static void sinusoidal_input_forward(pe_t *pe, const float *params, float *x, int B, int T) {
    (void)params;
    const model_config *c = pe->cfg;
    int C = c->d_model;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < C / 2; i++) {
            double angle = (double)t / pow((double)c->sin_base, 2.0 * i / C);
            float s = (float)sin(angle) * c->sin_scale, co = (float)cos(angle) * c->sin_scale;
            for (int b = 0; b < B; b++) {
                float *row = x + ((size_t)b * T + t) * C;
                row[2 * i] += s;
                row[2 * i + 1] += co;
            }
        }
    }
}

const pe_ops pe_sinusoidal_ops = {
    .name = "sinusoidal",
    .absolute = 1,
    .input_forward = sinusoidal_input_forward,
    // a fixed table: no input_backward
};
