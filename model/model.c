// model.c — forward, backward and AdamW for the model of model.h.
#include "model.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "attn.h"
#include "ops.h"

static int check_shape(const model_config *c, char *err, size_t errlen) {
    if (c->vocab < 2) { snprintf(err, errlen, "vocabulary of %d tokens: need at least 2", c->vocab); return 0; }
    if (c->ctx < 1 || c->ctx > 1 << 20) { snprintf(err, errlen, "--ctx %d: must be between 1 and 1048576", c->ctx); return 0; }
    if (c->d_model < 1 || c->d_model > 1 << 14) { snprintf(err, errlen, "--d-model %d: must be between 1 and 16384", c->d_model); return 0; }
    if (c->layers < 1 || c->layers > 256) { snprintf(err, errlen, "--layers %d: must be between 1 and 256", c->layers); return 0; }
    if (c->heads < 1 || c->heads > c->d_model) { snprintf(err, errlen, "--heads %d: must be between 1 and --d-model", c->heads); return 0; }
    if (c->d_model % c->heads) {
        snprintf(err, errlen, "--d-model %d is not divisible by --heads %d", c->d_model, c->heads);
        return 0;
    }
    if (c->causal != 0 && c->causal != 1) { snprintf(err, errlen, "attention mode %d: must be causal (1) or bidir (0)", c->causal); return 0; }
    return 1;
}

int model_config_check(const model_config *c, char *err, size_t errlen) {
    const pe_ops *ops[PE_SLOTS];
    if (!pe_parse_spec(c->pe, &ops[0], &ops[1], err, errlen) || !check_shape(c, err, errlen) ||
        !pe_check_settings(c->pe, c, err, errlen))
        return 0;
    for (int i = 0; i < PE_SLOTS; i++) {
        pe_t pe;
        if (ops[i] && !pe_resolve(&pe, ops[i], c, err, errlen)) return 0;
    }
    if (c->rand_pos) {
        if (c->rand_pos < c->ctx || c->rand_pos > 1 << 20) {
            snprintf(err, errlen, "--rand-pos %d: must be at least --ctx %d (and at most 1048576)", c->rand_pos, c->ctx);
            return 0;
        }
        if (!ops[0] && !ops[1]) {
            snprintf(err, errlen, "--rand-pos with --pe %s: the encoding reads no positions", c->pe);
            return 0;
        }
        for (int i = 0; i < PE_SLOTS; i++)
            if (ops[i] && !ops[i]->reads_positions) {
                char takers[256] = "";
                for (int r = 0; r < pe_registry_count; r++)
                    if (pe_registry[r]->reads_positions)
                        snprintf(takers + strlen(takers), sizeof takers - strlen(takers), "%s%s", *takers ? ", " : "",
                                 pe_registry[r]->name);
                snprintf(err, errlen, "--rand-pos is not supported by --pe %s (it is by %s)", ops[i]->name, takers);
                return 0;
            }
    }
    return 1;
}

