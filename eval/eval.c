// eval.c — see eval.h.
#include "eval.h"

#include "../core/dist.h"
#include "../core/files.h"


#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// Evaluation batches hold about this many tokens, whatever L is.
#define EVAL_BATCH_TOKENS 4096

size_t eval_scorable_windows(const model_t *m, const data_t *d, int L, size_t max_tokens, char *err, size_t errlen) {
    if (L > model_max_eval_ctx(m)) {
        if (m->cfg.rand_pos)  // the positions were drawn from [0, MAX): MAX bounds every encoding, not the ctx
            snprintf(err, errlen,
                     "--rand-pos %d: the model's positions were drawn from [0, %d), so ctx=%d cannot be evaluated; train "
                     "with a larger --rand-pos to evaluate longer", m->cfg.rand_pos, m->cfg.rand_pos, L);
        else
            snprintf(err, errlen,
                     "--pe %s has no positions past %d (the training ctx), so ctx=%d cannot be evaluated; use a relative "
                     "or sinusoidal encoding to evaluate longer", m->cfg.pe, model_max_eval_ctx(m), L);
        return 0;
    }
    return data_val_windows(d, L, max_tokens, err, errlen);
}

// The loss over what the processes scored, into r: a refusal when nothing
// carried a target, a failure when it is not a number.
static void eval_finish(eval_result *r, double sum, double count, double t0) {
    double both[2] = {sum, count};
    dist_sum_doubles(both, 2);
    sum = both[0], count = both[1];
    if (count == 0) {  // e.g. --attn bidir with windows too short to hold a masked position
        snprintf(r->err, sizeof r->err, "no position of the validation windows at ctx=%d carries a target, so there is nothing to score; evaluate a longer length", r->L);
        return;
    }
    double loss = sum / count;
    if (!isfinite(loss)) {  // e.g. xPos's scales overflow a float far past their --xpos-scale-base
        r->nonfinite = 1;
        snprintf(r->err, sizeof r->err, "the loss at ctx=%d is not a number (%g): the model's scores overflow at this "
                 "length, so there is no perplexity to report", r->L, loss);
        return;
    }
    r->ok = 1;
    r->tokens = (size_t)count;
    r->loss = loss;
    r->ppl = exp(r->loss);
    r->seconds = now_seconds() - t0;
}

// The rows of one forward pass and what it scored.
typedef struct {
    model_acts a;
    int B, T, rows;
    int *tok, *tgt, *seg;
    double sum, count;
    unsigned long long batches;
} eval_batch;

static int eval_batch_open(eval_batch *e, model_t *m, int B, int T, int eval_len, char *err, size_t errlen) {
    memset(e, 0, sizeof *e);
    if (!model_fits_in_memory(m, B, T, 0, err, errlen)) return 0;
    model_acts_alloc(&e->a, m, B, T, 0);
    e->a.eval_len = eval_len;  // RoPE's context extension at this length, for this evaluation only
    e->B = B, e->T = T;
    size_t BT = (size_t)B * T;
    e->tok = xmalloc(sizeof(int) * BT), e->tgt = xmalloc(sizeof(int) * BT), e->seg = xmalloc(sizeof(int) * BT);
    return 1;
}

// Scores the rows filled so far (the rest carry no target) and empties the batch.
static void eval_batch_run(eval_batch *e, model_t *m, unsigned long long key) {
    if (!e->rows) return;
    size_t BT = (size_t)e->B * e->T, n = 0;
    for (size_t i = (size_t)e->rows * e->T; i < BT; i++) e->tok[i] = 0, e->tgt[i] = -1, e->seg[i] = 0;
    for (size_t i = 0; i < BT; i++) n += e->tgt[i] >= 0;
    model_draw_positions(m, &e->a, EVAL_POSITIONS_SEED, key);  // --rand-pos: as in training, drawn per batch
    double loss = model_forward(m, &e->a, e->tok, e->tgt, e->seg);
    if (n) e->sum += loss * (double)n;
    e->count += (double)n;
    e->rows = 0;
    e->batches++;
}

static void eval_batch_close(eval_batch *e) {
    free(e->tok);
    free(e->tgt);
    free(e->seg);
    model_acts_free(&e->a);
}

size_t eval_window_stride(int W) { return W >= 8 ? (size_t)W / 8 : 1; }

