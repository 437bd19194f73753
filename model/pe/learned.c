// learned.c — a trained table P ∈ R^(ctx × d), init N(0, 0.01), as in
// GPT-2. It has no rows past the training context, so evaluation at longer
// contexts is refused (learned_max_eval_ctx).
#include <string.h>

#include "pe.h"

static void learned_init(pe_t *pe, param_table *tab) {
    const model_config *c = pe->cfg;
    size_t rows = c->rand_pos > 0 ? (size_t)c->rand_pos : (size_t)c->ctx;  // --rand-pos: a row per possible position
    pe->tensor[0] = param_add(tab, "pe_learned", size_mul(rows, (size_t)c->d_model, "learned table"),
                              1, INIT_NORMAL, 0.01f);
}

static int learned_max_eval_ctx(const pe_t *pe) { return pe->cfg->rand_pos > 0 ? pe->cfg->rand_pos : pe->cfg->ctx; }

static void learned_input_forward(pe_t *pe, const float *params, float *x, int B, int T, const int *pos) {
    int C = pe->cfg->d_model;
    if (T > learned_max_eval_ctx(pe)) die_runtime("internal: learned table has %d rows, asked for %d", learned_max_eval_ctx(pe), T);
    const float *P = params + pe->off[0];  // (rows, C)
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_ADD * B * T * C))
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *row = x + ((size_t)b * T + t) * C;
            const float *p = P + (size_t)(pos ? pos[(size_t)b * T + t] : t) * C;
            for (int k = 0; k < C; k++) row[k] += p[k];
        }
}

static void learned_input_backward(pe_t *pe, float *grads, const float *dx, int B, int T, const int *pos) {
    // forward: x[b, t] += P[p(b, t)]  →  dP[p(b, t)] += dx[b, t]
    int C = pe->cfg->d_model;
    float *dP = grads + pe->off[0];
    if (pos) {  // rows shared across sequences at different t: one thread, in order
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const float *d = dx + ((size_t)b * T + t) * C;
                float *g = dP + (size_t)pos[(size_t)b * T + t] * C;
                for (int k = 0; k < C; k++) g[k] += d[k];
            }
        return;
    }
#pragma omp parallel for schedule(static) if (parallel : par_worth(PAR_NS_ADD * B * T * C))
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            const float *d = dx + ((size_t)b * T + t) * C;
            float *g = dP + (size_t)t * C;
            for (int k = 0; k < C; k++) g[k] += d[k];
        }
}

const pe_ops pe_learned_ops = {
    .name = "learned",
    .absolute = 1,
    .summary = "a trained table of ctx x d added to the input (GPT-2); no rows past ctx",
    .init = learned_init,
    .max_eval_ctx = learned_max_eval_ctx,
    .input_forward = learned_input_forward,
    .input_backward = learned_input_backward,
    .reads_positions = 1,
};