// Builds the parameter table (and the encodings' small state) without the
// four big buffers.
static void model_build(model_t *m, const model_config *cfg) {
    char err[256];  // callers check a configuration first (model_config_check): this is their bug
    if (!model_config_check(cfg, err, sizeof err)) die_runtime("internal: a model built from an unchecked configuration: %s", err);
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->attn_chunk = ATTN_CHUNK;
    const model_config *c = &m->cfg;
    const pe_ops *abs, *rel;
    pe_parse_spec(c->pe, &abs, &rel, err, sizeof err);
    size_t V = c->vocab, C = c->d_model, L = c->layers;
    float std = 0.02f, std_out = 0.02f / sqrtf(2.0f * (float)L);
    param_table *t = &m->tab;
    m->wte = param_add(t, "wte", size_mul(V, C, "embedding"), 1, INIT_NORMAL, std);
    m->ln1w = param_add(t, "ln1w", L * C, 0, INIT_ONE, 0);
    m->ln1b = param_add(t, "ln1b", L * C, 0, INIT_ZERO, 0);
    m->qkvw = param_add(t, "qkvw", size_mul(L * 3 * C, C, "qkv weights"), 1, INIT_NORMAL, std);
    m->qkvb = param_add(t, "qkvb", L * 3 * C, 0, INIT_ZERO, 0);
    m->projw = param_add(t, "projw", size_mul(L * C, C, "projection"), 1, INIT_NORMAL, std_out);
    m->projb = param_add(t, "projb", L * C, 0, INIT_ZERO, 0);
    m->ln2w = param_add(t, "ln2w", L * C, 0, INIT_ONE, 0);
    m->ln2b = param_add(t, "ln2b", L * C, 0, INIT_ZERO, 0);
    m->fcw = param_add(t, "fcw", size_mul(L * 4 * C, C, "MLP weights"), 1, INIT_NORMAL, std);
    m->fcb = param_add(t, "fcb", L * 4 * C, 0, INIT_ZERO, 0);
    m->fcprojw = param_add(t, "fcprojw", size_mul(L * C, 4 * C, "MLP weights"), 1, INIT_NORMAL, std_out);
    m->fcprojb = param_add(t, "fcprojb", L * C, 0, INIT_ZERO, 0);
    m->lnfw = param_add(t, "lnfw", C, 0, INIT_ONE, 0);
    m->lnfb = param_add(t, "lnfb", C, 0, INIT_ZERO, 0);
    const pe_ops *ops[PE_SLOTS] = {abs, rel};
    for (int i = 0; i < PE_SLOTS; i++) {
        if (!ops[i]) continue;
        pe_resolve(&m->pe[i], ops[i], &m->cfg, err, sizeof err);  // checked above
        if (ops[i]->init) ops[i]->init(&m->pe[i], t);
        for (int k = 0; k < PE_MAX_TENSORS; k++) m->pe[i].off[k] = t->t[m->pe[i].tensor[k]].offset;
    }
}

size_t model_param_count(const model_config *cfg) {
    model_t m;
    model_build(&m, cfg);
    size_t n = m.tab.total;
    model_free(&m);
    return n;
}

void model_create(model_t *m, const model_config *cfg) {
    model_build(m, cfg);
    size_t n = m->tab.total;
    size_mul(n, 4 * sizeof(float), "the model");
    m->params = xcalloc(n, sizeof(float));
    m->grads = xcalloc(n, sizeof(float));
    m->m = xcalloc(n, sizeof(float));
    m->v = xcalloc(n, sizeof(float));
}

void model_free(model_t *m) {
    for (int i = 0; i < PE_SLOTS; i++)
        if (m->pe[i].ops && m->pe[i].ops->free) m->pe[i].ops->free(&m->pe[i]);
    free(m->params);
    free(m->grads);
    free(m->m);
    free(m->v);
    memset(m, 0, sizeof *m);
}

void model_init_weights(model_t *m, unsigned long long seed) {
    rng_t r = {seed * 0x2545F4914F6CDD1Dull + 1};
    param_init(&m->tab, m->params, &r);
}

size_t model_num_params(const model_t *m) { return m->tab.total; }

int model_max_eval_ctx(const model_t *m) {
    int most = m->cfg.rand_pos > 0 ? m->cfg.rand_pos : INT_MAX;  // positions are drawn from [0, rand_pos)
    for (int i = 0; i < PE_SLOTS; i++)
        if (m->pe[i].ops && m->pe[i].ops->max_eval_ctx) {
            int n = m->pe[i].ops->max_eval_ctx(&m->pe[i]);
            most = n < most ? n : most;
        }
    return most;
}

static int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

// The activation buffers of model_acts and their sizes in floats, for a
// batch (B, T): one table that both the allocation and the memory estimate
// read. Returns the number of entries.
typedef struct {
    float **slot;
    size_t n;
} acts_buffer;

