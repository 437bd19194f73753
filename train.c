// train.c — ./train: main, the training loop, the evaluations and the
// sample. The options are in cli/options.c; the run (its state, its
// resolution from options or a checkpoint, its save) in run/run.c, its
// signals in run/signals.c, its report (--json, --log, the header) in
// run/report.c; the model (model/), the data (data/) and the evaluation
// (eval/) are libraries.
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/options.h"
#include "core/dist.h"
#include "core/test_hooks.h"
#include "core/startup.h"
#include "eval/eval.h"
#include "eval/probe.h"
#include "eval/viz.h"
#include "model/model.h"
#include "plot/curve.h"
#include "run/report.h"
#include "run/run.h"
#include "run/signals.h"

// On SIGINT/SIGTERM after a step: save (with --save), write --json (marked
// interrupted, without evaluations), say so, exit 128+signal.
static void stop_for_signal(const options *o, const run_t *r, train_report *tr, long step) {
    int sig = dist_size() > 1 ? signals_agreed() : signals_stop();
    const char *name = signal_name(sig);
    tr->stopped_by = sig;
    if (o->save) {
        printf("interrupted by %s after step %ld; saving %s… (a second signal stops at once and keeps the last "
               "checkpoint saved)\n", name, step, o->save);
        fflush(stdout);
        run_save(o, r, tr);
        printf("saved %s; continue with --resume %s\n", o->save, o->save);
    } else {
        printf("interrupted by %s after step %ld; nothing saved (no --save)\n", name, step);
    }
    if (o->json && dist_rank() == 0) {
        static eval_report none;  // large for a stack
        char err[1024];
        if (report_json(o->json, o, &r->m, tr, &none, err, sizeof err) == 0)
            printf("wrote %s: the training so far, marked interrupted, without evaluations\n", o->json);
        else warn_msg("%s", err);
    }
    fflush(stdout);
    dist_finish();
    exit(128 + sig);  // run_release frees the run
}

// A point of the learning curve after `step`: validation loss at the
// training ctx, and the order probe on cats.
static curve_point measure_point(const options *o, run_t *r, long step, double train_loss) {
    curve_point c = {step, train_loss, NAN, -1.0, -1.0};
    eval_result ev;
    size_t tokens = (size_t)o->eval_tokens < CURVE_EVAL_TOKENS ? (size_t)o->eval_tokens : CURVE_EVAL_TOKENS;
    eval_perplexity(&r->m, &r->d, (int)o->ctx, tokens, &ev);
    if (ev.ok) c.val_loss = ev.loss;
    if (data_has(&r->d, CORPUS_ORDER_PROBE)) {
        int n;
        c.order_acc = eval_order(&r->m, &r->d, &n);
    }
    if (data_has(&r->d, CORPUS_TASKS)) {
        task_result t;
        eval_task(&r->m, &r->d, r->d.train_len, o->task_eval < CURVE_TASK_INSTANCES ? (int)o->task_eval : CURVE_TASK_INSTANCES, 0, &t);
        c.task_acc = t.acc;
    }
    return c;
}

// The validation loss has risen when the curve's OVERFIT_POINTS points (or
// more) after its best are all higher and the latest is OVERFIT_RISE times
// the best or more (a plateau's noise is not a rise): said then, the best
// point's step kept (until a later point is lower still).
#define OVERFIT_POINTS 3
#define OVERFIT_RISE 1.01

// The best point of the curve so far, with the point c added: returns the
// points since the best (0: c is the new best).
static int track_best(train_report *tr, const curve_point *c, int rises) {
    if (!isfinite(c->val_loss)) return rises;
    if (!tr->best_step || c->val_loss < tr->best_val) {
        tr->best_step = c->step, tr->best_val = c->val_loss, tr->overfit_step = 0;  // a new best: no rise since
        return 0;
    }
    if (++rises >= OVERFIT_POINTS && c->val_loss >= tr->best_val * OVERFIT_RISE && !tr->overfit_step)
        tr->overfit_step = tr->best_step;
    return rises;
}

// After a point of the curve: a new best is saved beside the checkpoint
// (--keep both|best).
static int note_validation(const options *o, run_t *r, train_report *tr, int rises) {
    rises = track_best(tr, &tr->curve[tr->n_curve - 1], rises);
    char buf[CKPT_PATH_MAX + 16];
    const char *best = o->save && o->keep != KEEP_LAST ? run_best_path(o, buf, sizeof buf) : NULL;
    if (best && !rises && tr->best_step == tr->curve[tr->n_curve - 1].step) run_save_to(o, r, tr, best);
    return rises;
}

