// run.h — a run of ./train: what it holds (the model, the data, the
// buffers of a step), its resolution from the options, a checkpoint
// (--load, --resume) or --init, every check made before the first step, and
// its save. train.c drives it; report.c writes what it did.
#ifndef PELAB_RUN_H
#define PELAB_RUN_H

#include <stdio.h>
#include <time.h>

#include "settings.h"
#include "../data/data.h"
#include "../eval/eval.h"
#include "../model/model.h"
#include "ckpt.h"

// A run: everything it allocates, in one place, so that every way out of
// main — the end, --stop-at, a signal, a refused option, a runtime error (the
// die_* functions call exit) — frees it through one atexit handler. A
// sanitizer build then reports no leak on any exit path.
typedef struct {
    model_t m;
    data_t d;
    model_acts a;
    int *tok, *tgt, *seg;  // (B, T) each
    int have_model, have_data, have_acts;
    curve_point *curve;    // the resumed run's points and (steps / --eval-every + 1) more
    run_state st;          // read from --load/--resume
    long start_step;
    FILE *log;             // --log, open while training (NULL again after a write to it failed)
    int outputs_failed;    // a side output (--log, --json, --attn-png) could not be written: exit 1 at the end
    char folder[CKPT_PATH_MAX];  // the run folder (--out), or "" (--out none, --load)
    char curve_png[CKPT_PATH_MAX + 16];  // its picture of the learning curve, or ""
} run_t;

typedef struct {
    long steps_done;
    double final_loss, tokens_per_s;  // tokens/s: this invocation's
    double seconds;       // training seconds of the run: a resumed run's earlier ones and this invocation's
    double comm_seconds;  // MPI: in the gradient sums
    curve_point *curve;  // the learning curve (a resumed run's earlier points first), owned by the run
    int n_curve;
    long solved_step;    // --until-solved: the step at which order_acc reached it; 0: not (yet)
    long best_step;      // the curve point with the lowest validation loss (0: none yet), kept with --keep both|best
    double best_val;
    long overfit_step;   // the validation loss has risen for OVERFIT_POINTS points since this best (0: it has not)
    int stopped_by;      // the signal that interrupted training (its --json has no evaluations); 0: none
} train_report;

typedef struct {
    eval_result ev[MAX_EVAL_CTX];
    eval_result win[MAX_EVAL_CTX];  // --eval-window: the same length, each target with at most W tokens of context
    double *attn[MAX_EVAL_CTX];     // --attn-stats: (layers, heads, ATTN_NSTAT) sums at each length, or NULL
    double *probe[MAX_EVAL_CTX];    // --probe-positions: held-out R² (layers+1) at each length, or NULL
    char probe_err[MAX_EVAL_CTX][256];
    int any_ok;
    int failed;  // an evaluation's loss was not a number: the run exits non-zero
    int has_order, n_order;
    double order_acc;
    task_result task[TASK_MAX_TESTS + 1];  // the training sizes, then each --test-len range
    int n_task;
} eval_report;

// Tokens of validation scored for each point of the learning curve: enough
// for a steady number, a small share of a step's cost at the defaults.
#define CURVE_EVAL_TOKENS 4096
#define CURVE_TASK_INSTANCES 200  // and task instances of the training sizes

// Threads, the signal handlers, the matrix engine and the release of the run
// (at exit, whatever the way out), before any OpenMP thread exists; the run.
run_t *run_start(options *o);
// When this invocation started (a resumed run: the resumption).
time_t run_start_time(void);
// The model (new, from a checkpoint or --init), the data, and every check
// that can be made before the first step; dies with the reason otherwise.
void run_resolve(options *o, run_t *r);
// MPI: every process must run the same settings; refused otherwise.
void run_check_same_settings(const options *o, const run_t *r);
// The checkpoint after tr->steps_done steps (every process calls it): to
// --save, or to path.
void run_save(const options *o, const run_t *r, const train_report *tr);
void run_save_to(const options *o, const run_t *r, const train_report *tr, const char *path);
// Where --keep both|best keeps the best validation loss's model: beside
// --save, NAME.best.ck for NAME.ck (NAME.best otherwise); NULL when too long.
const char *run_best_path(const options *o, char *buf, size_t cap);

#endif
