// results.c — see results.h. The rows are in the order --json writes them.
#include "results.h"

#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if __has_include("../build/commit.h")
#include "../build/commit.h"  // PELAB_COMMIT (the Makefile writes it)
#endif
#ifndef PELAB_COMMIT
#define PELAB_COMMIT ""
#endif
#include "../core/dist.h"
#include "../core/json.h"
#include "../core/startup.h"
#include "../model/attn.h"
#include "../model/gemm.h"
#include "signals.h"

typedef const results_ctx *ctx_t;

static void real6(FILE *f, double v) { json_number(f, "%.6f", v); }

// ---- the top level
static void w_config(FILE *f, ctx_t c) {
    fprintf(f, "{");
    settings_json_config(f, c->o, c->m);
    fprintf(f, "}");
}
// The settings the run was given (the command line, --config, and a
// checkpoint's under --resume/--init/--load) as opposed to defaults or values
// derived from them: what --config takes from a record, so that a derived
// value (a warmup fitted to --steps) is derived again under an override.
static void w_given(FILE *f, ctx_t c) {
    const options *o = c->o;
    unsigned mode = o->load ? WITH_LOAD : o->resume ? WITH_RESUME : o->init ? WITH_INIT : 0;
    int first = 1;
    fprintf(f, "[");
    for (int i = 0; i < settings_count; i++) {
        const setting *s = &settings_schema[i];
        if (!s->name || s->type == SET_ACTION || !(o->given[i] || (s->from_file & mode))) continue;
        fprintf(f, "%s\"%s\"", first ? "" : ", ", s->name);
        first = 0;
    }
    for (int i = 0; i < o->pe_opts.n_settings; i++) fprintf(f, "%s\"%s\"", first ? "" : ", ", o->pe_opts.settings[i].name), first = 0;
    for (int k = 0; mode && k < PE_SLOTS; k++) {  // a checkpoint's model: every option its encodings hold
        const pe_ops *e = c->m->pe[k].ops;
        for (int j = 0; e && e->options && e->options[j].name; j++)
            if (!isnan(c->m->pe[k].opt[j]) && !e->options[j].eval_only)
                fprintf(f, "%s\"%s\"", first ? "" : ", ", e->options[j].name), first = 0;
    }
    fprintf(f, "]");
}
static void w_params(FILE *f, ctx_t c) { fprintf(f, "%zu", model_num_params(c->m)); }
static int n_eval(ctx_t c) { return c->tr->stopped_by ? 0 : c->o->eval_ctx.n; }
static int has_curve(ctx_t c) { return c->o->eval_every != 0; }
static int n_curve(ctx_t c) { return c->tr->n_curve; }
static int has_order(ctx_t c) { return c->er->has_order; }
static int solve_read(ctx_t c) { return c->o->until_solved > 0 && !c->o->load; }
static int has_task_solve(ctx_t c) { return c->er->n_task && solve_read(c); }
static int has_task(ctx_t c) { return c->er->n_task != 0; }
static int n_task(ctx_t c) { return c->er->n_task; }
static int interrupted(ctx_t c) { return c->tr->stopped_by != 0; }

// ---- train
static void w_steps(FILE *f, ctx_t c) { fprintf(f, "%ld", c->tr->steps_done); }
static void w_final_loss(FILE *f, ctx_t c) { real6(f, c->tr->final_loss); }
static void w_tokens_per_s(FILE *f, ctx_t c) { json_number(f, "%.1f", c->tr->tokens_per_s); }
static void w_seconds(FILE *f, ctx_t c) { json_number(f, "%.3f", c->tr->seconds); }
static void w_processes(FILE *f, ctx_t c) { (void)c, fprintf(f, "%d", dist_size()); }
static void w_allreduce(FILE *f, ctx_t c) { json_number(f, "%.3f", c->tr->comm_seconds); }
static void w_peak_rss(FILE *f, ctx_t c) {
    (void)c;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(f, "%.1f", ru.ru_maxrss / 1024.0);
}

