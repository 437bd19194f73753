// report.c — see report.h.
#include "report.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../core/dist.h"
#include "../core/files.h"
#include "../core/json.h"
#include "../core/startup.h"
#include "../model/gemm.h"
#include "results.h"

// A --log that cannot be written (a full disk) never costs the model: it is
// reported once and closed, training goes on to its save, and the run exits
// 1 at the end (run_t.outputs_failed).
static void log_flush(run_t *r) {
    if (fflush(r->log) == 0 && !ferror(r->log)) return;
    warn_msg("--log: cannot write (%s); the run goes on without its log, saves as planned and exits 1 at the end",
             errno ? strerror(errno) : "write error");
    fclose(r->log);
    r->log = NULL;
    r->outputs_failed = 1;
}

// --log: one JSON object per line, appended and flushed as training goes,
// so that a run's curve survives whatever ends it; a resumed run appends.
void report_log_open(const options *o, run_t *r) {
    if (!o->log || dist_rank() > 0) return;
    r->log = fopen(o->log, "a+");
    if (!r->log) die_runtime("--log %s: cannot open for appending (%s)", o->log, strerror(errno));
    // A log whose last line was cut off (a crash, a full disk) gets its
    // first new line on a line of its own.
    if (fseek(r->log, -1, SEEK_END) == 0 && fgetc(r->log) != '\n') fputc('\n', r->log);
    char when[32];
    results_start_time(when);
    fprintf(r->log, "{\"start\": \"%s\", \"step\": %ld, \"steps\": %ld, \"pelab\": \"%s\", \"commit\": ", when,
            r->start_step, o->steps, PELAB_VERSION);
    results_commit(r->log);
    fprintf(r->log, ", \"resumed\": %s}\n", o->resume ? "true" : "false");
    log_flush(r);
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
    errno = 0;
    log_flush(r);
}

int report_json(const char *path, const options *o, const model_t *m, const train_report *tr, const eval_report *er,
                char *err, size_t errlen) {
    atomic_file af;
    if (atomic_open(&af, path, "--json", err, errlen) != 0) return -1;
    results_ctx c = {o, m, tr, er, 0};
    results_write(af.f, &c);
    return atomic_commit(&af, "--json", err, errlen);
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
            char buf[PE_FORMAT_MAX];
            pe_value_format(&r->m.pe[sl], k, buf, sizeof buf);
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
