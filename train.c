// train.c — ./train: the training loop and the report. The options are in
// cli/options.c; the model (model/), the data (data/) and the evaluation
// (eval/) are libraries that this file wires together.
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if __has_include("build/commit.h")
#include "build/commit.h"  // PELAB_COMMIT (the Makefile writes it)
#endif
#ifndef PELAB_COMMIT
#define PELAB_COMMIT ""
#endif
#include "cli/options.h"
#include "core/dist.h"
#include "core/files.h"
#include "core/hooks.h"
#include "core/json.h"
#include "core/startup.h"
#include "data/data.h"
#include "eval/eval.h"
#include "eval/probe.h"
#include "eval/viz.h"
#include "model/gemm.h"
#include "model/model.h"
#include "run/ckpt.h"

// SIGINT, SIGTERM and SIGHUP (a closed terminal): the first one lets the
// current step (or the save under way) finish, then the run saves (with
// --save) and exits 128+signal; a second one exits at once. A checkpoint is
// only ever replaced by rename, so neither can corrupt it. A signal the
// parent set to be ignored (nohup, a script's background job) stays ignored.
// SIGPIPE is ignored: a closed stdout (./train | head) makes printing fail,
// not the run; training and saving go on, and the exit status is 1 (see
// check_stdout). SIGXFSZ is ignored: a file past `ulimit -f` fails to write
// (EFBIG) like a full disk, and the save reports it and removes its
// temporary, instead of the signal killing the process mid-save.
static volatile sig_atomic_t stop_signal = 0;
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static int ignored_at_start[3];  // the parent's SIG_IGN, per stop_signals entry
// MPI: the stop request every process agreed on in the last step's sum. A
// process stops on it, never on its own flag alone, which a signal may have
// set after the sum (the others would then wait in the next sum forever).
static int agreed_stop;

// A second request exits at once, removing the temporary of a save under
// way (the previous checkpoint stays). The same signal again within
// DUPLICATE_WINDOW is not a second request: a hang-up or `timeout` delivers
// it to the process and to its group within milliseconds.
#define DUPLICATE_WINDOW 0.5
static struct timespec first_signal_at;

static void take_signal(int sig) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!stop_signal) {
        first_signal_at = now;
        stop_signal = sig;
        return;
    }
    double since = (double)(now.tv_sec - first_signal_at.tv_sec) + 1e-9 * (double)(now.tv_nsec - first_signal_at.tv_nsec);
    if (sig == stop_signal && since < DUPLICATE_WINDOW) return;
    atomic_abandon();
    static const char msg[] = "train: a second signal: stopped at once; the checkpoint on disk is the last one saved\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(128 + sig);
}

static void on_signal(int sig) { take_signal(sig); }

// The stop signals are blocked in every thread but delivered to one of its
// own, which waits for them (sigwait) and takes them as on_signal does: a
// computing thread is never interrupted by a handler. (On the AMD EPYC, a
// handler run on a thread inside oneDNN's AVX-512 kernels corrupted the heap
// now and then: 1 run in 20 of SIGINT then SIGTERM aborted with "corrupted
// size vs. prev_size"; the same with OpenBLAS's AVX2 kernels, or with the
// signals taken here, never.) A thread that a library starts with the
// signals unblocked still has on_signal. After training the signals take
// their default action: the thread restores it and raises the signal.
static sigset_t waited;
static volatile sig_atomic_t signals_default;

static void *signal_thread(void *arg) {
    (void)arg;
    for (;;) {
        int sig;
        if (sigwait(&waited, &sig) != 0) continue;
        if (signals_default) {
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, sig);
            signal(sig, SIG_DFL);
            pthread_sigmask(SIG_UNBLOCK, &one, NULL);
            raise(sig);
        }
        take_signal(sig);
    }
    return NULL;
}

static const char *signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP"; }

static void install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;  // reads and writes under way carry on
    sigemptyset(&sa.sa_mask);
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        struct sigaction was;
        sigaction(stop_signals[i], NULL, &was);
        ignored_at_start[i] = was.sa_handler == SIG_IGN;
        if (!ignored_at_start[i]) sigaction(stop_signals[i], &sa, NULL);
        sigaddset(&set, stop_signals[i]);
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    // a parent may hand them down blocked (some shells do for background jobs):
    // blocked they stay, in every thread, and the signal thread takes them
    sigemptyset(&waited);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        if (!ignored_at_start[i]) sigaddset(&waited, stop_signals[i]);
    pthread_sigmask(SIG_BLOCK, &waited, NULL);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, signal_thread, NULL) != 0) {
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);  // no thread: the handler takes them, as before
    }
    pthread_attr_destroy(&attr);
}