// ---- eval[]
static const eval_result *ev(ctx_t c) { return &c->er->ev[c->i]; }
static const eval_result *win(ctx_t c) { return &c->er->win[c->i]; }
static int ev_ok(ctx_t c) { return ev(c)->ok; }
static int ev_failed(ctx_t c) { return !ev(c)->ok; }
static int has_window(ctx_t c) { return ev_ok(c) && (win(c)->ok || win(c)->err[0]); }
static int window_ok(ctx_t c) { return ev_ok(c) && win(c)->ok; }
static int window_refused(ctx_t c) { return ev_ok(c) && !win(c)->ok && win(c)->err[0]; }
static int has_attn(ctx_t c) { return ev_ok(c) && c->er->attn[c->i]; }
static int has_attn_far(ctx_t c) { return has_attn(c) && attn_stat_dist[0] < ev(c)->L; }
static int has_probe(ctx_t c) { return ev_ok(c) && c->er->probe[c->i]; }
static int probe_refused(ctx_t c) { return ev_ok(c) && !c->er->probe[c->i] && c->er->probe_err[c->i][0]; }
static void w_ctx(FILE *f, ctx_t c) { fprintf(f, "%d", ev(c)->L); }
static void w_loss(FILE *f, ctx_t c) { real6(f, ev(c)->loss); }
static void w_ppl(FILE *f, ctx_t c) { real6(f, ev(c)->ppl); }
static void w_tokens(FILE *f, ctx_t c) { fprintf(f, "%zu", ev(c)->tokens); }
static void w_window(FILE *f, ctx_t c) {
    if (win(c)->ok) fprintf(f, "%d", win(c)->window);
    else fprintf(f, "%ld", c->o->eval_window);
}
static void w_window_loss(FILE *f, ctx_t c) { real6(f, win(c)->loss); }
static void w_window_ppl(FILE *f, ctx_t c) { real6(f, win(c)->ppl); }
static void w_window_error(FILE *f, ctx_t c) { json_string(f, win(c)->err); }
static void w_error(FILE *f, ctx_t c) { json_string(f, ev(c)->err); }

// per layer, per head, the mean weight of statistic k (-1: the first token;
// d: beyond attn_stat_dist[d]); null where no row counted
static void attn_table(FILE *f, ctx_t c, int k) {
    const int NL = c->m->cfg.layers, NH = c->m->cfg.heads;
    const double *acc = c->er->attn[c->i];
    fprintf(f, "[");
    for (int l = 0; l < NL; l++) {
        fprintf(f, "%s[", l ? ", " : "");
        for (int h = 0; h < NH; h++) {
            const double *a = acc + ((size_t)l * NH + h) * ATTN_NSTAT + (k < 0 ? 0 : 2 + 2 * k);
            fprintf(f, "%s", h ? ", " : "");
            if (a[1] > 0) real6(f, a[0] / a[1]);
            else fprintf(f, "null");
        }
        fprintf(f, "]");
    }
    fprintf(f, "]");
}
static void w_attn_sink(FILE *f, ctx_t c) { attn_table(f, c, -1); }
static void w_attn_far(FILE *f, ctx_t c) {
    fprintf(f, "{");
    for (int k = 0; k < ATTN_STAT_DISTS && attn_stat_dist[k] < ev(c)->L; k++) {
        fprintf(f, "%s\"%d\": ", k ? ", " : "", attn_stat_dist[k]);
        attn_table(f, c, k);
    }
    fprintf(f, "}");
}
static void w_probe_r2(FILE *f, ctx_t c) {
    fprintf(f, "[");
    for (int l = 0; l <= c->m->cfg.layers; l++) {
        fprintf(f, "%s", l ? ", " : "");
        real6(f, c->er->probe[c->i][l]);
    }
    fprintf(f, "]");
}
static void w_probe_error(FILE *f, ctx_t c) { json_string(f, c->er->probe_err[c->i]); }

// ---- curve[]
static const curve_point *pt(ctx_t c) { return &c->tr->curve[c->i]; }
static int has_order_acc(ctx_t c) { return pt(c)->order_acc >= 0; }
static int has_task_acc(ctx_t c) { return pt(c)->task_acc >= 0; }
static void w_step(FILE *f, ctx_t c) { fprintf(f, "%ld", pt(c)->step); }
static void w_train_loss(FILE *f, ctx_t c) { real6(f, pt(c)->train_loss); }
static void w_val_loss(FILE *f, ctx_t c) { real6(f, pt(c)->val_loss); }
static void w_order_acc(FILE *f, ctx_t c) { real6(f, pt(c)->order_acc); }
static void w_task_acc(FILE *f, ctx_t c) { real6(f, pt(c)->task_acc); }