// A rise of the validation loss since its best, said after its progress line.
static void say_overfitting(const options *o, const train_report *tr) {
    char buf[CKPT_PATH_MAX + 16];
    const char *best = o->save && o->keep != KEEP_LAST ? run_best_path(o, buf, sizeof buf) : NULL;
    printf("overfitting since step %ld: the validation loss has risen at the %d points after its best, %.4f%s%s\n",
           tr->overfit_step, OVERFIT_POINTS, tr->best_val, best ? "; that model is kept in " : "", best ? best : "");
}

// MPI: the global step from every process's share. Each process's gradient
// is the mean over its targets, so it is weighted by its share of the
// targets before the sum; the loss likewise. A stop signal that reached any
// process stops them all after this step: the processes count each signal,
// and the one they agree on is one that was sent (SIGTERM before SIGINT
// before SIGHUP: a scheduler's stop outranks a keyboard's, which outranks a
// closed terminal), never a mean of their numbers.
static const int by_rank[] = {SIGTERM, SIGINT, SIGHUP};

static double combine_processes(model_t *m, const int *tgt, size_t n, double loss) {
    double mine = 0;
    for (size_t i = 0; i < n; i++) mine += tgt[i] >= 0;
    double v[5] = {mine, mine ? loss * mine : 0.0};
    for (int k = 0; k < 3; k++) v[2 + k] = signals_stop() == by_rank[k];
    dist_sum_doubles(v, 5);
    int agreed = 0;
    for (int k = 2; k >= 0; k--)
        if (v[2 + k] > 0) agreed = by_rank[k];
    signals_set_agreed(agreed);
    if (v[0] == 0) return loss;
    float w = (float)(mine / v[0]);
    for (size_t i = 0; i < m->tab.total; i++) m->grads[i] *= w;
    dist_sum_floats(m->grads, m->tab.total);
    if (signals_agreed()) signals_adopt(signals_agreed());
    return v[1] / v[0];
}

// After training, a stop signal is acted on at fixed points only — after
// the final save, before each evaluation length, before the outputs — and
// by every process alike (under MPI the processes count each signal, as in
// a step's sum, and stop on the one they agree on): never by one process
// alone, and never in the middle of writing a file (the signal thread keeps
// the signals until the last output is written; a second one still exits at
// once, removing the temporary under way). Exits 128+signal; the checkpoint
// was saved before, and no --json is written (the run did not finish).
static void stop_point(const options *o, const char *where) {
    int sig = signals_stop();
    if (dist_size() > 1) {
        double v[3];
        for (int k = 0; k < 3; k++) v[k] = sig == by_rank[k];
        dist_sum_doubles(v, 3);
        sig = 0;
        for (int k = 2; k >= 0; k--)
            if (v[k] > 0) sig = by_rank[k];
        if (sig) signals_adopt(sig);
    }
    if (!sig) return;
    printf("interrupted by %s %s; %s\n", signal_name(sig), where,
           o->save && !o->load ? "the run is saved" : o->load ? "nothing to save" : "nothing saved (no --save)");
    fflush(stdout);
    dist_finish();
    exit(128 + sig);
}

// The progress line warns when the throughput since the last line (over at
// least SLOW_WINDOW_SECONDS) is under 1/SLOW_FACTOR of the run's best so far.
#define SLOW_WINDOW_SECONDS 0.5
#define SLOW_FACTOR 3
// After this much training a run whose remaining time is estimated at
// LONG_RUN_SECONDS or more says so, once.
#define ESTIMATE_AFTER_SECONDS 3.0
#define LONG_RUN_SECONDS 600.0

static void sample_text(const options *o, run_t *r, const char *label, rng_t *rng);