// After training nothing is left to save: a signal ends the program at once.
static void default_signal_handlers(void) {
    signals_default = 1;
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        signal(stop_signals[i], ignored_at_start[i] ? SIG_IGN : SIG_DFL);
}

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
    FILE *log;             // --log, open while training
} run_t;

static run_t run;
static time_t started;  // when this invocation started (a resumed run: the resumption)

static void run_release(void) {
    if (run.have_acts) model_acts_free(&run.a);
    if (run.have_data) data_close(&run.d);
    if (run.have_model) model_free(&run.m);
    free(run.tok);
    free(run.tgt);
    free(run.seg);
    free(run.curve);
    run_state_release(&run.st);
    if (run.log) fclose(run.log);
    gemm_release();
    memset(&run, 0, sizeof run);
}

typedef struct {
    long steps_done;
    double final_loss, tokens_per_s;  // tokens/s: this invocation's
    double seconds;       // training seconds of the run: a resumed run's earlier ones and this invocation's
    double comm_seconds;  // MPI: in the gradient sums
    curve_point *curve;  // the learning curve (a resumed run's earlier points first), owned by the run
    int n_curve;
    long solved_step;    // --until-solved: the step at which order_acc reached it; 0: not (yet)
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

// Threads, signal handlers and the release of the run, before any OpenMP
// thread exists (so that they all inherit the signal mask).
static void start_process(options *o) {
#ifdef _OPENMP
    if (!o->threads) o->threads = omp_get_num_procs();
#else
    if (!o->threads) o->threads = 1;
#endif
    started = time(NULL);
    install_signal_handlers();  // first: the threads inherit the blocked signals
    startup_threads((int)o->threads);
    // the matrix engine, once a signal is already a clean stop (oneDNN's first
    // products take a moment at start-up); "auto" becomes the engine it picked, for the header and --json
    const char *const *engines = settings_find("gemm")->choices;
    char err[256];
    if (!gemm_use(engines[o->gemm], err, sizeof err)) die_usage("%s", err);
    for (int i = 1; engines[i]; i++)
        if (!strcmp(engines[i], gemm_name())) o->gemm = i;
    if (!gemm_set_precision(settings_find("precision")->choices[o->precision], err, sizeof err)) die_usage("%s", err);
    atexit(run_release);
}

// Every file the run reads or writes: no two may be the same file (a
// --save over the --data would destroy the corpus) — but for --resume and
// --save, which continue a run in place; and each output must be writable
// now, not after training: absent or a regular file, with room for a
// temporary beside it. Inputs are checked to be regular files where they
// are opened.
static void check_paths(const options *o) {
    const struct {
        const char *path, *what;
        int output;
    } f[] = {{data_is_path(o->data) ? o->data : NULL, "--data", 0}, {o->load, "--load", 0},
             {o->resume, "--resume", 0}, {o->init, "--init", 0},
             {o->save, "--save", 1}, {o->json, "--json", 1}, {o->attn_png, "--attn-png", 1}, {o->log, "--log", 1}};
    const int n = sizeof f / sizeof f[0];
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!f[i].path || !f[j].path || (f[i].path == o->resume && f[j].path == o->save)) continue;
            if (same_file(f[i].path, f[j].path))
                die_usage("%s '%s' and %s '%s' are the same file; %s", f[i].what, f[i].path, f[j].what, f[j].path,
                          f[i].output ? "give each output its own file" : "an output must not overwrite an input");
        }
    char err[1024];
    int usage;
    for (int i = 0; i < n; i++)
        if (f[i].output && f[i].path && dist_rank() == 0 && !check_output_path(f[i].path, f[i].what, &usage, err, sizeof err)) {
            if (usage) die_usage("%s", err);
            die_runtime("%s", err);
        }
}

// --sample's model and prompt, checked before the first step.
static void check_sampling(const options *o, const run_t *r) {
    if (!o->sample) return;
    if (!r->m.cfg.causal) die_usage("--sample needs a causal model (--attn causal); this one is bidirectional");
    const char *prompt = o->prompt ? o->prompt : data_default_prompt(&r->d);
    if (!prompt) die_usage("--sample with --data %s needs --prompt, a question such as '3141|'", o->data);
    int cap = (int)strlen(prompt) + 1;
    int *tok = xmalloc(sizeof(int) * (size_t)cap);
    char err[256];
    int n = data_encode(&r->d, prompt, tok, cap, err, sizeof err);
    free(tok);
    if (n < 0) die_usage("%s", err);
    if (n == 0) die_usage("--prompt is empty; give some text to continue");
}