static int has_best(ctx_t c) { return c->tr->best_step > 0; }
static void w_best_step(FILE *f, ctx_t c) { fprintf(f, "%ld", c->tr->best_step); }
static void w_best_val(FILE *f, ctx_t c) { real6(f, c->tr->best_val); }
static void w_overfit(FILE *f, ctx_t c) {
    if (c->tr->overfit_step) fprintf(f, "%ld", c->tr->overfit_step);
    else fprintf(f, "null");
}

// ---- order, task_solve
static void w_order(FILE *f, ctx_t c) { real6(f, c->er->order_acc); }
static void w_order_n(FILE *f, ctx_t c) { fprintf(f, "%d", c->er->n_order); }
static void w_until_solved(FILE *f, ctx_t c) { fprintf(f, "%g", c->o->until_solved); }
static void w_solved_step(FILE *f, ctx_t c) {
    if (c->tr->solved_step) fprintf(f, "%ld", c->tr->solved_step);
    else fprintf(f, "null");
}
static void w_cap(FILE *f, ctx_t c) { fprintf(f, "%ld", c->o->steps); }

// ---- task[]
static const task_result *tk(ctx_t c) { return &c->er->task[c->i]; }
static int task_ok(ctx_t c) { return tk(c)->ok; }
static int task_refused(ctx_t c) { return !tk(c)->ok; }
static void w_len(FILE *f, ctx_t c) { fprintf(f, "\"%d-%d\"", tk(c)->r.lo, tk(c)->r.hi); }
static void w_lo(FILE *f, ctx_t c) { fprintf(f, "%d", tk(c)->r.lo); }
static void w_hi(FILE *f, ctx_t c) { fprintf(f, "%d", tk(c)->r.hi); }
static void w_train(FILE *f, ctx_t c) { fprintf(f, "%s", c->i ? "false" : "true"); }
static void w_acc(FILE *f, ctx_t c) {
    if (tk(c)->ok) real6(f, tk(c)->acc);
    else fprintf(f, "null");
}
static void w_task_n(FILE *f, ctx_t c) { fprintf(f, "%d", tk(c)->n); }
static void w_task_error(FILE *f, ctx_t c) { json_string(f, tk(c)->err); }

