// test_grad.c — central finite-difference checks of every backward pass.
//
// Tolerances: a check passes when |analytic − numeric| ≤ ATOL + RTOL·max(|a|, |n|),
// with the five-point difference
//   numeric = (8(f(x+ε) − f(x−ε)) − (f(x+2ε) − f(x−2ε))) / 12ε,
// ε = 1e-2 on float32 weights of order 0.3: its error is O(ε⁴), where the
// two-point difference's O(ε²) was already at ATOL for the small MLPs of the
// learned-function encodings (dpb). The losses are summed in double, so float
// rounding contributes about 1.5e-6 / ε ≈ 1.5e-4 to the numeric side at most.
#include <stdlib.h>
#include <string.h>

#include "../model/attn.h"
#include "../model/pe/rope.h"
#include "../model/ops.h"
#include "test.h"

#define EPS 1e-2f
#define ATOL 2e-4
#define RTOL 1e-2

static int close_enough(double a, double n) {
    double m = fabs(a) > fabs(n) ? fabs(a) : fabs(n);
    return fabs(a - n) <= ATOL + RTOL * m;
}

// Σ w ⊙ y in double: a scalar loss whose gradient wrt y is w.
static double dot(const float *w, const float *y, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)w[i] * y[i];
    return s;
}

// Compares analytic gradient g of f at x with central differences, at every
// index when n is small, else at `samples` random ones.
typedef double (*scalar_fn)(void *ctx);
static int fd_samples;  // samples compared since the last reset
static int fd_compare_eps(const char *what, float *x, const float *g, size_t n, int samples, scalar_fn f, void *ctx,
                          float eps) {
    int fails = 0;
    rng_t r = {n * 31 + 7};
    int count = n <= (size_t)samples ? (int)n : samples;
    fd_samples += count;
    for (int s = 0; s < count; s++) {
        size_t i = n <= (size_t)samples ? (size_t)s : (s == 0 ? 0 : s == 1 ? n - 1 : rng_next(&r) % n);
        float orig = x[i];
        double fv[4];
        const float steps[4] = {eps, -eps, 2 * eps, -2 * eps};
        for (int k = 0; k < 4; k++) {
            x[i] = orig + steps[k];
            fv[k] = f(ctx);
        }
        x[i] = orig;
        double num = (8.0 * (fv[0] - fv[1]) - (fv[2] - fv[3])) / (12.0 * eps);
        if (!close_enough(g[i], num)) {
            if (fails < 3) printf("    %s[%zu]: analytic %.6g numeric %.6g\n", what, i, g[i], num);
            fails++;
        }
    }
    return fails;
}
// An encoding with kinks (pe_ops.kinks): a step of ±2ε crosses an integer
// count now and then, where the numeric slope averages two pieces. Up to one
// sample in eight may then be off; a wrong backward pass misses far more.
static int kink_tolerance(const char *pe, int fails, const char *what) {
    const pe_ops *abs, *rel;
    char err[256];
    if (!fails || !pe_parse_spec(pe, &abs, &rel, err, sizeof err) || !rel || !rel->kinks || fails > fd_samples / 8)
        return fails;
    printf("    %s with pe=%s: %d of %d samples off, tolerated (%s is piecewise linear in its counts)\n", what, pe,
           fails, fd_samples, rel->name);
    return 0;
}

static int fd_compare(const char *what, float *x, const float *g, size_t n, int samples, scalar_fn f, void *ctx) {
    return fd_compare_eps(what, x, g, n, samples, f, ctx, EPS);
}
// An encoding's own tensors: a small MLP's weight moves every bias of the
// table at once, so the loss's float rounding (≈ 3e-6 here) divided by ε
// would reach ATOL at ε = 1e-2; PE_EPS keeps it at a quarter.
#define PE_EPS 4e-2f