// The training loop, from the run's start step to --stop-at or --steps.
static void train(const options *o, run_t *r, train_report *tr) {
    // A resumed run continues its record: its time and its curve so far.
    const double before = r->st.seconds;
    *tr = (train_report){.steps_done = r->start_step, .seconds = before};
    const int B = (int)o->batch, T = (int)o->ctx;
    long end_step = o->stop_at && o->stop_at < o->steps ? o->stop_at : o->steps;
    size_t points = (size_t)r->st.n_curve + (o->eval_every ? (size_t)((end_step - r->start_step) / o->eval_every + 2) : 0);
    if (points) {
        tr->curve = r->curve = xcalloc(points, sizeof *tr->curve);
        for (int i = 0; i < r->st.n_curve; i++) tr->curve[tr->n_curve++] = r->st.curve[i];
    }
    int rises = 0, overfit_now = 0;  // curve points since the best; the validation loss has just risen
    for (int i = 0; i < tr->n_curve; i++) rises = track_best(tr, &tr->curve[i], rises);
    if (r->start_step >= end_step) return;
    model_t *m = &r->m;
    model_acts_alloc(&r->a, m, B, T, 1);
    r->have_acts = 1;
    size_t BT = (size_t)B * T;
    // Every process draws the whole global batch (R·B rows) from the same
    // stream and trains on its own B rows of it.
    const int R = dist_size(), rank = dist_rank();
    size_t all = BT * R, mine = BT * rank;
    r->tok = xmalloc(sizeof(int) * all), r->tgt = xmalloc(sizeof(int) * all), r->seg = xmalloc(sizeof(int) * all);
    r->a.pos_row0 = B * rank;
    adamw_hparams hp = {o->lr, 0.9f, 0.95f, 1e-8f, o->wd};
    long log_every = o->log_every ? o->log_every : (o->steps >= 10 ? o->steps / 10 : 1);
    // throughput between progress lines, to say when it falls far below this run's best (other processes)
    double best_rate = 0, mark_seconds = 0;
    long mark_done = 0;
    int estimated = 0;  // the estimate of a long run, said once
    const char *save_note = o->save ? " (the last checkpoint written is intact)" : "";
    const test_hooks_t *hk = test_hooks();  // a NaN, a pause per step, a process killed, on cue
    report_log_open(o, r);
    double t0 = now_seconds();
    for (long step = r->start_step; step < end_step; step++) {
        data_next_batch(&r->d, B * R, T, r->tok, r->tgt, r->seg);
        model_draw_positions(m, &r->a, (unsigned long long)o->seed, (unsigned long long)step + 1);  // --rand-pos
        const int *tok = r->tok + mine, *tgt = r->tgt + mine, *seg = r->seg + mine;
        double loss = model_forward(m, &r->a, tok, tgt, seg);
        if (step + 1 == hk->nan_at) loss = NAN;
        model_zero_grad(m);
        model_backward(m, &r->a, tok, tgt, seg);
        if (R > 1) {
            double c0 = now_seconds();
            loss = combine_processes(m, tgt, BT, loss);
            tr->comm_seconds += now_seconds() - c0;
        }
        if (!isfinite(loss))
            die_runtime("non-finite loss (%g) at step %ld; stopped without saving%s; lower --lr or check the data", loss,
                        step + 1, save_note);
        hp.lr = lr_schedule(o->lr, (int)o->warmup, step, o->steps);
        float norm = model_adamw_step(m, &hp, o->clip, step + 1);
        if (!isfinite(norm)) die_runtime("non-finite gradient at step %ld; stopped without saving%s; lower --lr", step + 1, save_note);
        long done = step + 1 - r->start_step;
        tr->final_loss = loss;
        tr->steps_done = step + 1;
        double mine_seconds = now_seconds() - t0;  // this invocation's
        tr->seconds = before + mine_seconds;
        tr->tokens_per_s = (double)done * all / mine_seconds;
        int curve_now = o->eval_every && ((step + 1) % o->eval_every == 0 || step + 1 == o->steps);  // not at --stop-at: a resumed run measures where an uninterrupted one does
        if (curve_now) {
            double e0 = now_seconds();
            tr->curve[tr->n_curve++] = measure_point(o, r, step + 1, loss);
            long overfit = tr->overfit_step;
            rises = note_validation(o, r, tr, rises);
            overfit_now = !overfit && tr->overfit_step;
            t0 += now_seconds() - e0;  // tokens/s counts training only
        }
        if ((step + 1) % log_every == 0 || step + 1 == end_step || curve_now)
            report_log_point(r, step + 1, loss, hp.lr, tr, curve_now ? &tr->curve[tr->n_curve - 1] : NULL);
        if (!o->quiet && !estimated && mine_seconds >= ESTIMATE_AFTER_SECONDS) {  // once: how long this will take
            estimated = 1;
            double eta = mine_seconds / done * (double)(end_step - step - 1);
            if (eta >= LONG_RUN_SECONDS)
                printf("estimated time for the remaining %ld steps: %s%.0f min at %.0f tokens/s (%s)\n",
                       end_step - step - 1, o->until_solved > 0 ? "at most " : "", eta / 60, tr->tokens_per_s,
                       o->until_solved > 0 ? "--until-solved stops it when solved" :
                                             "a smaller --steps, --ctx or --d-model shortens it");
        }
        if (!o->quiet && ((step + 1) % log_every == 0 || step + 1 == end_step || curve_now)) {
            double eta = mine_seconds / done * (double)(end_step - step - 1);
            // --until-solved: the end is the first solved point, unknown before it; the cap's time is a bound
            printf("step %ld/%ld loss %.4f lr %.2e tok/s %.0f elapsed %.1fs eta %s%.1fs", step + 1, o->steps, loss, hp.lr,
                   tr->tokens_per_s, tr->seconds, o->until_solved > 0 ? "≤" : "", eta);
            if (curve_now) {
                const curve_point *c = &tr->curve[tr->n_curve - 1];
                printf(" val %.4f", c->val_loss);
                if (c->order_acc >= 0) printf(" order_acc %.3f", c->order_acc);
                if (c->task_acc >= 0) printf(" task_acc %.3f", c->task_acc);
            }
            double window = mine_seconds - mark_seconds;
            if (window >= SLOW_WINDOW_SECONDS) {
                double rate = (double)(done - mark_done) * all / window;
                if (best_rate > 0 && rate < best_rate / SLOW_FACTOR)
                    printf(" [slow: %.0f tok/s since the last line, under 1/%d of this run's %.0f; other processes may "
                           "be sharing the cores (--threads 1, or run one at a time)]", rate, SLOW_FACTOR, best_rate);
                if (rate > best_rate) best_rate = rate;
                mark_seconds = mine_seconds, mark_done = done;
            }
            printf("\n");
            if (overfit_now) say_overfitting(o, tr), overfit_now = 0;
            fflush(stdout);
        }
        const curve_point *last = curve_now ? &tr->curve[tr->n_curve - 1] : NULL;
        double solve_acc = !last ? -1 : last->order_acc >= 0 ? last->order_acc : last->task_acc;
        if (curve_now && o->until_solved > 0 && solve_acc >= o->until_solved) {
            tr->solved_step = step + 1;
            printf("solved at step %ld: %s %.3f >= %g; training stops (--until-solved)\n", step + 1,
                   last->order_acc >= 0 ? "order_acc" : "task_acc", solve_acc, o->until_solved);
            fflush(stdout);
            break;
        }
        if (o->sample_every && (step + 1) % o->sample_every == 0 && dist_rank() == 0) {
            double s0 = now_seconds();
            rng_t rng = {((uint64_t)o->seed * 7919 + 17) ^ ((uint64_t)(step + 1) * 0x9E3779B97F4A7C15ull)};  // its own stream
            char label[48];
            snprintf(label, sizeof label, "sample at step %ld", step + 1);
            sample_text(o, r, label, &rng);
            fflush(stdout);
            t0 += now_seconds() - s0;  // tokens/s counts training only
        }
        if (hk->step_sleep_ms > 0) usleep((useconds_t)hk->step_sleep_ms * 1000);
        if (step + 1 == hk->kill_at && dist_rank() == hk->kill_rank) raise(SIGKILL);
        if (o->save && o->save_every && (step + 1) % o->save_every == 0 && step + 1 < end_step) run_save(o, r, tr);
        if (R > 1 ? signals_agreed() : signals_stop()) stop_for_signal(o, r, tr, step + 1);
    }
}