// With m NULL only the slots are listed (every size 0): what freeing needs.
static int acts_layout(model_acts *a, const model_t *m, int B, int T, int training, acts_buffer *out) {
    static const model_config none;
    const model_config *c = m ? &m->cfg : &none;
    size_t BT = size_mul((size_t)B, (size_t)T, "batch x context");
    size_t C = c->d_model, V = c->vocab, NH = c->heads;
    size_t L = training ? (size_t)c->layers : 1;  // evaluation reuses one layer's buffers
    size_t BTC = size_mul(BT, C, "activations"), LBTC = size_mul(L, BTC, "activations");
    int k = 0;
#define BUF(field, count) out[k++] = (acts_buffer){&a->field, (count)}
    BUF(encoded, BTC);
    BUF(ln1, LBTC);
    BUF(ln1_mean, L * BT);
    BUF(ln1_rstd, L * BT);
    BUF(qkv, size_mul(3, LBTC, "activations"));
    if (training && m && m->attn_fused)
        BUF(att, size_mul(2 * L * NH, BT, "attention row statistics"));
    else if (training)
        BUF(att, size_mul(size_mul(L * NH, BT, "attention"), (size_t)T, "attention weights (B*heads*ctx*ctx)"));
    BUF(atty, LBTC);
    BUF(res2, LBTC);
    BUF(ln2, LBTC);
    BUF(ln2_mean, L * BT);
    BUF(ln2_rstd, L * BT);
    BUF(fch, size_mul(4, LBTC, "activations"));
    BUF(fch_gelu, 4 * LBTC);
    BUF(res3, LBTC);
    BUF(lnf, BTC);
    BUF(lnf_mean, BT);
    BUF(lnf_rstd, BT);
    BUF(logits, size_mul(BT, V, "logits"));
    BUF(probs, BT * V);
    BUF(scratch, size_mul((size_t)max_threads(), attn_scratch_floats(T, m ? m->attn_chunk : 0), "attention scratch"));
    if (training) {
        BUF(dres, BTC);
        BUF(dln, BTC);
        BUF(datty, BTC);
        BUF(dfch, 4 * BTC);
        BUF(dfch_gelu, 4 * BTC);
        BUF(dqkv, 3 * BTC);
        BUF(dlogits, BT * V);
    }
#undef BUF
    return k;
}

enum { ACTS_MAX_BUFFERS = 32 };

// Bytes model_acts_alloc takes for (B, T), plus the encodings' tables, plus
// for training the weights, gradients and both AdamW moments (4 floats per
// parameter: calloc'd pages are not counted as used until first written,
// so MemAvailable does not show them yet).
static double run_bytes(const model_t *m, int B, int T, int training) {
    model_acts a;
    acts_buffer buf[ACTS_MAX_BUFFERS];
    int n = acts_layout(&a, m, B, T, training, buf);
    double bytes = 0;
    for (int i = 0; i < n; i++) bytes += (double)buf[i].n * sizeof(float);
    for (int i = 0; i < PE_SLOTS; i++)
        if (m->pe[i].ops && m->pe[i].ops->table_floats) bytes += (double)m->pe[i].ops->table_floats(&m->pe[i], T, m->attn_chunk) * sizeof(float);
    for (int i = 0; i < PE_SLOTS; i++)
        if (training && !m->attn_fused && m->pe[i].ops && m->pe[i].ops->kept_floats)
            bytes += (double)m->pe[i].ops->kept_floats(&m->pe[i], B, T) * sizeof(float);
    if (training) bytes += 4.0 * (double)m->tab.total * sizeof(float);
    return bytes;
}

// 1 when need bytes fit in the memory available now; else 0 with the message.
static int fits(const model_t *m, int B, int T, int training, double need, const char *what, char *err, size_t cap) {
    double have = mem_available_bytes();
    if (have < 0 || need <= have) return 1;
    const double mib = 1024.0 * 1024.0;
    snprintf(err, cap, "%s at batch %d x ctx %d needs about %.0f MiB (%s), more than the %.0f MiB of memory available; %s",
             training ? "training" : "evaluation", B, T, need / mib, what, have / mib,
             !training ? "evaluate a shorter length or a smaller model"
             : m->attn_fused ? "lower --batch or --ctx, or use a smaller model"
                             : "try --attn-kernel fused (it keeps no ctx x ctx attention weights), lower --batch or --ctx, or use a smaller model");
    return 0;
}

int model_fits_in_memory(const model_t *m, int B, int T, int training, char *err, size_t cap) {
    return fits(m, B, T, training, run_bytes(m, B, T, training),
                training ? "activations, weights, gradients, AdamW moments" : "activations", err, cap);
}

// run_bytes of a model built only to be measured. A size too large even to
// count ends the run inside run_bytes (a checked product refuses it): the
// model is freed first, so that the refusal leaks nothing (the sanitizer
// build's exit 23 before).
static double plan_bytes(model_t *m, int B, int T, int training) {
    jmp_buf here, *outer = die_jump;
    int status = setjmp(here);
    if (status) {
        die_jump = outer;
        model_free(m);
        if (outer) longjmp(*outer, status);
        exit(status);
    }
    die_jump = &here;
    double bytes = run_bytes(m, B, T, training);
    die_jump = outer;
    return bytes;
}