// ---- LayerNorm --------------------------------------------------------------
typedef struct {
    float *out, *mean, *rstd, *inp, *w, *b, *dout;
    int N, C;
} ln_ctx;
static double ln_loss(void *p) {
    ln_ctx *c = p;
    layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->C);
    return dot(c->dout, c->out, (size_t)c->N * c->C);
}
static int test_layernorm_grad(void) {
    int fails = 0, N = 6, C = 9;
    ln_ctx c = {malloc(4 * N * C), malloc(4 * N), malloc(4 * N), malloc(4 * N * C), malloc(4 * C), malloc(4 * C), malloc(4 * N * C), N, C};
    test_fill_normal(c.inp, N * C, 1.0f, 1);
    test_fill_normal(c.w, C, 1.0f, 2);
    test_fill_normal(c.b, C, 1.0f, 3);
    test_fill_normal(c.dout, N * C, 1.0f, 4);
    float *dinp = calloc(N * C, 4), *dw = calloc(C, 4), *db = calloc(C, 4);
    ln_loss(&c);
    layernorm_backward(dinp, dw, db, c.dout, c.inp, c.w, c.mean, c.rstd, N, C);
    fails += fd_compare("dinp", c.inp, dinp, N * C, 1000, ln_loss, &c);
    fails += fd_compare("dw", c.w, dw, C, 1000, ln_loss, &c);
    fails += fd_compare("db", c.b, db, C, 1000, ln_loss, &c);
    free(c.out), free(c.mean), free(c.rstd), free(c.inp), free(c.w), free(c.b), free(c.dout);
    free(dinp), free(dw), free(db);
    return fails;
}

// ---- matmul -----------------------------------------------------------------
typedef struct {
    float *out, *inp, *w, *bias, *dout;
    int N, IC, OC;
} mm_ctx;
static double mm_loss(void *p) {
    mm_ctx *c = p;
    matmul_forward(c->out, c->inp, c->w, c->bias, c->N, c->IC, c->OC);
    return dot(c->dout, c->out, (size_t)c->N * c->OC);
}
static int test_matmul_grad(void) {
    int fails = 0, N = 5, IC = 7, OC = 6;
    mm_ctx c = {malloc(4 * N * OC), malloc(4 * N * IC), malloc(4 * OC * IC), malloc(4 * OC), malloc(4 * N * OC), N, IC, OC};
    test_fill_normal(c.inp, N * IC, 1.0f, 5);
    test_fill_normal(c.w, OC * IC, 1.0f, 6);
    test_fill_normal(c.bias, OC, 1.0f, 7);
    test_fill_normal(c.dout, N * OC, 1.0f, 8);
    float *dinp = calloc(N * IC, 4), *dw = calloc(OC * IC, 4), *db = calloc(OC, 4);
    mm_loss(&c);
    matmul_backward(dinp, dw, db, c.dout, c.inp, c.w, N, IC, OC);
    fails += fd_compare("dinp", c.inp, dinp, N * IC, 1000, mm_loss, &c);
    fails += fd_compare("dw", c.w, dw, OC * IC, 1000, mm_loss, &c);
    fails += fd_compare("dbias", c.bias, db, OC, 1000, mm_loss, &c);
    free(c.out), free(c.inp), free(c.w), free(c.bias), free(c.dout), free(dinp), free(dw), free(db);
    return fails;
}

// ---- GELU -------------------------------------------------------------------
typedef struct {
    float *out, *inp, *dout;
    int n;
} gelu_ctx;
static double gelu_loss(void *p) {
    gelu_ctx *c = p;
    gelu_forward(c->out, c->inp, c->n);
    return dot(c->dout, c->out, c->n);
}
static int test_gelu_grad(void) {
    int n = 64;
    gelu_ctx c = {malloc(4 * n), malloc(4 * n), malloc(4 * n), n};
    test_fill_normal(c.inp, n, 2.0f, 9);
    test_fill_normal(c.dout, n, 1.0f, 10);
    float *dinp = calloc(n, 4);
    gelu_loss(&c);
    gelu_backward(dinp, c.inp, c.dout, n);
    int fails = fd_compare("dinp", c.inp, dinp, n, 1000, gelu_loss, &c);
    free(c.out), free(c.inp), free(c.dout), free(dinp);
    return fails;
}