// A task's accuracy at the training sizes and at each test range.
static void evaluate_task(const options *o, run_t *r, eval_report *er) {
    const data_t *d = &r->d;
    er->n_task = d->n_tests + 1;
    for (int i = 0; i < er->n_task; i++) {
        task_result *t = &er->task[i];
        eval_task(&r->m, d, i ? d->tests[i - 1] : d->train_len, (int)o->task_eval, (unsigned long long)i + 1, t);
        if (t->ok) {
            printf("task=%s len=%d-%d acc=%.3f n=%d\n", task_name(d->task), t->r.lo, t->r.hi, t->acc, t->n);
            er->any_ok = 1;
        } else {
            printf("task=%s len=%d-%d refused\n", task_name(d->task), t->r.lo, t->r.hi);
            warn_msg("task=%s len=%d-%d: %s", task_name(d->task), t->r.lo, t->r.hi, t->err);
        }
    }
}

// Perplexity at every --eval-ctx, then the order probe on cats.
static void evaluate(const options *o, run_t *r, eval_report *er) {
    memset(er, 0, sizeof *er);
    for (int i = 0; i < o->eval_ctx.n; i++) {
        stop_point(o, "during the evaluations");
        int L = o->eval_ctx.v[i];
        eval_result *ev = &er->ev[i];
        if (o->attn_stats)
            er->attn[i] = xmalloc(sizeof(double) * (size_t)r->m.cfg.layers * r->m.cfg.heads * ATTN_NSTAT);
        eval_perplexity_window(&r->m, &r->d, L, 0, (size_t)o->eval_tokens, er->attn[i], ev);
        if (ev->ok) {
            printf("eval ctx=%d loss=%.4f ppl=%.3f\n", L, ev->loss, ev->ppl);
            er->any_ok = 1;
        } else {
            printf("eval ctx=%d %s\n", L, ev->nonfinite ? "failed" : "refused");
            warn_msg("eval ctx=%d: %s", L, ev->err);
            er->failed |= ev->nonfinite;
        }
        if (o->probe_positions && ev->ok) {
            er->probe[i] = xmalloc(sizeof(double) * (size_t)(r->m.cfg.layers + 1));
            if (eval_probe_positions(&r->m, &r->d, L, (size_t)o->eval_tokens, er->probe[i], er->probe_err[i],
                                     sizeof er->probe_err[i]) == 0) {
                // held-out R² of a linear probe of the position: from the input (embeddings and an
                // absolute encoding), then from each block's output
                printf("probe ctx=%d position R² (held out): input %.3f", L, er->probe[i][0]);
                for (int l = 1; l <= r->m.cfg.layers; l++) printf(", block %d %.3f", l, er->probe[i][l]);
                printf("\n");
            } else {
                free(er->probe[i]);
                er->probe[i] = NULL;
                warn_msg("probe ctx=%d: %s", L, er->probe_err[i]);
            }
        }
        if (o->eval_window && L > o->eval_window && ev->ok) {
            eval_result *w = &er->win[i];
            eval_perplexity_window(&r->m, &r->d, L, (int)o->eval_window, (size_t)o->eval_tokens, NULL, w);
            if (w->ok) {
                printf("eval ctx=%d window=%ld loss=%.4f ppl=%.3f\n", L, o->eval_window, w->loss, w->ppl);
            } else {
                printf("eval ctx=%d window=%ld %s\n", L, o->eval_window, w->nonfinite ? "failed" : "refused");
                warn_msg("eval ctx=%d window=%ld: %s", L, o->eval_window, w->err);
                er->failed |= w->nonfinite;
            }
        }
    }
    if (data_has(&r->d, CORPUS_ORDER_PROBE)) {
        er->has_order = 1;
        er->order_acc = eval_order(&r->m, &r->d, &er->n_order);
        printf("order_acc=%.3f n=%d\n", er->order_acc, er->n_order);
    }
    if (data_has(&r->d, CORPUS_TASKS)) evaluate_task(o, r, er);
    fflush(stdout);
}