int model_plan_fits(const model_config *cfg, int attn_fused, int B, int T, int training, double other_bytes,
                    const char *other_what, char *err, size_t cap) {
    model_t m;
    model_build(&m, cfg);
    m.attn_fused = attn_fused;
    if (!training) B = 1;
    double need = plan_bytes(&m, B, T, training) + other_bytes;
    if (!training) need += (double)m.tab.total * sizeof(float);  // the weights; run_bytes counts them when training
    char what[256];
    snprintf(what, sizeof what, "%s%s%s", training ? "activations, weights, gradients, AdamW moments" : "activations, weights",
             other_what && other_bytes > 0 ? ", " : "", other_what && other_bytes > 0 ? other_what : "");
    int ok = fits(&m, B, T, training, need, what, err, cap);
    model_free(&m);
    return ok;
}

void model_acts_alloc(model_acts *a, const model_t *m, int B, int T, int training) {
    memset(a, 0, sizeof *a);
    a->B = B;
    a->T = T;
    a->training = training;
    a->chunk = m->attn_chunk;
    a->fused = m->attn_fused;
    acts_buffer buf[ACTS_MAX_BUFFERS];
    int n = acts_layout(a, m, B, T, training, buf);
    for (int i = 0; i < n; i++) *buf[i].slot = xmalloc(size_mul(buf[i].n, sizeof(float), "activations"));
}

void model_acts_free(model_acts *a) {
    acts_buffer buf[ACTS_MAX_BUFFERS];
    int n = acts_layout(a, NULL, a->B, a->T, a->training, buf);
    for (int i = 0; i < n; i++) free(*buf[i].slot);
    free(a->pos);
    memset(a, 0, sizeof *a);
}

void model_draw_positions(const model_t *m, model_acts *a, unsigned long long seed, unsigned long long key) {
    int MAX = m->cfg.rand_pos, T = a->T;
    if (MAX <= 0) return;
    if (T > MAX) die_runtime("internal: %d positions asked of --rand-pos %d", T, MAX);
    if (!a->pos) a->pos = xmalloc(sizeof(int) * (size_t)a->B * T);
    for (int b = 0; b < a->B; b++) {
        // selection sampling (Knuth's algorithm S): each of [0, MAX) in turn is
        // kept with probability (still needed)/(still left), so the subset comes out sorted
        unsigned long long row = (unsigned long long)a->pos_row0 + (unsigned long long)b;  // in the global batch
        rng_t r = {seed * 0x9E3779B97F4A7C15ULL ^ (key * 0xBF58476D1CE4E5B9ULL + row + 1)};
        int *p = a->pos + (size_t)b * T, got = 0;
        for (int x = 0; x < MAX && got < T; x++)
            if (rng_below(&r, (unsigned long long)(MAX - x)) < (unsigned long long)(T - got)) p[got++] = x;
    }
}

#define PROF(op, stmt)                                                  \
    do {                                                                \
        double prof_t0_ = m->prof.enabled ? now_seconds() : 0.0;        \
        stmt;                                                           \
        if (m->prof.enabled) m->prof.seconds[op] += now_seconds() - prof_t0_; \
    } while (0)

#define P(m, idx) ((m)->params + (m)->tab.t[(m)->idx].offset)
#define G(m, idx) ((m)->grads + (m)->tab.t[(m)->idx].offset)

// The data layer hands the model only tokens of its vocabulary (a shard's
// are checked when it is opened): one outside it here is a bug, caught before
// it indexes the embedding.
static void check_tokens(const model_t *m, const int *tokens, const int *targets, size_t n) {
    int V = m->cfg.vocab;
    for (size_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= V)
            die_runtime("internal: token %d at position %zu is outside the vocabulary [0, %d)", tokens[i], i, V);
        if (targets && (targets[i] < -1 || targets[i] >= V))
            die_runtime("internal: target %d at position %zu is outside the vocabulary [0, %d)", targets[i], i, V);
    }
}

// What the encodings' per-layer hooks are told about a batch of these activations.
static pe_batch batch_of(const model_t *m, const model_acts *a) {
    return (pe_batch){a->pos, a->B, a->T, a->pos ? m->cfg.rand_pos : a->T, a->chunk, a->training,
                      a->training && !a->fused};
}

