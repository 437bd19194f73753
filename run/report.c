// report.c — see report.h.
#include "report.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#if __has_include("../build/commit.h")
#include "../build/commit.h"  // PELAB_COMMIT (the Makefile writes it)
#endif
#ifndef PELAB_COMMIT
#define PELAB_COMMIT ""
#endif
#include "../core/dist.h"
#include "../core/files.h"
#include "../core/json.h"
#include "../core/startup.h"
#include "../model/gemm.h"
#include "signals.h"

// The start of this invocation (UTC, ISO 8601) into when (32 bytes), and
// the commit as a JSON value (a string, or null outside git): what --log's
// first line and --json's "pelab" both say.
static void start_time_text(char *when) {
    time_t t = run_start_time();
    strftime(when, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
}

static void json_commit(FILE *f) {
    if (PELAB_COMMIT[0]) json_string(f, PELAB_COMMIT);
    else fprintf(f, "null");
}

// --log: one JSON object per line, appended and flushed as training goes,
// so that a run's curve survives whatever ends it; a resumed run appends.
void report_log_open(const options *o, run_t *r) {
    if (!o->log || dist_rank() > 0) return;
    r->log = fopen(o->log, "a");
    if (!r->log) die_runtime("--log %s: cannot open for appending (%s)", o->log, strerror(errno));
    char when[32];
    start_time_text(when);
    fprintf(r->log, "{\"start\": \"%s\", \"step\": %ld, \"steps\": %ld, \"pelab\": \"%s\", \"commit\": ", when,
            r->start_step, o->steps, PELAB_VERSION);
    json_commit(r->log);
    fprintf(r->log, ", \"resumed\": %s}\n", o->resume ? "true" : "false");
    fflush(r->log);
}

void report_log_point(run_t *r, long step, double loss, double lr, const train_report *tr, const curve_point *c) {
    if (!r->log) return;
    fprintf(r->log, "{\"step\": %ld, \"loss\": ", step);
    json_number(r->log, "%.6f", loss);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    fprintf(r->log, ", \"lr\": %.6g, \"tokens_per_s\": %.1f, \"elapsed\": %.3f, \"time\": %.3f", lr, tr->tokens_per_s,
            tr->seconds, (double)now.tv_sec + now.tv_nsec * 1e-9);
    if (c) {
        fprintf(r->log, ", \"val_loss\": ");
        json_number(r->log, "%.6f", c->val_loss);
        if (c->order_acc >= 0) fprintf(r->log, ", \"order_acc\": %.6f", c->order_acc);
        if (c->task_acc >= 0) fprintf(r->log, ", \"task_acc\": %.6f", c->task_acc);
    }
    fprintf(r->log, "}\n");
    if (fflush(r->log) != 0) die_runtime("--log: cannot write (%s)", strerror(errno));
}

// --attn-stats at one length: per layer, per head, the mean weight on the
// first token ("attn_sink") and beyond each distance D ("attn_far": {"D": …},
// the distances shorter than the length); null where no row counted.
static void write_attn_stats(FILE *f, const double *acc, const model_t *m, int L) {
    const int NL = m->cfg.layers, NH = m->cfg.heads;
    for (int k = -1; k < ATTN_STAT_DISTS; k++) {
        if (k >= 0 && attn_stat_dist[k] >= L) continue;
        if (k < 0) fprintf(f, ", \"attn_sink\": [");
        else fprintf(f, "%s\"%d\": [", k ? ", " : ", \"attn_far\": {", attn_stat_dist[k]);
        for (int l = 0; l < NL; l++) {
            fprintf(f, "%s[", l ? ", " : "");
            for (int h = 0; h < NH; h++) {
                const double *a = acc + ((size_t)l * NH + h) * ATTN_NSTAT + (k < 0 ? 0 : 2 + 2 * k);
                fprintf(f, "%s", h ? ", " : "");
                if (a[1] > 0) json_number(f, "%.6f", a[0] / a[1]);
                else fprintf(f, "null");
            }
            fprintf(f, "]");
        }
        fprintf(f, "]");
    }
    if (attn_stat_dist[0] < L) fprintf(f, "}");
}

// What made the run and where: pelab's version, the commit it was built
// from, when it started, the machine, the BLAS kernel and matrix engine.
static void write_provenance(FILE *f, const options *o) {
    char when[32], cpu[256];
    start_time_text(when);
    startup_cpu_name(cpu, sizeof cpu);
    fprintf(f, ", \"pelab\": {\"version\": \"%s\", \"commit\": ", PELAB_VERSION);
    json_commit(f);
    fprintf(f, ", \"started\": \"%s\", \"machine\": {\"cpu\": ", when);
    json_string(f, cpu);
    startup_cpu_kind(cpu, sizeof cpu);
    fprintf(f, ", \"kind\": ");
    json_string(f, cpu);
    fprintf(f, ", \"cores\": %ld, \"blas_kernel\": ", sysconf(_SC_NPROCESSORS_ONLN));
    json_string(f, startup_blas_kernel());
    fprintf(f, ", \"gemm\": \"%s\", \"precision\": \"%s\", \"threads\": %ld, \"processes\": %d}}", gemm_name(),
            gemm_precision(), o->threads, dist_size());
}

void report_json(const char *path, const options *o, const model_t *m, const train_report *tr, const eval_report *er) {
    atomic_file af;
    char err[1024];
    if (atomic_open(&af, path, "--json", err, sizeof err) != 0) die_runtime("%s", err);
    FILE *f = af.f;
    fprintf(f, "{\"config\": {");
    settings_json_config(f, o, m);
    fprintf(f, "}, \"params\": %zu", model_num_params(m));
    fprintf(f, ", \"train\": {\"steps\": %ld, \"final_loss\": ", tr->steps_done);
    json_number(f, "%.6f", tr->final_loss);
    fprintf(f, ", \"tokens_per_s\": ");
    json_number(f, "%.1f", tr->tokens_per_s);
    fprintf(f, ", \"seconds\": ");
    json_number(f, "%.3f", tr->seconds);
    fprintf(f, ", \"processes\": %d, \"allreduce_seconds\": ", dist_size());
    json_number(f, "%.3f", tr->comm_seconds);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(f, ", \"peak_rss_mib\": %.1f", ru.ru_maxrss / 1024.0);
    fprintf(f, "}, \"eval\": [");
    for (int i = 0; i < (tr->stopped_by ? 0 : o->eval_ctx.n); i++) {
        const eval_result *ev = &er->ev[i];
        fprintf(f, "%s{\"ctx\": %d", i ? ", " : "", ev->L);
        if (ev->ok) {
            fprintf(f, ", \"loss\": ");
            json_number(f, "%.6f", ev->loss);
            fprintf(f, ", \"ppl\": ");
            json_number(f, "%.6f", ev->ppl);
            fprintf(f, ", \"tokens\": %zu", ev->tokens);
            const eval_result *w = &er->win[i];
            if (w->ok) {
                fprintf(f, ", \"window\": %d, \"window_loss\": ", w->window);
                json_number(f, "%.6f", w->loss);
                fprintf(f, ", \"window_ppl\": ");
                json_number(f, "%.6f", w->ppl);
            } else if (w->err[0]) {
                fprintf(f, ", \"window\": %ld, \"window_error\": ", o->eval_window);
                json_string(f, w->err);
            }
            if (er->attn[i]) write_attn_stats(f, er->attn[i], m, ev->L);
            if (er->probe[i]) {
                fprintf(f, ", \"probe_r2\": [");
                for (int l = 0; l <= m->cfg.layers; l++) {
                    fprintf(f, "%s", l ? ", " : "");
                    json_number(f, "%.6f", er->probe[i][l]);
                }
                fprintf(f, "]");
            } else if (er->probe_err[i][0]) {
                fprintf(f, ", \"probe_error\": ");
                json_string(f, er->probe_err[i]);
            }
            fprintf(f, "}");
        } else {
            fprintf(f, ", \"error\": ");
            json_string(f, ev->err);
            fprintf(f, "}");
        }
    }
    fprintf(f, "]");
    if (o->eval_every) {
        fprintf(f, ", \"curve\": [");
        for (int i = 0; i < tr->n_curve; i++) {
            const curve_point *c = &tr->curve[i];
            fprintf(f, "%s{\"step\": %ld, \"train_loss\": ", i ? ", " : "", c->step);
            json_number(f, "%.6f", c->train_loss);
            fprintf(f, ", \"val_loss\": ");
            json_number(f, "%.6f", c->val_loss);
            if (c->order_acc >= 0) {
                fprintf(f, ", \"order_acc\": ");
                json_number(f, "%.6f", c->order_acc);
            }
            if (c->task_acc >= 0) {
                fprintf(f, ", \"task_acc\": ");
                json_number(f, "%.6f", c->task_acc);
            }
            fprintf(f, "}");
        }
        fprintf(f, "]");
    }
    if (er->has_order) {
        fprintf(f, ", \"order\": {\"acc\": ");
        json_number(f, "%.6f", er->order_acc);
        fprintf(f, ", \"n\": %d", er->n_order);
        if (o->until_solved > 0 && !o->load) {  // the solve step, or null: censored at the cap (--steps)
            fprintf(f, ", \"until_solved\": %g, \"solved_step\": ", o->until_solved);
            if (tr->solved_step) fprintf(f, "%ld", tr->solved_step);
            else fprintf(f, "null");
            fprintf(f, ", \"cap\": %ld", o->steps);
        }
        fprintf(f, "}");
    }
    if (er->n_task && o->until_solved > 0 && !o->load) {  // as order's: the solve step, or null at the cap
        fprintf(f, ", \"task_solve\": {\"until_solved\": %g, \"solved_step\": ", o->until_solved);
        if (tr->solved_step) fprintf(f, "%ld", tr->solved_step);
        else fprintf(f, "null");
        fprintf(f, ", \"cap\": %ld}", o->steps);
    }
    if (er->n_task) {
        fprintf(f, ", \"task\": [");
        for (int i = 0; i < er->n_task; i++) {
            const task_result *t = &er->task[i];
            fprintf(f, "%s{\"len\": \"%d-%d\", \"lo\": %d, \"hi\": %d, \"train\": %s", i ? ", " : "", t->r.lo, t->r.hi,
                    t->r.lo, t->r.hi, i ? "false" : "true");
            if (t->ok) {
                fprintf(f, ", \"acc\": ");
                json_number(f, "%.6f", t->acc);
                fprintf(f, ", \"n\": %d}", t->n);
            } else {
                fprintf(f, ", \"acc\": null, \"error\": ");
                json_string(f, t->err);
                fprintf(f, "}");
            }
        }
        fprintf(f, "]");
    }
    if (tr->stopped_by) fprintf(f, ", \"interrupted\": {\"signal\": \"%s\", \"step\": %ld}", signal_name(tr->stopped_by),
                                tr->steps_done);
    write_provenance(f, o);
    fprintf(f, "}\n");
    if (atomic_commit(&af, "--json", err, sizeof err) != 0) die_runtime("%s", err);
}

// The results printed are lost when stdout fails (a full disk, a closed
// pipe): say so and exit 1 rather than 0.
int report_stdout_status(const options *o, int status) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return status;
    fprintf(stderr, "train: cannot write to standard output (%s): the results printed there are lost%s\n",
            errno ? strerror(errno) : "write error", o->save || o->json ? " (--save and --json files were written)" : "");
    return EXIT_RUNTIME;
}