static int by_descending(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

// The --top-k most likely text tokens keep their weight p[v], the others
// get 0 (ties at the K-th logit all kept). buf: V floats of scratch.
static void keep_top_k(float *p, const float *z, int V, long k, const data_t *d, float *buf) {
    if (k <= 0) return;
    int text = 0;
    for (int v = 0; v < V; v++)
        if (data_is_text(d, v)) buf[text++] = z[v];
    if (k >= text) return;
    qsort(buf, (size_t)text, sizeof *buf, by_descending);
    float kth = buf[k - 1];
    for (int v = 0; v < V; v++)
        if (z[v] < kth) p[v] = 0.0f;
}

// Generates --sample tokens after the prompt. [MASK] and cats' padding are
// never drawn: they are not text. rng: the sample's random stream.
static void sample_text(const options *o, run_t *r, const char *label, rng_t *rng) {
    model_t *m = &r->m;
    const data_t *d = &r->d;
    if (!m->cfg.causal) die_usage("--sample needs a causal model (--attn causal)");
    int T = m->cfg.ctx;
    const char *prompt = o->prompt ? o->prompt : data_default_prompt(d);
    int cap = (int)strlen(prompt) + 1;  // at most a token per byte
    int *ctx = xmalloc(sizeof(int) * ((size_t)cap + (size_t)o->sample));
    char err[256];
    int n = data_encode(d, prompt, ctx, cap, err, sizeof err);
    if (n <= 0) {
        free(ctx);
        if (n < 0) die_usage("%s", err);
        die_usage("--prompt is empty");
    }
    model_acts a;
    model_acts_alloc(&a, m, 1, T, 0);
    int *win = xmalloc(sizeof(int) * T);
    char piece[260];  // a GPT-2 token's text is at most 255 bytes
    printf("%s: ", label);
    for (int i = 0; i < n; i++) {
        data_decode(d, ctx[i], piece, sizeof piece);
        fputs(piece, stdout);
    }
    int V = m->cfg.vocab, last_text = 0;
    float *p = xmalloc(sizeof(float) * V), *scratch = o->top_k ? xmalloc(sizeof(float) * V) : NULL;
    for (int v = 0; v < V; v++)
        if (data_is_text(d, v)) last_text = v;
    for (long s = 0; s < o->sample && !signals_stop(); s++) {  // a stop signal ends the sample where it is
        int start = n > T ? n - T : 0, len = n - start;
        for (int t = 0; t < T; t++) win[t] = t < len ? ctx[start + t] : 0;
        model_forward(m, &a, win, NULL, NULL);
        const float *z = a.logits + (size_t)(len - 1) * V;
        if (o->temperature == 0) {  // greedy: the most likely text token (the first of equals); no randomness drawn
            int best = -1;
            for (int v = 0; v < V; v++)
                if (data_is_text(d, v) && (best < 0 || z[v] > z[best])) best = v;
            if (best < 0) best = last_text;
            ctx[n++] = best;
            data_decode(d, best, piece, sizeof piece);
            fputs(piece, stdout);
            continue;
        }
        float mx = -INFINITY, sum = 0.0f;
        for (int v = 0; v < V; v++)
            if (data_is_text(d, v)) mx = z[v] > mx ? z[v] : mx;
        for (int v = 0; v < V; v++) p[v] = data_is_text(d, v) ? expf((z[v] - mx) / o->temperature) : 0.0f;
        keep_top_k(p, z, V, o->top_k, d, scratch);
        for (int v = 0; v < V; v++) sum += p[v];
        float u = rng_uniform(rng) * sum, acc = 0.0f;
        int next = last_text;
        for (int v = 0; v < V; v++) {
            acc += p[v];
            if (p[v] > 0.0f && u < acc) {
                next = v;
                break;
            }
        }
        ctx[n++] = next;
        data_decode(d, next, piece, sizeof piece);
        fputs(piece, stdout);
    }
    printf("\n");
    free(p);
    free(scratch);
    free(win);
    free(ctx);
    model_acts_free(&a);
}

// The run folder's curve.png: the learning curve's points.
static int draw_curve(const options *o, const run_t *r, const train_report *tr, char *err, size_t errlen) {
    int n = tr->n_curve;
    double *x = xmalloc(sizeof(double) * 3 * (size_t)n), *tl = x + n, *vl = x + 2 * n;
    for (int i = 0; i < n; i++) x[i] = (double)tr->curve[i].step, tl[i] = tr->curve[i].train_loss, vl[i] = tr->curve[i].val_loss;
    char title[256];
    const char *data = strrchr(o->data, '/') ? strrchr(o->data, '/') + 1 : o->data;
    snprintf(title, sizeof title, "%.60s  pe=%.40s  d=%ld layers=%ld ctx=%ld  seed %ld", data, o->pe, o->d_model,
             o->layers, o->ctx, o->seed);
    int rc = plot_curve_png(x, tl, vl, n, title, r->curve_png, err, errlen);
    free(x);
    return rc;
}

// The results: JSON, the attention picture, a sample. One that cannot be
// written is reported and the others are still written (the checkpoint was
// saved before); the run then exits 1.
static void write_outputs(const options *o, run_t *r, const train_report *tr, const eval_report *er) {
    char err[1024];
    if (o->json && report_json(o->json, o, &r->m, tr, er, err, sizeof err) != 0) {
        warn_msg("%s", err);
        r->outputs_failed = 1;
    }
    if (o->attn_png) {
        if (viz_attention_png(&r->m, &r->d, o->attn_png, err, sizeof err) != 0) {
            warn_msg("%s", err);
            r->outputs_failed = 1;
        } else if (!o->quiet) {
            printf("attention picture: %s\n", o->attn_png);
        }
    }
    if (o->eval_rows && eval_write_rows(&r->m, &r->d, o->eval_ctx.v, o->eval_ctx.n, (size_t)o->eval_tokens, o->eval_rows,
                                        err, sizeof err) != 0) {
        warn_msg("%s", err);
        r->outputs_failed = 1;
    }
    if (r->curve_png[0] && tr->n_curve > 0 && draw_curve(o, r, tr, err, sizeof err) != 0) {
        warn_msg("%s", err);
        r->outputs_failed = 1;
    }
    if (r->folder[0]) printf("run folder: %s\n", r->folder);
    if (o->sample) {
        rng_t rng = {(uint64_t)o->seed * 7919 + 17};  // the samples one after another from one stream
        char label[32];
        for (long k = 0; k < o->samples && !signals_stop(); k++) {
            snprintf(label, sizeof label, o->samples > 1 ? "sample %ld" : "sample", k + 1);
            sample_text(o, r, label, &rng);
        }
    }
}

// After the last step: the final save. Returns 0 when the run stopped early
// (--stop-at) and has nothing to evaluate yet.
// The test hooks' signal to the process itself (PELAB_TEST_SIGNAL_AT_SAVE,
// _AT_OUTPUT). signal_thread takes it when the scheduler runs it; on busy
// cores that could be after what follows, so wait (up to 10 s) as for a
// signal that arrived just before it.
static void raise_test_signal(int sig) {
    if (!sig || (test_hooks()->kill_rank >= 0 && dist_rank() != test_hooks()->kill_rank)) return;
    kill(getpid(), sig);
    for (int ms = 0; ms < 10000 && !signals_stop(); ms++) usleep(1000);
}

static int finish_training(const options *o, const run_t *r, const train_report *tr) {
    // The handlers stay through the final save: a signal now waits for it.
    raise_test_signal(test_hooks()->signal_at_save);
    char buf[CKPT_PATH_MAX + 16];
    const char *best = o->save && tr->best_step && o->keep != KEEP_LAST ? run_best_path(o, buf, sizeof buf) : NULL;
    if (o->save && !o->load && !(best && o->keep == KEEP_BEST)) {
        run_save(o, r, tr);
        if (!o->quiet) printf("saved %s at step %ld\n", o->save, tr->steps_done);
    }
    if (best && !o->quiet)
        printf("best validation loss %.4f at step %ld: %s%s\n", tr->best_val, tr->best_step, best,
               o->keep == KEEP_BEST ? " (the last model is not kept: --keep best)" : "");
    stop_point(o, "after training");
    if (o->stop_at && tr->steps_done < o->steps && !tr->solved_step) {
        printf("stopped at step %ld of %ld; continue with --resume %s\n", tr->steps_done, o->steps, o->save);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    startup_environment(argv);
    dist_init(&argc, &argv);
    if (dist_rank() > 0 && !freopen("/dev/null", "w", stdout)) die_runtime("cannot silence process %d's output", dist_rank());
    static options o;  // large (it keeps the strings a checkpoint gives)
    options_parse(&o, argc, argv);
    run_t *run = run_start(&o);
    run_resolve(&o, run);
    run_check_same_settings(&o, run);
    report_header(&o, run);

    train_report tr;
    train(&o, run, &tr);
    if (!finish_training(&o, run, &tr)) {  // --stop-at: resume later
        dist_finish();
        return report_stdout_status(&o, run->outputs_failed ? EXIT_RUNTIME : 0);
    }
    eval_report er;
    evaluate(&o, run, &er);
    stop_point(&o, "after the evaluations");
    if (dist_rank() == 0) {
        raise_test_signal(test_hooks()->signal_at_output);
        write_outputs(&o, run, &tr, &er);
        if (signals_stop())
            printf("a stop signal (%s) came while the outputs were written; they are complete\n",
                   signal_name(signals_stop()));
    }
    signals_to_default();
    for (int i = 0; i < MAX_EVAL_CTX; i++) free(er.attn[i]), free(er.probe[i]);
    dist_finish();
    return report_stdout_status(&o, er.any_ok && !er.failed && !run->outputs_failed ? 0 : EXIT_RUNTIME);
}