void eval_perplexity_window(model_t *m, const data_t *d, int L, int W, size_t max_tokens, double *attn_stats, eval_result *r) {
    memset(r, 0, sizeof *r);
    r->L = L;
    size_t windows = eval_scorable_windows(m, d, L, max_tokens, r->err, sizeof r->err);
    if (!windows) return;
    if (W > 0 && W < L && !m->cfg.causal) {
        snprintf(r->err, sizeof r->err, "--eval-window scores each next-token target with the tokens before it, "
                 "which a bidirectional model does not predict; use it with --attn causal");
        return;
    }
    int win = W > 0 && W < L;
    int T = win ? W : L;
    double t0 = now_seconds();
    int B = EVAL_BATCH_TOKENS / T;
    if (B < 1) B = 1;
    if (!win && (size_t)B > windows) B = (int)windows;
    eval_batch e;
    if (!eval_batch_open(&e, m, B, T, L, r->err, sizeof r->err)) return;
    size_t n_stats = (size_t)m->cfg.layers * m->cfg.heads * ATTN_NSTAT;
    if (attn_stats) memset(attn_stats, 0, sizeof(double) * n_stats);
    e.a.attn_stats = attn_stats;
    int *row_tok = xmalloc(sizeof(int) * L), *row_tgt = xmalloc(sizeof(int) * L), *row_seg = xmalloc(sizeof(int) * L);
    size_t S = eval_window_stride(T);
    // MPI: the windows are dealt out to the processes in turn, a batch's worth at a time
    size_t R = (size_t)dist_size(), chunk = win ? 1 : (size_t)B;
    for (size_t w0 = (size_t)dist_rank() * chunk; w0 < windows; w0 += chunk * R) {
        for (size_t w = w0; w < w0 + chunk && w < windows; w++) {
            if (!win) {
                size_t o = (size_t)e.rows++ * L;
                data_val_row(d, L, w, e.tok + o, e.tgt + o, e.seg + o);
                continue;
            }
            // Sub-windows of W every S tokens; each scores the targets after the
            // previous one's last, so a target has its whole context within the
            // first W tokens, and from W-S+1 to W tokens of context after them.
            data_val_row(d, L, w, row_tok, row_tgt, row_seg);
            size_t scored = 0;
            for (size_t s0 = 0;; s0 += S) {
                if (s0 + (size_t)W > (size_t)L) s0 = (size_t)L - (size_t)W;
                size_t o = (size_t)e.rows++ * W;
                memcpy(e.tok + o, row_tok + s0, sizeof(int) * W);
                memcpy(e.seg + o, row_seg + s0, sizeof(int) * W);
                for (int t = 0; t < W; t++) e.tgt[o + t] = s0 + t >= scored ? row_tgt[s0 + t] : -1;
                scored = s0 + (size_t)W;
                if (e.rows == B) eval_batch_run(&e, m, e.batches + 1);
                if (scored == (size_t)L) break;
            }
        }
        if (!win) eval_batch_run(&e, m, w0 + 1);  // the key the positions were always drawn with
    }
    if (win) eval_batch_run(&e, m, e.batches + 1);
    free(row_tok);
    free(row_tgt);
    free(row_seg);
    double sum = e.sum, count = e.count;
    eval_batch_close(&e);
    if (attn_stats) dist_sum_doubles(attn_stats, n_stats);
    r->window = win ? W : 0;
    eval_finish(r, sum, count, t0);
}

static void put_u32(FILE *f, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    fwrite(b, 1, 4, f);  // a short write shows in ferror, which atomic_commit checks
}

int eval_write_rows(const model_t *m, const data_t *d, const int *lengths, int n, size_t max_tokens, const char *path,
                    char *err, size_t errlen) {
    size_t *windows = xmalloc(sizeof(size_t) * (size_t)(n > 0 ? n : 1));
    int kept = 0;
    char why[256];
    for (int i = 0; i < n; i++)
        if ((windows[i] = eval_scorable_windows(m, d, lengths[i], max_tokens, why, sizeof why))) kept++;
    atomic_file af;
    if (atomic_open(&af, path, "--eval-rows", err, errlen) != 0) return free(windows), -1;
    fwrite("PELABROW", 1, 8, af.f);
    put_u32(af.f, 1);
    put_u32(af.f, (uint32_t)kept);
    for (int i = 0; i < n; i++) {
        if (!windows[i]) continue;
        int L = lengths[i];
        put_u32(af.f, (uint32_t)L);
        put_u32(af.f, (uint32_t)windows[i]);
        int *rows = xmalloc(sizeof(int) * 3 * (size_t)L * windows[i]);
        int *tok = rows, *tgt = rows + (size_t)L * windows[i], *seg = rows + 2 * (size_t)L * windows[i];
        for (size_t w = 0; w < windows[i]; w++)
            data_val_row(d, L, w, tok + w * L, tgt + w * L, seg + w * L);
        for (size_t k = 0; k < 3 * (size_t)L * windows[i]; k++) put_u32(af.f, (uint32_t)rows[k]);
        free(rows);
    }
    free(windows);
    return atomic_commit(&af, "--eval-rows", err, errlen);
}

void eval_perplexity(model_t *m, const data_t *d, int L, size_t max_tokens, eval_result *r) {
    eval_perplexity_window(m, d, L, 0, max_tokens, NULL, r);
}