// The model and its checkpoint state from --load/--resume: the model's shape
// and (for --resume) the run's schedule and data come from the file.
static void load_checkpoint(options *o, run_t *r) {
    const char *from = o->load ? o->load : o->resume;
    char err[1024];
    options file;
    int rc = ckpt_load(from, o->pe_opts.settings, o->pe_opts.n_settings, &r->m, &file, &r->st, o->resume != NULL, err,
                       sizeof err);
    if (rc == -2) die_usage("%s", err);
    if (rc != 0) die_runtime("%s", err);
    r->have_model = 1;
    long steps_given = o->steps;
    if (!settings_adopt(o, &file, o->resume ? WITH_RESUME : WITH_LOAD, dist_size(), err, sizeof err))
        die_usage("--resume %s: %s", from, err);
    if (o->resume) {
        if (options_given(o, "steps") && steps_given < r->st.step)
            die_usage("--resume %s: the run has done %ld steps, so --steps %ld would train none and shorten its "
                      "schedule; give --steps %ld or more, or leave it out (the file's %ld)", o->resume,
                      r->st.step, steps_given, r->st.step, file.steps);
        r->start_step = r->st.step;
    } else {
        o->steps = 0;  // --load trains nothing: its record (--json's train) is this invocation's, not the model's
        r->st.seconds = 0;
        free(r->st.curve);
        r->st.curve = NULL, r->st.n_curve = 0;
    }
}

// --init: a new model with the checkpoint's shape and encodings at the new
// --ctx, its weights copied; the schedule, optimiser, data and seed are the
// new run's. The evaluation-only options given that apply to fine-tuning
// (--rope-scale) become part of the model.
static void init_from_checkpoint(options *o, run_t *r) {
    model_t src;
    options file;
    run_state st;
    char err[1024];
    int rc = ckpt_load(o->init, NULL, 0, &src, &file, &st, 0, err, sizeof err);
    if (rc == -2) die_usage("%s", err);
    if (rc != 0) die_runtime("%s", err);
    run_state_release(&st);  // a fine-tune starts a record of its own: the base run's curve is not kept
    if (!settings_adopt(o, &file, WITH_INIT, dist_size(), err, sizeof err)) die_usage("--init %s: %s", o->init, err);
    model_config cfg = src.cfg;
    if (!cfg.base_ctx) cfg.base_ctx = cfg.ctx;
    cfg.ctx = (int)o->ctx;
    for (int i = 0; i < o->pe_opts.n_settings; i++) config_set(&cfg, o->pe_opts.settings[i].name, o->pe_opts.settings[i].value);
    if (!model_config_check(&cfg, err, sizeof err) || !pe_check_settings(cfg.pe, &cfg, err, sizeof err)) {
        model_free(&src);
        die_usage("--init %s: %s", o->init, err);
    }
    model_create(&r->m, &cfg);
    r->have_model = 1;
    for (int k = 0; k < src.tab.n; k++)
        if (src.tab.t[k].size != r->m.tab.t[k].size) {
            const char *name = src.tab.t[k].name;
            char what[32];
            snprintf(what, sizeof what, "%s", name);
            size_t was = src.tab.t[k].size, now = r->m.tab.t[k].size;
            int old_ctx = src.cfg.ctx;
            model_free(&src);
            die_usage("--init %s: tensor %s holds %zu values at the checkpoint's ctx %d but needs %zu at --ctx %ld "
                      "(a table with one row per position cannot change length)", o->init, what, was, old_ctx, now, o->ctx);
        }
    memcpy(r->m.params, src.params, sizeof(float) * src.tab.total);
    model_free(&src);
}

// A resumed run must train on the bytes it started on.
static void check_same_corpus(const options *o, const run_t *r) {
    const run_state *st = &r->st;
    if (!o->resume || !st->data_known) return;
    uint64_t size;
    uint32_t crc;
    data_identity(&r->d, &size, &crc);
    if (data_has(&r->d, CORPUS_TASKS) && crc != st->data_crc) {
        task_range was;  // the file holds the identity of the sizes, not the sizes: find them
        if (data_task_sizes_of(&r->d, st->data_crc, &was))
            die_usage("--resume %s: the run was trained with --task-len %d:%d, not %d:%d; give --task-len %d:%d",
                      o->resume, was.lo, was.hi, r->d.train_len.lo, r->d.train_len.hi, was.lo, was.hi);
        die_runtime("--resume %s: the run was trained with other task sizes than --task-len %d:%d (or another task); "
                    "give the --task-len it started with", o->resume, r->d.train_len.lo, r->d.train_len.hi);
    }
    if (size != st->data_size || crc != st->data_crc)
        die_runtime("--resume %s: the training data '%s' changed since the checkpoint was saved (%llu bytes, CRC-32 %08x "
                    "then; %llu bytes, %08x now); resume with the same corpus, or start a new run",
                    o->resume, o->data, (unsigned long long)st->data_size, (unsigned)st->data_crc,
                    (unsigned long long)size, (unsigned)crc);
}