double model_forward(model_t *m, model_acts *a, const int *tokens, const int *targets, const int *seg) {
    const model_config *c = &m->cfg;
    const int B = a->B, T = a->T, C = c->d_model, L = c->layers, V = c->vocab;
    const size_t BT = (size_t)B * T, BTC = BT * C;
    check_tokens(m, tokens, targets, BT);
    // x = E[tok] + P(t)
    const float *wte = P(m, wte);
    for (size_t i = 0; i < BT; i++) memcpy(a->encoded + i * C, wte + (size_t)tokens[i] * C, sizeof(float) * C);
    if (m->pe[PE_ABS].ops) PROF(PROF_ENCODING, m->pe[PE_ABS].ops->input_forward(&m->pe[PE_ABS], m->params, a->encoded, B, T, a->pos));
    pe_t *rel = m->pe[PE_REL].ops ? &m->pe[PE_REL] : NULL;
    const pe_batch bt = batch_of(m, a);
    const float *x = a->encoded;
    if (a->hidden) memcpy(a->hidden, x, sizeof(float) * BTC);
    for (int l = 0; l < L; l++) {
        size_t s = a->training ? (size_t)l : 0;  // evaluation reuses one layer's buffers
        float *ln1 = a->ln1 + s * BTC, *qkv = a->qkv + s * 3 * BTC, *atty = a->atty + s * BTC;
        float *res2 = a->res2 + s * BTC, *ln2 = a->ln2 + s * BTC, *res3 = a->res3 + s * BTC;
        float *fch = a->fch + s * 4 * BTC, *fch_gelu = a->fch_gelu + s * 4 * BTC;
        float *att = !a->training ? NULL : a->att + s * (size_t)c->heads * BT * (a->fused ? 2 : T);
        PROF(PROF_LAYERNORM, layernorm_forward(ln1, a->ln1_mean + s * BT, a->ln1_rstd + s * BT, x,
                              P(m, ln1w) + (size_t)l * C, P(m, ln1b) + (size_t)l * C, BT, C));
        PROF(PROF_MATMUL, matmul_forward(qkv, ln1, P(m, qkvw) + (size_t)l * 3 * C * C, P(m, qkvb) + (size_t)l * 3 * C, BT, C, 3 * C));
        if (rel && rel->ops->qk_forward) PROF(PROF_ENCODING, rel->ops->qk_forward(rel, qkv, B, T, a->pos, a->eval_len));
        if (rel && rel->ops->layer_begin) PROF(PROF_ENCODING, rel->ops->layer_begin(rel, m->params, l, &bt));
        attn_dims d = {B, T, C, c->heads, c->causal, seg, rel, m->params, l, a->chunk, a->pos,
                       a->attn_stats ? a->attn_stats + (size_t)l * c->heads * ATTN_NSTAT : NULL};
        if (a->fused) PROF(PROF_ATTENTION, attn_fused_forward(atty, att, qkv, &d, a->scratch));
        else PROF(PROF_ATTENTION, attn_forward(atty, att, qkv, &d, a->scratch));
        // x = x + W_o · MHA(LN1(x)) + b_o
        PROF(PROF_MATMUL, matmul_forward(res2, atty, P(m, projw) + (size_t)l * C * C, P(m, projb) + (size_t)l * C, BT, C, C));
        PROF(PROF_OTHER, residual_forward(res2, res2, x, BTC));
        // x = x + W_2 · gelu(W_1 · LN2(x) + b_1) + b_2
        PROF(PROF_LAYERNORM, layernorm_forward(ln2, a->ln2_mean + s * BT, a->ln2_rstd + s * BT, res2,
                              P(m, ln2w) + (size_t)l * C, P(m, ln2b) + (size_t)l * C, BT, C));
        PROF(PROF_MATMUL, matmul_forward(fch, ln2, P(m, fcw) + (size_t)l * 4 * C * C, P(m, fcb) + (size_t)l * 4 * C, BT, C, 4 * C));
        PROF(PROF_GELU, gelu_forward(fch_gelu, fch, 4 * BTC));
        PROF(PROF_MATMUL, matmul_forward(res3, fch_gelu, P(m, fcprojw) + (size_t)l * 4 * C * C, P(m, fcprojb) + (size_t)l * C, BT, 4 * C, C));
        PROF(PROF_OTHER, residual_forward(res3, res3, res2, BTC));
        x = res3;
        if (a->hidden) memcpy(a->hidden + (size_t)(l + 1) * BTC, x, sizeof(float) * BTC);
    }
    PROF(PROF_LAYERNORM, layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, x, P(m, lnfw), P(m, lnfb), BT, C));
    // tied: logits = LN_f(x) · Eᵀ
    PROF(PROF_MATMUL, matmul_forward(a->logits, a->lnf, wte, NULL, BT, C, V));
    if (!targets) return 0.0;
    size_t count;
    double loss;
    PROF(PROF_CROSSENTROPY, loss = crossentropy_forward(a->probs, a->logits, targets, BT, V, &count));
    a->n_targets = count;
    return loss;
}