void report_header(const options *o, const run_t *r) {
    if (o->quiet) return;
    const model_config *c = &r->m.cfg;
    printf("pelab %s: data=", PELAB_VERSION);
    put_printable(stdout, o->data);  // a path from a checkpoint: never raw to a terminal
    printf(" pe=%s attn=%s ctx=%d d=%d layers=%d heads=%d params=%zu batch=%ld steps=%ld threads=%ld gemm=%s",
           c->pe, c->causal ? "causal" : "bidir", c->ctx, c->d_model, c->layers, c->heads, model_num_params(&r->m),
           o->batch, o->steps, o->threads, gemm_name());
    if (strcmp(gemm_precision(), "fp32")) printf(" precision=%s", gemm_precision());
    // what else changes the model's numbers: the encodings' options set (e.g. RoPE's extension) and --rand-pos
    for (int sl = 0; sl < PE_SLOTS; sl++) {
        const pe_ops *e = r->m.pe[sl].ops;
        for (int k = 0; e && e->options && e->options[k].name; k++) {
            if (!config_setting(c, e->options[k].name) || isnan(r->m.pe[sl].opt[k])) continue;
            char buf[64];
            pe_option_format(&e->options[k], r->m.pe[sl].opt[k], buf, sizeof buf);
            printf(" %s=%s", e->options[k].name, buf);
        }
    }
    if (c->rand_pos) printf(" rand-pos=%d", c->rand_pos);
    if (o->steps > r->start_step)  // the schedule in effect: warmup to the peak, then cosine to a tenth of it
        printf(" lr=%g warmup=%ld", o->lr, o->warmup);
    if (dist_size() > 1) printf(" processes=%d (global batch %ld)", dist_size(), o->batch * dist_size());
    printf("\n");
    fflush(stdout);  // seen at once through a pipe or a file: the run has started
}