int eval_rows_all_right(const float *logits, const int *targets, int B, int T, int V, int *scored) {
    int right = 0;
    *scored = 0;
    for (int b = 0; b < B; b++) {
        int any = 0, all = 1;
        for (int t = 0; t < T && all; t++) {
            int y = targets[(size_t)b * T + t];
            if (y < 0) continue;
            const float *z = logits + ((size_t)b * T + t) * V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (z[v] > z[best]) best = v;
            any = 1, all = best == y;
        }
        for (int t = 0; t < T && !any; t++) any = targets[(size_t)b * T + t] >= 0;
        *scored += any;
        right += any && all;
    }
    return right;
}

void eval_task(model_t *m, const data_t *d, task_range r, int count, unsigned long long stream, task_result *res) {
    memset(res, 0, sizeof *res);
    res->r = r;
    int L = task_len_at(d->task, r.hi, d->task_ignore);
    if (L > model_max_eval_ctx(m)) {
        snprintf(res->err, sizeof res->err, "--pe %s has no positions past %d, and instances of size %d take %d tokens",
                 m->cfg.pe, model_max_eval_ctx(m), r.hi, L);
        return;
    }
    int B = EVAL_BATCH_TOKENS / L;
    B = B < 1 ? 1 : B > count ? count : B;
    if (!model_fits_in_memory(m, B, L, 0, res->err, sizeof res->err)) return;
    model_acts a;
    model_acts_alloc(&a, m, B, L, 0);
    a.eval_len = L;
    size_t BT = (size_t)B * L;
    int *tok = xmalloc(sizeof(int) * BT), *tgt = xmalloc(sizeof(int) * BT), *seg = xmalloc(sizeof(int) * BT);
    for (int i0 = 0; i0 < count; i0 += B) {
        int nb = count - i0 < B ? count - i0 : B;
        for (int b = 0; b < B; b++) {
            size_t o = (size_t)b * L;
            // each instance from its own stream: the same instances whatever B is
            rng_t g = {(d->seed + 1) * 0xA24BAED4963EE407ull + stream * 0x9FB21C651E98DF25ull + (unsigned long long)(i0 + b)};
            if (b < nb) data_task_row(d, &g, r, L, tok + o, tgt + o, seg + o);
            else
                for (int t = 0; t < L; t++) tok[o + t] = TT_PAD, tgt[o + t] = -1, seg[o + t] = -1 - t;
        }
        model_draw_positions(m, &a, EVAL_POSITIONS_SEED, (unsigned long long)i0 + 1);
        model_forward(m, &a, tok, NULL, seg);
        int scored;
        res->right += eval_rows_all_right(a.logits, tgt, nb, L, m->cfg.vocab, &scored);
        res->n += scored;
    }
    free(tok), free(tgt), free(seg);
    model_acts_free(&a);
    res->ok = 1;
    res->acc = res->n ? (double)res->right / res->n : 0.0;
}

void eval_probe_predictions(model_t *m, const data_t *d, const cats_example *probe, int n, int *preds) {
    const int T = CATS_MAX_EXAMPLE + 1, B = 50, V = m->cfg.vocab;
    model_acts a;
    model_acts_alloc(&a, m, B, T, 0);
    int tok[B * T], seg[B * T];
    for (int i0 = 0; i0 < n; i0 += B) {
        for (int b = 0; b < B; b++) {
            const cats_example *ex = &probe[i0 + b < n ? i0 + b : n - 1];
            for (int t = 0; t < T; t++) {
                int inside = t < ex->len;
                tok[b * T + t] = inside ? ex->tokens[t] : 0;
                seg[b * T + t] = inside ? 0 : -1 - t;
            }
            if (!d->causal) tok[b * T + ex->answer_pos] = d->mask_token;
        }
        model_draw_positions(m, &a, EVAL_POSITIONS_SEED, (unsigned long long)i0 + 1);
        model_forward(m, &a, tok, NULL, seg);
        for (int b = 0; b < B && i0 + b < n; b++) {
            const cats_example *ex = &probe[i0 + b];
            // causal: the answer is predicted from the slot before it
            int pos = d->causal ? ex->answer_pos - 1 : ex->answer_pos;
            const float *z = a.logits + ((size_t)b * T + pos) * V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (z[v] > z[best]) best = v;
            preds[i0 + b] = best;
        }
    }
    model_acts_free(&a);
}

double eval_order(model_t *m, const data_t *d, int *n) {
    cats_example probe[CATS_PROBE_MAX];
    int np = cats_probe(d, probe);
    int preds[CATS_PROBE_MAX];
    eval_probe_predictions(m, d, probe, np, preds);
    int right = 0;
    for (int i = 0; i < np; i++) right += preds[i] == probe[i].answer;
    *n = np;
    return np ? (double)right / np : 0.0;
}