void model_backward(model_t *m, model_acts *a, const int *tokens, const int *targets, const int *seg) {
    if (!a->training) die_runtime("internal: backward on an evaluation activation set");
    const model_config *c = &m->cfg;
    const int B = a->B, T = a->T, C = c->d_model, L = c->layers, V = c->vocab;
    const size_t BT = (size_t)B * T, BTC = BT * C;
    PROF(PROF_CROSSENTROPY, crossentropy_backward(a->dlogits, a->probs, targets, BT, V, a->n_targets, 1.0f));
    // logits = lnf · wteᵀ
    PROF(PROF_MATMUL, matmul_backward(a->dln, G(m, wte), NULL, a->dlogits, a->lnf, P(m, wte), BT, C, V));
    const float *xlast = a->res3 + (size_t)(L - 1) * BTC;
    ops_zero(a->dres, BTC);
    PROF(PROF_LAYERNORM, layernorm_backward(a->dres, G(m, lnfw), G(m, lnfb), a->dln, xlast, P(m, lnfw), a->lnf_mean, a->lnf_rstd, BT, C));
    pe_t *rel = m->pe[PE_REL].ops ? &m->pe[PE_REL] : NULL;
    const pe_batch bt = batch_of(m, a);
    for (int l = L - 1; l >= 0; l--) {
        const float *x = l ? a->res3 + (size_t)(l - 1) * BTC : a->encoded;  // the layer's input
        float *ln1 = a->ln1 + (size_t)l * BTC, *qkv = a->qkv + (size_t)l * 3 * BTC, *atty = a->atty + (size_t)l * BTC;
        float *res2 = a->res2 + (size_t)l * BTC, *ln2 = a->ln2 + (size_t)l * BTC;
        float *fch = a->fch + (size_t)l * 4 * BTC, *fch_gelu = a->fch_gelu + (size_t)l * 4 * BTC;
        float *att = a->att + (size_t)l * c->heads * BT * (a->fused ? 2 : T);
        // res3 = res2 + fcproj(gelu(fc(LN2(res2)))): dres flows to res2 unchanged
        PROF(PROF_MATMUL, matmul_backward(a->dfch_gelu, G(m, fcprojw) + (size_t)l * 4 * C * C, G(m, fcprojb) + (size_t)l * C,
                            a->dres, fch_gelu, P(m, fcprojw) + (size_t)l * 4 * C * C, BT, 4 * C, C));
        PROF(PROF_GELU, gelu_backward(a->dfch, fch, a->dfch_gelu, 4 * BTC));
        PROF(PROF_MATMUL, matmul_backward(a->dln, G(m, fcw) + (size_t)l * 4 * C * C, G(m, fcb) + (size_t)l * 4 * C,
                            a->dfch, ln2, P(m, fcw) + (size_t)l * 4 * C * C, BT, C, 4 * C));
        PROF(PROF_LAYERNORM, layernorm_backward(a->dres, G(m, ln2w) + (size_t)l * C, G(m, ln2b) + (size_t)l * C, a->dln, res2,
                               P(m, ln2w) + (size_t)l * C, a->ln2_mean + (size_t)l * BT, a->ln2_rstd + (size_t)l * BT, BT, C));
        // res2 = x + proj(attn(qkv(LN1(x))))
        PROF(PROF_MATMUL, matmul_backward(a->datty, G(m, projw) + (size_t)l * C * C, G(m, projb) + (size_t)l * C,
                            a->dres, atty, P(m, projw) + (size_t)l * C * C, BT, C, C));
        ops_zero(a->dqkv, 3 * BTC);
        attn_dims d = {B, T, C, c->heads, c->causal, seg, rel, m->params, l, a->chunk, a->pos, NULL};
        if (a->fused && rel && rel->ops->layer_begin)  // the recomputed scores need this layer's tables again
            PROF(PROF_ENCODING, rel->ops->layer_begin(rel, m->params, l, &bt));
        if (a->fused) PROF(PROF_ATTENTION, attn_fused_backward(a->dqkv, m->grads, a->datty, att, qkv, &d, a->scratch));
        else PROF(PROF_ATTENTION, attn_backward(a->dqkv, m->grads, a->datty, att, qkv, &d, a->scratch));
        if (rel && rel->ops->layer_end) PROF(PROF_ENCODING, rel->ops->layer_end(rel, m->params, m->grads, l, &bt));
        if (rel && rel->ops->qk_backward) PROF(PROF_ENCODING, rel->ops->qk_backward(rel, a->dqkv, B, T, a->pos, a->eval_len));
        PROF(PROF_MATMUL, matmul_backward(a->dln, G(m, qkvw) + (size_t)l * 3 * C * C, G(m, qkvb) + (size_t)l * 3 * C,
                            a->dqkv, ln1, P(m, qkvw) + (size_t)l * 3 * C * C, BT, C, 3 * C));
        PROF(PROF_LAYERNORM, layernorm_backward(a->dres, G(m, ln1w) + (size_t)l * C, G(m, ln1b) + (size_t)l * C, a->dln, x,
                               P(m, ln1w) + (size_t)l * C, a->ln1_mean + (size_t)l * BT, a->ln1_rstd + (size_t)l * BT, BT, C));
    }
    // x = E[tok] + P(t)
    if (m->pe[PE_ABS].ops && m->pe[PE_ABS].ops->input_backward) PROF(PROF_ENCODING, m->pe[PE_ABS].ops->input_backward(&m->pe[PE_ABS], m->grads, a->dres, B, T, a->pos));
    float *dwte = G(m, wte);
    for (size_t i = 0; i < BT; i++) {
        float *g = dwte + (size_t)tokens[i] * C;
        const float *d = a->dres + i * C;
        for (int k = 0; k < C; k++) g[k] += d[k];
    }
}