// --data task:NAME: its sizes, and a --ctx that fits the longest training
// instance when none is given; the task options are refused for other data.
static void resolve_task(options *o, run_t *r, int from) {
    if (!data_has(&r->d, CORPUS_TASKS)) return;
    char err[512], sizes[32];
    const char *train = o->task_len;
    task_range was;  // --load (which refuses --task-len): the sizes the checkpoint trained on, from its identity
    if (o->load && r->st.data_known && data_task_sizes_of(&r->d, (uint32_t)r->st.data_crc, &was)) {
        snprintf(sizes, sizeof sizes, "%d:%d", was.lo, was.hi);
        train = sizes;
    }
    if (!data_task_sizes(&r->d, train, o->test_len, err, sizeof err)) die_usage("%s", err);
    if (o->task_ignore) {
        char *end;
        double p = strtod(o->task_ignore, &end);
        if (end == o->task_ignore || *end || !isfinite(p))
            die_usage("--task-ignore '%s': expected a probability, e.g. 0.8", o->task_ignore);
        if (!task_check_ignore(r->d.task, p, err, sizeof err)) die_usage("%s", err);
        r->d.task_ignore = (float)p;
    }
    if (!from && !o->init && !options_given(o, "ctx")) o->ctx = task_len_at(r->d.task, r->d.train_len.hi, r->d.task_ignore);
}

// Order is measured as time to solve (docs/experiments.md): on cats a new run's
// budget is a cap of CATS_STEP_CAP steps, the curve is measured every
// CATS_EVAL_EVERY steps, and training stops at the first point where
// order_acc reaches --until-solved (CATS_SOLVE_ACC unless given).
#define CATS_STEP_CAP 20000
#define CATS_EVAL_EVERY 100
#define CATS_SOLVE_ACC 0.99f

// The default warmup (300 steps) is at most this share of a run's steps:
// a short run warms up, trains at its peak and decays, as a long one does.
#define WARMUP_SHARE 5

// On a task --until-solved is off unless given; given, it reads task_acc at
// each --eval-every point (CATS_EVAL_EVERY unless given).
static void resolve_until_solved(options *o, const run_t *r, int from) {
    int cats = data_has(&r->d, CORPUS_ORDER_PROBE), task = data_has(&r->d, CORPUS_TASKS);
    if (!cats && !task) {
        if (o->until_solved > 0)  // 0 says "train every step", which any data can
            die_usage("--until-solved reads the order probe (--data cats) or a task's accuracy at its training sizes "
                      "(--data task:NAME), which --data %s has not; leave it out", o->data);
        return;
    }
    if (o->load) return;  // nothing trains
    if (task && !options_given(o, "until-solved")) return;
    if (cats && !options_given(o, "until-solved")) o->until_solved = CATS_SOLVE_ACC;
    if (cats && !from && !options_given(o, "steps")) o->steps = CATS_STEP_CAP;
    if (!options_given(o, "eval-every") && (cats || o->until_solved > 0)) o->eval_every = CATS_EVAL_EVERY;
    if (o->until_solved > 0 && !o->eval_every)
        die_usage("--until-solved checks %s at each --eval-every point; give --eval-every N, or --until-solved 0 "
                  "to train every step", cats ? "order_acc" : "task_acc");
}

// Tokens of validation scored for each point of the learning curve: enough
// for a steady number, a small share of a step's cost at the defaults.
#define CURVE_EVAL_TOKENS 4096
#define CURVE_TASK_INSTANCES 200  // and task instances of the training sizes

// Before the first step, what the evaluation after it will refuse: a
// length that can never run is said now (the others still run, and the
// refusal is recorded as before); a run where none can, or whose learning
// curve (--eval-every, at the training ctx) has no window, is refused.
static void check_evaluations(const options *o, const run_t *r) {
    char why[512];
    int runnable = 0;
    if (o->resume && !o->save && dist_rank() == 0)
        warn_msg("--resume %s without --save: the continued run is not saved; add --save FILE (the same file "
                 "continues it in place)", o->resume);
    for (int i = 0; i < o->eval_ctx.n; i++) {
        if (eval_windows(&r->m, &r->d, o->eval_ctx.v[i], (size_t)o->eval_tokens, why, sizeof why)) runnable++;
        else if (dist_rank() == 0)
            warn_msg("--eval-ctx %d will be refused after training: %s", o->eval_ctx.v[i], why);
    }
    if (o->eval_window && !r->m.cfg.causal)
        die_usage("--eval-window scores each next-token target with the tokens before it, which a bidirectional model "
                  "does not predict; use it with --attn causal, or leave it out");
    // A task's checkpoint evaluated at another density (--load --task-ignore)
    // may hold no training-size instance in its own ctx: the loss is then
    // left out (refused, as said above), and the accuracies still run.
    if (!runnable && !(o->load && data_has(&r->d, CORPUS_TASKS) && !options_given(o, "eval-ctx")))
        die_usage("no length of --eval-ctx can be evaluated for this model and data (%s); give one that can", why);
    if (o->eval_every && !o->load && !eval_windows(&r->m, &r->d, (int)o->ctx, CURVE_EVAL_TOKENS, why, sizeof why))
        die_usage("--eval-every measures the validation loss at the training ctx %ld, which cannot be evaluated (%s); "
                  "leave --eval-every out", o->ctx, why);
}