// ---- softmax cross-entropy ----------------------------------------------------
typedef struct {
    float *probs, *logits;
    int *targets;
    int N, V;
} ce_ctx;
static double ce_loss(void *p) {
    ce_ctx *c = p;
    size_t count;
    return crossentropy_forward(c->probs, c->logits, c->targets, c->N, c->V, &count);
}
static int test_crossentropy_grad(void) {
    int N = 7, V = 11;
    int targets[7] = {3, -1, 0, 10, 5, -1, 2};
    ce_ctx c = {malloc(4 * N * V), malloc(4 * N * V), targets, N, V};
    test_fill_normal(c.logits, N * V, 2.0f, 11);
    float *dl = calloc(N * V, 4);
    ce_loss(&c);
    crossentropy_backward(dl, c.probs, targets, N, V, 5, 1.0f);
    int fails = fd_compare("dlogits", c.logits, dl, N * V, 1000, ce_loss, &c);
    free(c.probs), free(c.logits), free(dl);
    return fails;
}

// ---- attention, with every encoding ---------------------------------------------
typedef struct {
    model_t *m;
    float *y, *att, *qkv, *qkv_in, *dout, *scratch;
    const int *seg;
    int B, T;
    const int *pos;  // (B, T) or NULL
    int fused;       // the fused kernel, in blocks of FUSED_CHUNK rows (not a multiple of its 16-row sub-blocks)
} at_ctx;
enum { FUSED_CHUNK = 24 };
static void at_run(at_ctx *c) {
    model_t *m = c->m;
    const model_config *cf = &m->cfg;
    pe_t *rel = m->pe[PE_REL].ops ? &m->pe[PE_REL] : NULL;
    memcpy(c->qkv, c->qkv_in, sizeof(float) * 3 * c->B * c->T * cf->d_model);
    int chunk = c->fused ? FUSED_CHUNK : ATTN_CHUNK;
    const pe_batch bt = {c->pos, c->B, c->T, c->pos ? cf->rand_pos : c->T, chunk, 1, !c->fused};  // as model_forward makes it
    if (rel && rel->ops->qk_forward) rel->ops->qk_forward(rel, c->qkv, c->B, c->T, c->pos, 0);
    if (rel && rel->ops->layer_begin) rel->ops->layer_begin(rel, m->params, 0, &bt);
    attn_dims d = {c->B, c->T, cf->d_model, cf->heads, cf->causal, c->seg, rel, m->params, 0, chunk, c->pos, NULL};
    if (c->fused) attn_fused_forward(c->y, c->att, c->qkv, &d, c->scratch);
    else attn_forward(c->y, c->att, c->qkv, &d, c->scratch);
}
static double at_loss(void *p) {
    at_ctx *c = p;
    at_run(c);
    return dot(c->dout, c->y, (size_t)c->B * c->T * c->m->cfg.d_model);
}
// cfg->rand_pos > 0: positions drawn as --rand-pos draws them.
static int attention_grad_cfg(const model_config *given, int fused) {
    model_config cfg = *given;
    const char *pe = cfg.pe;
    int causal = cfg.causal, rand_pos = cfg.rand_pos;
    model_t m;
    model_create(&m, &cfg);
    test_randomise_weights(&m, 21);
    // T spans two ATTN_CHUNK blocks and distances past --rel-clip 3 and the
    // exact T5 buckets.
    int B = 2, T = ATTN_CHUNK + 6, C = cfg.d_model;
    model_acts pa = {.B = B, .T = T};
    model_draw_positions(&m, &pa, 5, 1);
    size_t BTC = (size_t)B * T * C;
    int *seg = malloc(sizeof(int) * B * T), *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T);
    test_random_batch(B, T, cfg.vocab, causal, 3, tok, tgt, seg);
    at_ctx c = {&m, malloc(4 * BTC), malloc(4 * BTC * cfg.heads / C * T), malloc(12 * BTC), malloc(12 * BTC),
                malloc(4 * BTC), malloc(sizeof(float) * 4 * attn_scratch_floats(T, ATTN_CHUNK)), seg, B, T, pa.pos, fused};
    test_fill_normal(c.qkv_in, 3 * BTC, 1.0f, 22);
    test_fill_normal(c.dout, BTC, 1.0f, 23);
    float *dqkv = calloc(3 * BTC, 4);
    fd_samples = 0;
    at_loss(&c);
    model_zero_grad(&m);
    pe_t *rel = m.pe[PE_REL].ops ? &m.pe[PE_REL] : NULL;
    attn_dims d = {B, T, C, cfg.heads, causal, seg, rel, m.params, 0, fused ? FUSED_CHUNK : ATTN_CHUNK, pa.pos, NULL};
    if (fused) attn_fused_backward(dqkv, m.grads, c.dout, c.att, c.qkv, &d, c.scratch);
    else attn_backward(dqkv, m.grads, c.dout, c.att, c.qkv, &d, c.scratch);
    const pe_batch bt = {pa.pos, B, T, pa.pos ? rand_pos : T, fused ? FUSED_CHUNK : ATTN_CHUNK, 1, !fused};
    if (rel && rel->ops->layer_end) rel->ops->layer_end(rel, m.params, m.grads, 0, &bt);
    if (rel && rel->ops->qk_backward) rel->ops->qk_backward(rel, dqkv, B, T, pa.pos, 0);
    int fails = fd_compare("dqkv", c.qkv_in, dqkv, 3 * BTC, 40, at_loss, &c);
    if (rel)  // the encoding's own tensors (layer 0's slice is what layer 0 uses)
        for (int k = 0; k < m.tab.n; k++) {
            const tensor_info *t = &m.tab.t[k];
            if (strncmp(t->name, "pe_", 3) != 0) continue;
            fails += fd_compare_eps(t->name, m.params + t->offset, m.grads + t->offset, t->size, 24, at_loss, &c, PE_EPS);
        }
    fails = kink_tolerance(pe, fails, "attention");
    if (fails)
        printf("    attention with pe=%s %s%s%s, %s kernel\n", pe, causal ? "causal" : "bidir", rand_pos ? " --rand-pos" : "",
               cfg.base_ctx ? " fine-tuned" : "", fused ? "fused" : "blocks");
    free(pa.pos);
    free(c.y), free(c.att), free(c.qkv), free(c.qkv_in), free(c.dout), free(c.scratch);
    free(dqkv), free(seg), free(tok), free(tgt);
    model_free(&m);
    return fails;
}
static int attention_grad_case(const char *pe, int causal, int rand_pos, int fused) {
    model_config cfg;
    test_tiny_config(&cfg, pe, causal);
    cfg.rand_pos = rand_pos;
    return attention_grad_cfg(&cfg, fused);
}
static int attention_grad_cases(int fused) {
    int fails = 0;
    for (int i = 0; i < n_test_encodings; i++)
        for (int causal = 0; causal < 2; causal++)
            if (test_mode_allowed(test_encodings[i], causal)) {
                fails += attention_grad_case(test_encodings[i], causal, 0, fused);
                // random positions from [0, 3T), for the encodings that read them
                if (test_reads_positions(test_encodings[i]))
                    fails += attention_grad_case(test_encodings[i], causal, 3 * (ATTN_CHUNK + 6), fused);
            }
    return fails;
}
static int test_attention_grad(void) { return attention_grad_cases(0); }