// ---- interrupted, pelab
static void w_signal(FILE *f, ctx_t c) { fprintf(f, "\"%s\"", signal_name(c->tr->stopped_by)); }
static void w_version(FILE *f, ctx_t c) { (void)c, fprintf(f, "\"%s\"", PELAB_VERSION); }
void results_commit(FILE *f) {
    if (PELAB_COMMIT[0]) json_string(f, PELAB_COMMIT);
    else fprintf(f, "null");
}
void results_start_time(char *when) {
    time_t t = run_start_time();
    strftime(when, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
}
static void w_commit(FILE *f, ctx_t c) { (void)c, results_commit(f); }
static void w_started(FILE *f, ctx_t c) {
    (void)c;
    char when[32];
    results_start_time(when);
    fprintf(f, "\"%s\"", when);
}
static void w_cpu(FILE *f, ctx_t c) {
    (void)c;
    char cpu[256];
    startup_cpu_name(cpu, sizeof cpu);
    json_string(f, cpu);
}
static void w_kind(FILE *f, ctx_t c) {
    (void)c;
    char kind[256];
    startup_cpu_kind(kind, sizeof kind);
    json_string(f, kind);
}
static void w_cores(FILE *f, ctx_t c) { (void)c, fprintf(f, "%ld", sysconf(_SC_NPROCESSORS_ONLN)); }
static void w_blas(FILE *f, ctx_t c) { (void)c, json_string(f, startup_blas_kernel()); }
static void w_gemm(FILE *f, ctx_t c) { (void)c, fprintf(f, "\"%s\"", gemm_name()); }
static void w_precision(FILE *f, ctx_t c) { (void)c, fprintf(f, "\"%s\"", gemm_precision()); }
static void w_threads(FILE *f, ctx_t c) { fprintf(f, "%ld", c->o->threads); }

#define OBJ(sec, key, doc, present, opens) {sec, key, "object", "", doc, present, NULL, opens, NULL}
#define ARR(sec, key, doc, present, opens, count) {sec, key, "array", "", doc, present, NULL, opens, count}

const result_field results_schema[] = {
    {"", "config", "object", "", "every setting as the run used it (the options table, the vocabulary, the encodings' "
     "options, defaults included; null where an option has no value)", NULL, w_config, NULL, NULL},
    {"", "given", "[string]", "", "the options the run was given — on the command line, by --config, or by the "
     "checkpoint it resumed, fine-tuned or loaded — by name; the others took their defaults or values derived from "
     "them (what --config FILE takes from this record)", NULL, w_given, NULL, NULL},
    {"", "params", "int", "", "the model's parameters", NULL, w_params, NULL, NULL},
    OBJ("", "train", "what training did (this invocation's, and a resumed run's before it)", NULL, "train"),
    {"train", "steps", "int", "steps", "the steps the run has done", NULL, w_steps, NULL, NULL},
    {"train", "final_loss", "number|null", "nats/token", "the training loss of the last step", NULL, w_final_loss, NULL, NULL},
    {"train", "tokens_per_s", "number|null", "tokens/s", "this invocation's training throughput", NULL, w_tokens_per_s, NULL, NULL},
    {"train", "seconds", "number|null", "s", "the run's training time (a resumed run's earlier seconds included)", NULL,
     w_seconds, NULL, NULL},
    {"train", "processes", "int", "", "MPI processes (1 without MPI)", NULL, w_processes, NULL, NULL},
    {"train", "allreduce_seconds", "number|null", "s", "MPI: time in the gradient sums", NULL, w_allreduce, NULL, NULL},
    {"train", "peak_rss_mib", "number", "MiB", "the process's peak resident memory when the JSON is written", NULL,
     w_peak_rss, NULL, NULL},
    {"train", "best_step", "int", "steps", "the learning curve's point with the lowest validation loss (the model "
     "--keep both or best keeps)", has_best, w_best_step, NULL, NULL},
    {"train", "best_val_loss", "number", "nats/token", "its validation loss", has_best, w_best_val, NULL, NULL},
    {"train", "overfit_step", "int|null", "steps", "the best point, when the validation loss was higher at the 3 "
     "points after it (overfitting since then); null: it was not", has_best, w_overfit, NULL, NULL},
    ARR("", "eval", "one element per --eval-ctx length ([] when a signal stopped training)", NULL, "eval[]", n_eval),
    {"eval[]", "ctx", "int", "tokens", "the evaluation length", NULL, w_ctx, NULL, NULL},
    {"eval[]", "loss", "number", "nats/token", "the validation loss at this length", ev_ok, w_loss, NULL, NULL},
    {"eval[]", "ppl", "number", "", "its perplexity, exp(loss)", ev_ok, w_ppl, NULL, NULL},
    {"eval[]", "tokens", "int", "tokens", "the validation tokens scored", ev_ok, w_tokens, NULL, NULL},
    {"eval[]", "window", "int", "tokens", "--eval-window W, past which each target sees at most W tokens", has_window,
     w_window, NULL, NULL},
    {"eval[]", "window_loss", "number", "nats/token", "the loss with the context cut to the window", window_ok,
     w_window_loss, NULL, NULL},
    {"eval[]", "window_ppl", "number", "", "its perplexity", window_ok, w_window_ppl, NULL, NULL},
    {"eval[]", "window_error", "string", "", "why the windowed evaluation was refused", window_refused, w_window_error,
     NULL, NULL},
    {"eval[]", "attn_sink", "[[number|null]]", "", "--attn-stats: per layer, per head, the mean attention weight on "
     "the first token", has_attn, w_attn_sink, NULL, NULL},
    {"eval[]", "attn_far", "{distance: [[number|null]]}", "", "--attn-stats: per distance shorter than the length "
     "(attn_distances), per layer and head, the mean weight on keys farther than it", has_attn_far, w_attn_far, NULL,
     NULL},
    {"eval[]", "probe_r2", "[number|null]", "", "--probe-positions: the held-out R² of a linear probe of the position, "
     "from the input, then each block's output", has_probe, w_probe_r2, NULL, NULL},
    {"eval[]", "probe_error", "string", "", "why the probe was refused", probe_refused, w_probe_error, NULL, NULL},
    {"eval[]", "error", "string", "", "why this length was refused, or failed (a loss that is not a number)", ev_failed,
     w_error, NULL, NULL},
    ARR("", "curve", "--eval-every: the learning curve, a point per measurement (a resumed run's first)", has_curve,
        "curve[]", n_curve),
    {"curve[]", "step", "int", "steps", "the step after which it was measured", NULL, w_step, NULL, NULL},
    {"curve[]", "train_loss", "number|null", "nats/token", "that step's training loss", NULL, w_train_loss, NULL, NULL},
    {"curve[]", "val_loss", "number|null", "nats/token", "the validation loss at the training ctx (4,096 tokens)", NULL,
     w_val_loss, NULL, NULL},
    {"curve[]", "order_acc", "number", "", "cats: the order probe's accuracy", has_order_acc, w_order_acc, NULL, NULL},
    {"curve[]", "task_acc", "number", "", "a task: the accuracy at its training sizes (200 instances)", has_task_acc,
     w_task_acc, NULL, NULL},
    OBJ("", "order", "cats: the order probe after training", has_order, "order"),
    {"order", "acc", "number", "", "the share of the probe's sentences whose answer the model gets right", NULL, w_order,
     NULL, NULL},
    {"order", "n", "int", "", "the probe's sentences", NULL, w_order_n, NULL, NULL},
    {"order", "until_solved", "number", "", "--until-solved: the accuracy that counts as solved", solve_read,
     w_until_solved, NULL, NULL},
    {"order", "solved_step", "int|null", "steps", "the step it was reached at; null: not within the cap (censored)",
     solve_read, w_solved_step, NULL, NULL},
    {"order", "cap", "int", "steps", "the cap, --steps", solve_read, w_cap, NULL, NULL},
    OBJ("", "task_solve", "a task with --until-solved: as order's", has_task_solve, "task_solve"),
    {"task_solve", "until_solved", "number", "", "the accuracy that counts as solved", NULL, w_until_solved, NULL, NULL},
    {"task_solve", "solved_step", "int|null", "steps", "the step it was reached at; null: not within the cap", NULL,
     w_solved_step, NULL, NULL},
    {"task_solve", "cap", "int", "steps", "the cap, --steps", NULL, w_cap, NULL, NULL},
    ARR("", "task", "a task: its accuracy at the training sizes, then at each --test-len range", has_task, "task[]",
        n_task),
    {"task[]", "len", "string", "", "the range of sizes, \"A-B\"", NULL, w_len, NULL, NULL},
    {"task[]", "lo", "int", "", "its smallest size", NULL, w_lo, NULL, NULL},
    {"task[]", "hi", "int", "", "its largest size", NULL, w_hi, NULL, NULL},
    {"task[]", "train", "bool", "", "whether these are the training sizes", NULL, w_train, NULL, NULL},
    {"task[]", "acc", "number|null", "", "the share of instances answered exactly; null: refused", NULL, w_acc, NULL, NULL},
    {"task[]", "n", "int", "", "the instances scored", task_ok, w_task_n, NULL, NULL},
    {"task[]", "error", "string", "", "why the range was refused", task_refused, w_task_error, NULL, NULL},
    OBJ("", "interrupted", "a stop signal ended training: the JSON holds the training so far, no evaluations",
        interrupted, "interrupted"),
    {"interrupted", "signal", "string", "", "SIGINT, SIGTERM or SIGHUP", NULL, w_signal, NULL, NULL},
    {"interrupted", "step", "int", "steps", "the last step done", NULL, w_steps, NULL, NULL},
    OBJ("", "pelab", "what made the run", NULL, "pelab"),
    {"pelab", "version", "string", "", "pelab's version", NULL, w_version, NULL, NULL},
    {"pelab", "commit", "string|null", "", "the commit ./train was built from (git describe; -dirty with uncommitted "
     "changes; null outside git)", NULL, w_commit, NULL, NULL},
    {"pelab", "started", "string", "", "when this invocation started (UTC, ISO 8601)", NULL, w_started, NULL, NULL},
    OBJ("pelab", "machine", "the machine it ran on", NULL, "machine"),
    {"machine", "cpu", "string", "", "the CPU's model name", NULL, w_cpu, NULL, NULL},
    {"machine", "kind", "string", "", "what tells CPUs of one name apart: family and model, AVX-512 or AVX2, the build's "
     "instruction set", NULL, w_kind, NULL, NULL},
    {"machine", "cores", "int", "", "the cores online", NULL, w_cores, NULL, NULL},
    {"machine", "blas_kernel", "string", "", "the kernel OpenBLAS ran", NULL, w_blas, NULL, NULL},
    {"machine", "gemm", "string", "", "the matrix engine", NULL, w_gemm, NULL, NULL},
    {"machine", "precision", "string", "", "the products' precision", NULL, w_precision, NULL, NULL},
    {"machine", "threads", "int", "", "threads", NULL, w_threads, NULL, NULL},
    {"machine", "processes", "int", "", "MPI processes", NULL, w_processes, NULL, NULL},
};
const int results_count = sizeof results_schema / sizeof results_schema[0];

// The fields of `section` that are there, each ", "-separated: a value, an
// object of its own section, or an array of them.
static void write_section(FILE *f, const char *section, const results_ctx *c) {
    int first = 1;
    for (int k = 0; k < results_count; k++) {
        const result_field *r = &results_schema[k];
        if (strcmp(r->section, section) || (r->present && !r->present(c))) continue;
        fprintf(f, "%s\"%s\": ", first ? "" : ", ", r->key);
        first = 0;
        if (r->write) {
            r->write(f, c);
        } else if (r->count) {
            int n = r->count(c);
            fprintf(f, "[");
            for (int i = 0; i < n; i++) {
                results_ctx e = *c;
                e.i = i;
                fprintf(f, "%s{", i ? ", " : "");
                write_section(f, r->opens, &e);
                fprintf(f, "}");
            }
            fprintf(f, "]");
        } else {
            fprintf(f, "{");
            write_section(f, r->opens, c);
            fprintf(f, "}");
        }
    }
}

void results_write(FILE *f, const results_ctx *c) {
    fprintf(f, "{");
    write_section(f, "", c);
    fprintf(f, "}\n");
}

// The path of a row: its section's path (the row that opens it, recursively), then its key.
static void row_path(const result_field *r, char *buf, size_t cap) {
    buf[0] = 0;
    if (r->section[0])
        for (int k = 0; k < results_count; k++)
            if (results_schema[k].opens && !strcmp(results_schema[k].opens, r->section)) {
                row_path(&results_schema[k], buf, cap);
                if (results_schema[k].count) strncat(buf, "[]", cap - strlen(buf) - 1);
                strncat(buf, ".", cap - strlen(buf) - 1);
                break;
            }
    strncat(buf, r->key, cap - strlen(buf) - 1);
}

void results_print_schema(FILE *f) {
    fprintf(f, "{\"fields\": [\n");
    for (int k = 0; k < results_count; k++) {
        const result_field *r = &results_schema[k];
        char path[128];
        row_path(r, path, sizeof path);
        fprintf(f, "  {\"path\": ");
        json_string(f, path);
        fprintf(f, ", \"type\": ");
        json_string(f, r->type);
        fprintf(f, ", \"unit\": ");
        json_string(f, r->unit);
        fprintf(f, ", \"when\": \"%s\", \"doc\": ", r->present ? "sometimes" : "always");
        json_string(f, r->doc);
        fprintf(f, "}%s\n", k + 1 < results_count ? "," : "");
    }
    fprintf(f, "], \"attn_distances\": [");
    for (int k = 0; k < ATTN_STAT_DISTS; k++) fprintf(f, "%s%d", k ? ", " : "", attn_stat_dist[k]);
    fprintf(f, "]}\n");
}