// A new model's configuration from the options.
static model_config new_model_config(const options *o, int vocab) {
    model_config cfg;
    if (strlen(o->pe) >= sizeof cfg.pe) die_usage("--pe '%.40s…': unknown encoding (see --list-pe)", o->pe);
    run_state st = {.vocab = vocab};
    return settings_model_config(o, &st);
}

// The run's one memory estimate, made before anything large is read or
// allocated: the model's shape from the options or the checkpoint's header,
// the corpus's size from the file system. A checkpoint or configuration that
// cannot be used is left to the steps that say why in detail.
static void check_memory(const options *o) {
    const char *from = o->load ? o->load : o->resume ? o->resume : o->init;
    model_config cfg;
    options file;
    run_state st;
    uint64_t n_from = 0;
    char err[1024];
    const char *data = o->data;
    int B = (int)o->batch, training = !o->load;
    if (from) {
        if (ckpt_peek(from, &file, &st, &n_from, o->resume != NULL, err, sizeof err) != 0) return;
        cfg = settings_model_config(&file, &st);
        if (o->resume) {
            data = file.data;
            B = file.batch / dist_size() > 0 ? (int)file.batch / dist_size() : 1;
            training = (options_given(o, "steps") ? o->steps : file.steps) > st.step;
        }
        if (o->init && options_given(o, "ctx")) cfg.ctx = (int)o->ctx;
    }
    int vocab;
    size_t corpus;
    int rc = data_describe(data, from ? cfg.causal : o->attn == 0, &vocab, &corpus, err, sizeof err);
    if (rc) die_status(rc, err);
    if (!from) cfg = new_model_config(o, vocab);
    if (!model_config_check(&cfg, err, sizeof err) || !pe_check_settings(cfg.pe, &cfg, err, sizeof err)) return;
    double other = (double)corpus + (o->init ? (double)n_from * sizeof(float) : 0.0);
    char what[160] = "";
    const double mib = 1024.0 * 1024.0;
    int k = 0;
    if (corpus) k = snprintf(what, sizeof what, "the corpus: %.0f MiB", corpus / mib);
    if (o->init)
        snprintf(what + k, sizeof what - k, "%sthe --init model: %.0f MiB", k ? ", " : "", (double)n_from * sizeof(float) / mib);
    if (!model_plan_fits(&cfg, o->attn_kernel == 1, B, cfg.ctx, training, other, what, err, sizeof err))
        die_runtime("%s", err);
}