// RoPE fine-tuned with each context extension of rope.c's table (--init: the
// extension applies in training, at factor ctx / base ctx = 2), both kernels;
// LongRoPE with a factor per pair (head size 4: 2).
static int test_rope_scalings_grad(void) {
    int fails = 0;
    for (int k = 1; k < rope_scaling_count; k++)
        for (int fused = 0; fused < 2; fused++) {
            model_config cfg;
            test_tiny_config(&cfg, "rope", 1);
            cfg.base_ctx = cfg.ctx / 2;
            config_set(&cfg, "rope-scale", k);
            if (strcmp(rope_scalings[k].name, "longrope") == 0) config_set_list(&cfg, "rope-factors", (float[]){1.5f, 3.0f}, 2);
            char err[256];
            EXPECT(model_config_check(&cfg, err, sizeof err), "rope fine-tuned with %s: %s", rope_scalings[k].name, err);
            if (!model_config_check(&cfg, err, sizeof err)) continue;
            int f = attention_grad_cfg(&cfg, fused);
            if (f) printf("    (--rope-scale %s)\n", rope_scalings[k].name);
            fails += f;
        }
    return fails;
}
static int test_attention_fused_grad(void) { return attention_grad_cases(1); }

// ---- the whole model ---------------------------------------------------------------
typedef struct {
    model_t *m;
    model_acts *a;
    int *tok, *tgt, *seg;
} model_ctx;
static double model_loss(void *p) {
    model_ctx *c = p;
    return model_forward(c->m, c->a, c->tok, c->tgt, c->seg);
}
static int model_grad_case(const char *pe, int causal, int rand_pos) {
    model_config cfg;
    test_tiny_config(&cfg, pe, causal);
    cfg.rand_pos = rand_pos;
    model_t m;
    model_create(&m, &cfg);
    test_randomise_weights(&m, 31);
    int B = 2, T = ATTN_CHUNK + 6;
    model_acts a;
    model_acts_alloc(&a, &m, B, T, 1);
    int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T), *seg = malloc(sizeof(int) * B * T);
    test_random_batch(B, T, cfg.vocab, causal, 4, tok, tgt, seg);
    model_draw_positions(&m, &a, 6, 1);
    model_ctx c = {&m, &a, tok, tgt, seg};
    model_loss(&c);
    model_zero_grad(&m);
    model_backward(&m, &a, tok, tgt, seg);
    float *g = malloc(sizeof(float) * m.tab.total);
    memcpy(g, m.grads, sizeof(float) * m.tab.total);
    int fails = 0;
    fd_samples = 0;
    for (int k = 0; k < m.tab.n; k++) {
        const tensor_info *t = &m.tab.t[k];
        fails += fd_compare_eps(t->name, m.params + t->offset, g + t->offset, t->size, 8, model_loss, &c,
                                strncmp(t->name, "pe_", 3) == 0 ? PE_EPS : EPS);
    }
    fails = kink_tolerance(pe, fails, "model");
    if (fails) printf("    model with pe=%s %s%s\n", pe, causal ? "causal" : "bidir", rand_pos ? " --rand-pos" : "");
    free(g), free(tok), free(tgt), free(seg);
    model_acts_free(&a);
    model_free(&m);
    return fails;
}
static int test_model_grad(void) {
    int fails = 0;
    for (int i = 0; i < n_test_encodings; i++)
        for (int causal = 0; causal < 2; causal++)
            if (test_mode_allowed(test_encodings[i], causal)) {
                fails += model_grad_case(test_encodings[i], causal, 0);
                if (test_reads_positions(test_encodings[i])) fails += model_grad_case(test_encodings[i], causal, 3 * (ATTN_CHUNK + 6));
            }
    return fails;
}

const test_case grad_tests[] = {
    {"grad/layernorm", test_layernorm_grad},
    {"grad/rope_scalings", test_rope_scalings_grad},
    {"grad/matmul", test_matmul_grad},
    {"grad/gelu", test_gelu_grad},
    {"grad/crossentropy", test_crossentropy_grad},
    {"grad/attention_every_encoding", test_attention_grad},
    {"grad/attention_fused_kernel_every_encoding", test_attention_fused_grad},
    {"grad/model_every_tensor_every_encoding", test_model_grad},
};
const int n_grad_tests = sizeof grad_tests / sizeof grad_tests[0];