void model_zero_grad(model_t *m) { ops_zero(m->grads, m->tab.total); }

float lr_schedule(float lr, int warmup, long step, long total) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    long span = total - 1 - warmup;
    if (span <= 0) return lr;
    double progress = (double)(step - warmup) / (double)span;
    if (progress > 1.0) progress = 1.0;
    double lo = lr / 10.0;
    return (float)(lo + 0.5 * (lr - lo) * (1.0 + cos(M_PI * progress)));
}

// One tensor's AdamW update, vectorised: the hyperparameters in locals (read
// through hp the compiler must load them again after every store to p; the
// Makefile's -fno-math-errno lets sqrtf vectorise). The same operations in the
// same order as the scalar loop, each correctly rounded in a lane as in a
// scalar: the same bits.
static void adamw_tensor(float *restrict p, const float *restrict g, float *restrict mm, float *restrict vv, size_t n,
                         float gscale, float beta1, float beta2, float lr, float decay, float eps, float bc1, float bc2) {
#pragma omp parallel for simd schedule(static) if (parallel : par_worth(PAR_NS_ADAMW * n))
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * gscale;
        mm[i] = beta1 * mm[i] + (1.0f - beta1) * gi;
        vv[i] = beta2 * vv[i] + (1.0f - beta2) * gi * gi;
        float mhat = mm[i] / bc1, vhat = vv[i] / bc2;
        // decoupled weight decay (Loshchilov & Hutter), applied as PyTorch does
        p[i] -= lr * decay * p[i];
        p[i] -= lr * mhat / (sqrtf(vhat) + eps);
    }
}

float model_adamw_step(model_t *m, const adamw_hparams *hp, float clip, long t) {
    double t0 = m->prof.enabled ? now_seconds() : 0.0;
    float norm = (float)sqrt(ops_sum_squares(m->grads, m->tab.total));
    float gscale = (clip > 0.0f && norm > clip) ? clip / (norm + 1e-6f) : 1.0f;
    float bc1 = 1.0f - powf(hp->beta1, (float)t), bc2 = 1.0f - powf(hp->beta2, (float)t);
    for (int k = 0; k < m->tab.n; k++) {
        const tensor_info *ti = &m->tab.t[k];
        size_t o = ti->offset;
        adamw_tensor(m->params + o, m->grads + o, m->m + o, m->v + o, ti->size, gscale, hp->beta1, hp->beta2, hp->lr,
                     ti->decay ? hp->wd : 0.0f, hp->eps, bc1, bc2);
    }
    if (m->prof.enabled) m->prof.seconds[PROF_OPTIMISER] += now_seconds() - t0;
    return norm;
}