// Resolves the run: the model (new or from a checkpoint), the data, and
// every check that can be made before the first step.
static void resolve_run(options *o, run_t *r) {
    int from = o->load || o->resume;
    check_memory(o);
    if (from) load_checkpoint(o, r);
    if (o->init) init_from_checkpoint(o, r);
    check_paths(o);
    int causal = o->attn == 0;
    r->have_data = 1;  // before opening: data_close also frees a half-opened corpus
    char err[1024];
    int rc = data_open(&r->d, o->data, causal, (unsigned long long)o->seed, err, sizeof err);
    if (rc) die_status(rc, err);
    if (!settings_check_needs(o, data_caps(&r->d), err, sizeof err)) die_usage("%s", err);
    if (o->tokenizer && (rc = data_load_tokenizer(&r->d, o->tokenizer, err, sizeof err))) die_status(rc, err);
    resolve_task(o, r, from);
    resolve_until_solved(o, r, from);
    if (o->init) {
        if (r->m.cfg.vocab != r->d.vocab)
            die_usage("--init %s has a vocabulary of %d but --data %s has %d; fine-tune on data of the same kind",
                      o->init, r->m.cfg.vocab, o->data, r->d.vocab);
    } else if (!from) {
        model_config cfg = new_model_config(o, r->d.vocab);
        if (!model_config_check(&cfg, err, sizeof err)) die_usage("%s", err);
        model_create(&r->m, &cfg);
        r->have_model = 1;
        model_init_weights(&r->m, (unsigned long long)o->seed);
    } else if (r->m.cfg.vocab != r->d.vocab) {
        die_usage("checkpoint '%s' has a vocabulary of %d but --data %s has %d; give the --data it was trained on",
                  o->load ? o->load : o->resume, r->m.cfg.vocab, o->data, r->d.vocab);
    }
    check_same_corpus(o, r);
    r->m.attn_fused = o->attn_kernel == 1;  // how attention is computed, not part of the model
    if (o->resume) r->d.rng.s = r->st.data_rng;
    // training rows must hold an instance; with --load nothing trains (an
    // evaluation sizes its own windows, and refuses a length it cannot hold)
    if (!o->load && !data_check_ctx(&r->d, (int)o->ctx, err, sizeof err)) die_usage("%s", err);
    if (strlen(o->data) >= CKPT_PATH_MAX && o->save) die_usage("--data: a path of %zu bytes is longer than any the system opens", strlen(o->data));
    check_sampling(o, r);
    if (o->stop_at && o->stop_at < o->steps && (o->json || o->attn_png || o->sample || o->eval_ctx.n))
        die_usage("--stop-at %ld ends the run before its evaluation, so --json, --attn-png, --sample and --eval-ctx would "
                  "do nothing; give them when you --resume", o->stop_at);
    if (!from && options_given(o, "warmup") && o->warmup > o->steps && o->steps > 0)
        die_usage("--warmup %ld is longer than --steps %ld; give a --warmup of at most %ld", o->warmup, o->steps, o->steps);
    if (!from && !options_given(o, "warmup") && o->warmup > o->steps / WARMUP_SHARE)  // the default fits a short run
        o->warmup = o->steps / WARMUP_SHARE;
    if (!o->eval_ctx.n) o->eval_ctx.v[o->eval_ctx.n++] = (int)o->ctx;
    if (!(o->stop_at && o->stop_at < o->steps)) check_evaluations(o, r);
}

static void write_checkpoint(const options *o, const run_t *r, const train_report *tr);

// Every process calls it: they compare their weights (CRC-32), process 0
// writes, and all wait until the file is in place.
static void save_checkpoint(const options *o, const run_t *r, const train_report *tr) {
    long step = tr->steps_done;
    unsigned crc = (unsigned)crc32_update(0, r->m.params, sizeof(float) * r->m.tab.total), lo, hi;
    dist_min_max(crc, &lo, &hi);
    if (lo != hi)
        die_runtime("after step %ld the processes' weights differ (CRC-32 %08x to %08x); stopped without saving; the "
                    "last checkpoint written is intact", step, lo, hi);
    if (dist_rank() == 0) write_checkpoint(o, r, tr);
    dist_barrier();
}

static void write_checkpoint(const options *o, const run_t *r, const train_report *tr) {
    run_state st = {.vocab = r->m.cfg.vocab, .base_ctx = r->m.cfg.base_ctx, .step = tr->steps_done,
                    .data_rng = r->d.rng.s, .seconds = (float)tr->seconds, .curve = tr->curve, .n_curve = tr->n_curve};
    uint32_t crc;
    data_identity(&r->d, &st.data_size, &crc);
    st.data_crc = crc;
    static options file;  // the checkpoint's settings: the global batch (an options struct is large for a stack)
    options_copy(&file, o);
    settings_scale_per_process(&file, dist_size());
    char err[512];
    if (ckpt_save(o->save, &r->m, &file, &st, 1, err, sizeof err) != 0) die_runtime("%s", err);
}

static void write_json(const char *path, const options *o, const model_t *m, const train_report *tr,
                       const eval_report *er);

// On SIGINT/SIGTERM after a step: save (with --save), write --json (marked
// interrupted, without evaluations), say so, exit 128+signal.
static void stop_for_signal(const options *o, const run_t *r, train_report *tr, long step) {
    int sig = dist_size() > 1 ? agreed_stop : stop_signal;
    const char *name = signal_name(sig);
    tr->stopped_by = sig;
    if (o->save) {
        printf("interrupted by %s after step %ld; saving %s… (a second signal stops at once and keeps the last "
               "checkpoint saved)\n", name, step, o->save);
        fflush(stdout);
        save_checkpoint(o, r, tr);
        printf("saved %s; continue with --resume %s\n", o->save, o->save);
    } else {
        printf("interrupted by %s after step %ld; nothing saved (no --save)\n", name, step);
    }
    if (o->json && dist_rank() == 0) {
        static eval_report none;  // large for a stack
        write_json(o->json, o, &r->m, tr, &none);
        printf("wrote %s: the training so far, marked interrupted, without evaluations\n", o->json);
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

// MPI: the global step from every process's share. Each process's gradient
// is the mean over its targets, so it is weighted by its share of the
// targets before the sum; the loss likewise. A stop signal that reached any
// process stops them all after this step.
static double combine_processes(model_t *m, const int *tgt, size_t n, double loss) {
    double mine = 0;
    for (size_t i = 0; i < n; i++) mine += tgt[i] >= 0;
    double v[4] = {mine, mine ? loss * mine : 0.0, stop_signal != 0, stop_signal};
    dist_sum_doubles(v, 4);
    agreed_stop = v[2] > 0 ? (int)(v[3] / v[2]) : 0;
    if (v[0] == 0) return loss;
    float w = (float)(mine / v[0]);
    for (size_t i = 0; i < m->tab.total; i++) m->grads[i] *= w;
    dist_sum_floats(m->grads, m->tab.total);
    if (agreed_stop && !stop_signal) stop_signal = agreed_stop;
    return v[1] / v[0];
}

// The progress line warns when the throughput since the last line (over at
// least SLOW_WINDOW_SECONDS) is under 1/SLOW_FACTOR of the run's best so far.
#define SLOW_WINDOW_SECONDS 0.5
#define SLOW_FACTOR 3
// After this much training a run whose remaining time is estimated at
// LONG_RUN_SECONDS or more says so, once.
#define ESTIMATE_AFTER_SECONDS 3.0
#define LONG_RUN_SECONDS 600.0

// The start of this invocation (UTC, ISO 8601) into when (32 bytes), and
// the commit as a JSON value (a string, or null outside git): what --log's
// first line and --json's "pelab" both say.
static void start_time_text(char *when) { strftime(when, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime(&started)); }

static void json_commit(FILE *f) {
    if (PELAB_COMMIT[0]) json_string(f, PELAB_COMMIT);
    else fprintf(f, "null");
}

// --log: one JSON object per line, appended and flushed as training goes,
// so that a run's curve survives whatever ends it; a resumed run appends.
static void log_open(const options *o, run_t *r) {
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

static void log_point(run_t *r, long step, double loss, double lr, const train_report *tr, const curve_point *c) {
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

// The training loop, from the run's start step to --stop-at or --steps.
static void train(const options *o, run_t *r, train_report *tr) {
    // A resumed run continues its record: its time and its curve so far.
    const double before = r->st.seconds;
    *tr = (train_report){r->start_step, 0.0, 0.0, before, 0.0, NULL, 0, 0, 0};
    const int B = (int)o->batch, T = (int)o->ctx;
    long end_step = o->stop_at && o->stop_at < o->steps ? o->stop_at : o->steps;
    size_t points = (size_t)r->st.n_curve + (o->eval_every ? (size_t)((end_step - r->start_step) / o->eval_every + 2) : 0);
    if (points) {
        tr->curve = r->curve = xcalloc(points, sizeof *tr->curve);
        for (int i = 0; i < r->st.n_curve; i++) tr->curve[tr->n_curve++] = r->st.curve[i];
    }
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
    log_open(o, r);
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
            t0 += now_seconds() - e0;  // tokens/s counts training only
        }
        if ((step + 1) % log_every == 0 || step + 1 == end_step || curve_now)
            log_point(r, step + 1, loss, hp.lr, tr, curve_now ? &tr->curve[tr->n_curve - 1] : NULL);
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
            printf("step %ld/%ld loss %.4f lr %.2e tok/s %.0f elapsed %.1fs eta %.1fs", step + 1, o->steps, loss, hp.lr,
                   tr->tokens_per_s, tr->seconds, eta);
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
        if (hk->step_sleep_ms > 0) usleep((useconds_t)hk->step_sleep_ms * 1000);
        if (step + 1 == hk->kill_at && dist_rank() == hk->kill_rank) raise(SIGKILL);
        if (o->save && o->save_every && (step + 1) % o->save_every == 0 && step + 1 < end_step) save_checkpoint(o, r, tr);
        if (R > 1 ? agreed_stop : stop_signal) stop_for_signal(o, r, tr, step + 1);
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

static void write_json(const char *path, const options *o, const model_t *m, const train_report *tr, const eval_report *er) {
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

// Generates --sample tokens after the prompt. [MASK] and cats' padding are
// never drawn: they are not text.
static void sample_text(const options *o, run_t *r) {
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
    rng_t rng = {(uint64_t)o->seed * 7919 + 17};
    char piece[260];  // a GPT-2 token's text is at most 255 bytes
    printf("sample: ");
    for (int i = 0; i < n; i++) {
        data_decode(d, ctx[i], piece, sizeof piece);
        fputs(piece, stdout);
    }
    int V = m->cfg.vocab, last_text = 0;
    float *p = xmalloc(sizeof(float) * V);
    for (int v = 0; v < V; v++)
        if (data_is_text(d, v)) last_text = v;
    for (long s = 0; s < o->sample; s++) {
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
        for (int v = 0; v < V; v++) sum += (p[v] = data_is_text(d, v) ? expf((z[v] - mx) / o->temperature) : 0.0f);
        float u = rng_uniform(&rng) * sum, acc = 0.0f;
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
    free(win);
    free(ctx);
    model_acts_free(&a);
}

// The results: JSON, the attention picture, a sample.
static void report(const options *o, run_t *r, const train_report *tr, const eval_report *er) {
    if (o->json) write_json(o->json, o, &r->m, tr, er);
    if (o->attn_png) {
        char err[1024];
        if (viz_attention_png(&r->m, &r->d, o->attn_png, err, sizeof err) != 0) die_runtime("%s", err);
        if (!o->quiet) printf("attention picture: %s\n", o->attn_png);
    }
    if (o->sample) sample_text(o, r);
}

// After the last step: the final save. Returns 0 when the run stopped early
// (--stop-at) and has nothing to evaluate yet.
static int finish_training(const options *o, const run_t *r, const train_report *tr) {
    // The handlers stay through the final save: a signal now waits for it.
    if (test_hooks()->signal_at_save) {  // the test hook: a signal to the process as the save begins
        kill(getpid(), test_hooks()->signal_at_save);
        // signal_thread takes it when the scheduler runs it; on busy cores
        // that could be after this small save, so wait (up to 10 s) as for
        // a signal that arrived just before it.
        for (int ms = 0; ms < 10000 && !stop_signal; ms++) usleep(1000);
    }
    if (o->save && !o->load) {
        save_checkpoint(o, r, tr);
        if (!o->quiet) printf("saved %s at step %ld\n", o->save, tr->steps_done);
    }
    default_signal_handlers();
    if (stop_signal) {
        printf("interrupted by %s after training; %s\n", signal_name(stop_signal), o->save ? "the run is saved" : "nothing saved (no --save)");
        fflush(stdout);
        exit(128 + stop_signal);
    }
    if (o->stop_at && tr->steps_done < o->steps && !tr->solved_step) {
        printf("stopped at step %ld of %ld; continue with --resume %s\n", tr->steps_done, o->steps, o->save);
        return 0;
    }
    return 1;
}

// The results printed are lost when stdout fails (a full disk, a closed
// pipe): say so and exit 1 rather than 0.
static int check_stdout(const options *o, int status) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return status;
    fprintf(stderr, "train: cannot write to standard output (%s): the results printed there are lost%s\n",
            errno ? strerror(errno) : "write error", o->save || o->json ? " (--save and --json files were written)" : "");
    return EXIT_RUNTIME;
}

// MPI: every process must run the same settings (mpirun can give each its
// own command line): a different --seed or --pe would train two models and
// exit 0, a different --eval-ctx would hang a collective. The processes
// compare a hash of each setting of the schema (as the --json config writes
// it; the rows marked SET_LOCAL may differ) before the first step; a
// mismatch is refused on every process, naming the setting.
static void check_same_settings(const options *o, const run_t *r) {
    if (dist_size() == 1) return;
    for (int i = 0; i < settings_count; i++) {
        const setting *s = &settings_schema[i];
        if ((s->flags & (SET_LOCAL | SET_STATE)) || s->type == SET_ACTION) continue;
        unsigned h = setting_hash(o, &r->m, i), lo, hi;
        dist_min_max(h, &lo, &hi);
        if (lo != hi)
            die_usage("the %d processes were given different settings: %s%s differs (process %d's hash %08x; they range "
                      "from %08x to %08x); give every process the same command line", dist_size(),
                      s->name ? "--" : "", s->name ? s->name : "an encoding's option", dist_rank(), h, lo, hi);
    }
}

static void print_header(const options *o, const run_t *r) {
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

int main(int argc, char **argv) {
    startup_environment(argv);
    dist_init(&argc, &argv);
    if (dist_rank() > 0 && !freopen("/dev/null", "w", stdout)) die_runtime("cannot silence process %d's output", dist_rank());
    static options o;  // large (it keeps the strings a checkpoint gives)
    options_parse(&o, argc, argv);
    start_process(&o);
    resolve_run(&o, &run);
    check_same_settings(&o, &run);
    print_header(&o, &run);

    train_report tr;
    train(&o, &run, &tr);
    if (!finish_training(&o, &run, &tr)) {  // --stop-at: resume later
        dist_finish();
        return check_stdout(&o, 0);
    }
    eval_report er;
    evaluate(&o, &run, &er);
    if (dist_rank() == 0) report(&o, &run, &tr, &er);
    for (int i = 0; i < MAX_EVAL_CTX; i++) free(er.attn[i]), free(er.probe[i]);
    dist_finish();
    return check_stdout(&o, er.any_ok && !er.failed ? 0 : EXIT_RUNTIME);
}
