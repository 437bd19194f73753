// run.c — see run.h.
#include "run.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../core/dist.h"
#include "../core/files.h"
#include "../core/startup.h"
#include "../core/test_hooks.h"
#include "../model/gemm.h"
#include "signals.h"

static run_t run;
static time_t started;  // when this invocation started (a resumed run: the resumption)

time_t run_start_time(void) { return started; }

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

// The products' precision (--precision; a resumed run's is its checkpoint's,
// set again once that is read); "auto" becomes the precision it picked, as
// --gemm's does, for the header, --json and the checkpoint.
static void use_precision(options *o) {
    const char *const *precisions = settings_find("precision")->choices;
    char err[256];
    if (!gemm_set_precision(precisions[o->precision], err, sizeof err)) {
        if (o->resume) die_usage("--resume %s: the run's products are %s: %s", o->resume, precisions[o->precision], err);
        die_usage("%s", err);
    }
    for (int i = 0; precisions[i]; i++)
        if (!strcmp(precisions[i], gemm_precision())) o->precision = i;
}

// Threads, signal handlers and the release of the run, before any OpenMP
// thread exists (so that they all inherit the signal mask).
run_t *run_start(options *o) {
#ifdef _OPENMP
    if (!o->threads) o->threads = omp_get_num_procs();
#else
    if (!o->threads) o->threads = 1;
#endif
    started = time(NULL);
    signals_install();  // first: the threads inherit the blocked signals
    startup_threads((int)o->threads);
    // the matrix engine, once a signal is already a clean stop (oneDNN's first
    // products take a moment at start-up); "auto" becomes the engine it picked, for the header and --json
    const char *const *engines = settings_find("gemm")->choices;
    char err[256];
    if (!gemm_use(engines[o->gemm], err, sizeof err)) die_usage("%s", err);
    for (int i = 1; engines[i]; i++)
        if (!strcmp(engines[i], gemm_name())) o->gemm = i;
    use_precision(o);
    atexit(run_release);
    return &run;
}

// ---- the run folder (--out) ----

// Its files, beside what the options name (each a path of at most CKPT_PATH_MAX + 16 bytes).
static char folder_paths[3][CKPT_PATH_MAX + 16];

static const char *in_folder(const run_t *r, int k, const char *name) {
    snprintf(folder_paths[k], sizeof folder_paths[k], "%s/%s", r->folder, name);
    return folder_paths[k];
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

// mkdir -p: 0, or -1 with errno.
static int make_dirs(const char *path) {
    char p[CKPT_PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static void remove_empty_folder(void) {
    if (run.folder[0]) rmdir(run.folder);  // fails, as it should, once anything is in it
}

// A run that trains keeps its record in a folder (issue 59): the outputs the
// options do not name — the checkpoint (model.ck, and model.best.ck beside
// it), run.json, log.jsonl — and curve.png. --out names it ("none": no
// folder); a resumed run whose checkpoint sits in a run folder continues
// there; otherwise a new one, PELAB_RUNS (default "runs"; "none": none) / DATE-TIME-PE,
// made now (the processes of an MPI run agree on its name) and removed at
// exit if the run was refused before writing anything into it.
static void resolve_run_folder(options *o, run_t *r) {
    r->folder[0] = r->curve_png[0] = '\0';
    if (o->load || (o->out && !strcmp(o->out, "none"))) return;
    char dir[CKPT_PATH_MAX];
    if (o->out) {
        if (strlen(o->out) >= sizeof dir - 32) die_usage("--out: a path of %zu bytes is too long", strlen(o->out));
        snprintf(r->folder, sizeof r->folder, "%s", o->out);
    } else if (o->resume) {
        snprintf(dir, sizeof dir, "%s", o->resume);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        else snprintf(dir, sizeof dir, ".");
        char probe[CKPT_PATH_MAX + 16];
        snprintf(probe, sizeof probe, "%s/run.json", dir);
        if (access(probe, F_OK) == 0) snprintf(r->folder, sizeof r->folder, "%s", dir);
    }
    if (!r->folder[0] && !o->out) {
        const char *base = getenv("PELAB_RUNS");
        if (!base || !*base) base = "runs";
        if (!strcmp(base, "none")) return;  // a script's environment: only what is named is kept
        if (strlen(base) >= sizeof dir - 64 - strlen(o->pe)) die_usage("PELAB_RUNS: a path of %zu bytes is too long", strlen(base));
        unsigned lo, hi;
        dist_min_max((unsigned)run_start_time(), &lo, &hi);  // MPI: the earliest start names the folder
        time_t t = (time_t)lo;
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&t));
        unsigned k = 1;
        for (; dist_rank() == 0 && k < 1000; k++) {  // a folder of that name already there: -2, -3 …
            if (k == 1) snprintf(r->folder, sizeof r->folder, "%s/%s-%s", base, stamp, o->pe);
            else snprintf(r->folder, sizeof r->folder, "%s/%s-%s-%u", base, stamp, o->pe, k);
            if (access(r->folder, F_OK) != 0) break;
        }
        dist_min_max(k, &lo, &hi);
        if (hi == 1) snprintf(r->folder, sizeof r->folder, "%s/%s-%s", base, stamp, o->pe);
        else snprintf(r->folder, sizeof r->folder, "%s/%s-%s-%u", base, stamp, o->pe, hi);
    }
    if (dist_rank() == 0) {
        int existed = is_dir(r->folder);
        if (!existed && make_dirs(r->folder) != 0)
            die_runtime("cannot make the run folder '%s': %s; give --out DIR, or --out none to keep only what "
                        "--save/--json/--log name", r->folder, strerror(errno));
        if (!existed) atexit(remove_empty_folder);
    }
    dist_barrier();
    o->out = r->folder;
    if (!o->save) o->save = in_folder(r, 0, "model.ck");
    if (!o->json) o->json = in_folder(r, 1, "run.json");
    if (!o->log) o->log = in_folder(r, 2, "log.jsonl");
    snprintf(r->curve_png, sizeof r->curve_png, "%s/curve.png", r->folder);
}

// A checkpoint that --save would replace must be this run's own (its chain
// of resumes, or the same settings and corpus run again), unless
// --overwrite: a file that is not a checkpoint, or another run's, is
// refused before training. Compared: every setting a checkpoint stores but
// the steps (a resume may extend them) and the data's path (the corpus is
// compared by its size and CRC-32).
static void check_replacing(const options *o, const run_t *r, const char *path) {
    if (o->overwrite || !path || access(path, F_OK) != 0 || (o->resume && same_file(path, o->resume))) return;
    static options file;  // large for a stack
    run_state st = {0};
    uint64_t n;
    char err[1024];
    if (ckpt_peek(path, &file, &st, &n, 0, err, sizeof err) != 0)
        die_usage("--save '%s' would replace a file that is not a checkpoint pelab can read (%s); give another path, or "
                  "--overwrite", path, err);
    run_state_release(&st);
    uint64_t size;
    uint32_t crc;
    data_identity(&r->d, &size, &crc);
    static options mine;
    options_copy(&mine, o);
    settings_scale_per_process(&mine, dist_size());  // a checkpoint holds the global batch
    const char *differs = size != st.data_size || crc != (uint32_t)st.data_crc ? "the corpus" : NULL;
    for (int i = 0; i < settings_count && !differs; i++) {
        const setting *s = &settings_schema[i];
        if (!s->key || !s->name || (s->flags & SET_STATE) || !strcmp(s->name, "steps") || !strcmp(s->name, "data") ||
            !strcmp(s->name, "eval-every") || !strcmp(s->name, "until-solved") || s->type == SET_PE_OPTIONS)
            continue;
        if (setting_hash(&mine, &r->m, i) != setting_hash(&file, &r->m, i)) differs = s->name;
    }
    if (differs)
        die_usage("--save '%s' holds another run's model (%s%s differs: %s, %ld steps done); give another path, or "
                  "--overwrite to replace it", path, strcmp(differs, "the corpus") ? "--" : "", differs, file.pe,
                  st.step);
}

// Every file the run reads or writes (the schema's rows with a path role):
// no two may be the same file (a --save over the --data would destroy the
// corpus) — but for --resume and --save, which continue a run in place; each
// output must be writable now, not after training: absent or a regular file,
// with room for a temporary beside it; and no input may be taken for a stale
// temporary and tidied away. Inputs are checked to be regular files where
// they are opened.
static void check_paths(const options *o) {
    struct {
        const char *path, *name;
        unsigned role;
    } f[16];
    int n = 0;
    for (int i = 0; i < settings_count && n < 16; i++) {
        const setting *s = &settings_schema[i];
        if (!s->path) continue;
        const char *path = *(const char *const *)((const char *)o + s->field);
        if (!path || (!strcmp(s->name, "data") && !data_is_path(path))) continue;  // a built-in corpus names no file
        f[n].path = path, f[n].name = s->name, f[n].role = s->path, n++;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int in_place = (!strcmp(f[i].name, "resume") && !strcmp(f[j].name, "save")) ||
                           (!strcmp(f[i].name, "save") && !strcmp(f[j].name, "resume"));
            if (in_place || !same_file(f[i].path, f[j].path)) continue;
            int input = f[i].role == PATH_INPUT || f[j].role == PATH_INPUT;
            die_usage("--%s '%s' and --%s '%s' are the same file; %s", f[i].name, f[i].path, f[j].name, f[j].path,
                      input ? "an output must not overwrite an input" : "give each output its own file");
        }
    char err[1024], what[64];
    int usage;
    for (int i = 0; i < n; i++) {
        if (f[i].role == PATH_INPUT) {
            files_protect(f[i].path);
            continue;
        }
        snprintf(what, sizeof what, "--%s", f[i].name);
        if (dist_rank() == 0 && !check_output_path(f[i].path, what, &usage, err, sizeof err)) {
            if (usage) die_usage("%s", err);
            die_runtime("%s", err);
        }
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
        use_precision(o);  // the run's own, from the file
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
    for (int i = 0; i < o->pe_opts.n_settings; i++) config_copy_setting(&cfg, &o->pe_opts.settings[i]);
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

// A value that breaks a rule between settings: the command line's mistake
// when the option was given there (exit 2), else the checkpoint's — a value
// that came from a file is a corrupt file, whatever rule it breaks (exit 1,
// naming the file and the key).
static void refuse_value(const options *o, const char *option, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
static void refuse_value(const options *o, const char *option, const char *fmt, ...) {
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    const char *file = o->load ? o->load : o->resume ? o->resume : o->init;
    const setting *s = settings_find(option);
    if (options_given(o, option) || !file || !s || !s->key) die_usage("%s", why);
    die_runtime("checkpoint '%s' is corrupt: its settings contradict each other at '%s' (%s)", file, s->key, why);
}

// --data task:NAME: its sizes, and a --ctx that fits the longest training
// instance when none is given; the task options are refused for other data.
static void resolve_task(options *o, run_t *r, int from) {
    if (!data_has(&r->d, CORPUS_TASKS)) {
        if (o->task_ignore)  // the command line's is refused by its needs; a checkpoint's here
            refuse_value(o, "task-ignore", "--task-ignore needs --data task:flipflop or task:selective-copy, not %s",
                         o->data);
        return;
    }
    char err[512], sizes[32];
    const char *train = o->task_len;
    task_range was;  // --load (which refuses --task-len): the sizes the checkpoint trained on, from its identity
    if (o->load && r->st.data_known && data_task_sizes_of(&r->d, (uint32_t)r->st.data_crc, &was)) {
        snprintf(sizes, sizeof sizes, "%d:%d", was.lo, was.hi);
        train = sizes;
    }
    if (!data_task_sizes(&r->d, train, o->test_len, err, sizeof err))
        refuse_value(o, options_given(o, "test-len") ? "test-len" : "task-len", "%s", err);
    if (o->task_ignore) {
        char *end;
        double p = strtod(o->task_ignore, &end);
        if (end == o->task_ignore || *end || !isfinite(p))
            refuse_value(o, "task-ignore", "--task-ignore '%s': expected a probability, e.g. 0.8", o->task_ignore);
        if (!task_check_ignore(r->d.task, p, err, sizeof err)) refuse_value(o, "task-ignore", "%s", err);
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

// Validation by default on text and token shards (a new run, not a task's or
// cats', which have their own): the held-out loss about VAL_POINTS times a
// run, and no more often than every VAL_TRAIN_TOKENS training tokens, so that
// the points (CURVE_EVAL_TOKENS each, forward only) cost a few percent of the
// training (a step's backward pass is twice its forward: under 1/12 here).
// The evaluations read the held-out split and draw nothing from the training
// streams, so the training's bits are those of --eval-every 0. A split too
// short for one window at the training ctx leaves it off, and says so.
#define VAL_POINTS 20
#define VAL_TRAIN_TOKENS (4 * CURVE_EVAL_TOKENS)

static void resolve_validation(options *o, const run_t *r) {
    if (o->load || o->resume || options_given(o, "eval-every") || o->eval_every ||
        data_has(&r->d, CORPUS_ORDER_PROBE) || data_has(&r->d, CORPUS_TASKS))
        return;
    char why[512];
    if (!eval_scorable_windows(&r->m, &r->d, (int)o->ctx, CURVE_EVAL_TOKENS, why, sizeof why)) {
        if (dist_rank() == 0 && !o->quiet)
            warn_msg("no validation loss during training: %s (--eval-every stays 0)", why);
        return;
    }
    long tokens_per_step = o->batch * o->ctx * dist_size();
    long every = o->steps / VAL_POINTS, least = (VAL_TRAIN_TOKENS + tokens_per_step - 1) / tokens_per_step;
    o->eval_every = every > least ? every : least;
}

const char *run_best_path(const options *o, char *buf, size_t cap) {
    size_t n = strlen(o->save);
    int ck = n > 3 && !strcmp(o->save + n - 3, ".ck");
    if ((size_t)snprintf(buf, cap, "%.*s.best%s", (int)(ck ? n - 3 : n), o->save, ck ? ".ck" : "") >= cap) return NULL;
    return buf;
}

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
        if (eval_scorable_windows(&r->m, &r->d, o->eval_ctx.v[i], (size_t)o->eval_tokens, why, sizeof why)) runnable++;
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
    if (o->eval_every && !o->load && !eval_scorable_windows(&r->m, &r->d, (int)o->ctx, CURVE_EVAL_TOKENS, why, sizeof why))
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
void run_resolve(options *o, run_t *r) {
    int from = o->load || o->resume;
    check_memory(o);
    if (from) load_checkpoint(o, r);
    if (o->init) init_from_checkpoint(o, r);
    resolve_run_folder(o, r);
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
    long cap = test_hooks()->max_steps;
    if (cap > 0 && o->steps > cap && !o->load) {  // the suite's run of the documents' examples
        if (o->stop_at) o->stop_at = o->stop_at * cap / o->steps > 0 ? o->stop_at * cap / o->steps : 1;
        o->steps = cap;
    }
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
        refuse_value(o, "data", "checkpoint '%s' has a vocabulary of %d but --data %s has %d; give the --data it was "
                     "trained on", o->load ? o->load : o->resume, r->m.cfg.vocab, o->data, r->d.vocab);
    }
    check_same_corpus(o, r);
    r->m.attn_fused = o->attn_kernel == 1;  // how attention is computed, not part of the model
    if (o->resume) r->d.rng.s = r->st.data_rng;
    // training rows must hold an instance; with --load nothing trains (an
    // evaluation sizes its own windows, and refuses a length it cannot hold)
    if (!o->load && !data_check_ctx(&r->d, (int)o->ctx, err, sizeof err)) refuse_value(o, "ctx", "%s", err);
    if (strlen(o->data) >= CKPT_PATH_MAX && o->save) die_usage("--data: a path of %zu bytes is longer than any the system opens", strlen(o->data));
    check_sampling(o, r);
    if (o->stop_at && o->stop_at < o->steps)  // the options of what follows training would do nothing
        for (int i = 0; i < settings_count; i++)
            if ((settings_schema[i].flags & SET_AFTER_TRAINING) && o->given[i])
                die_usage("--stop-at %ld ends the run before its evaluation, so --%s would do nothing; give it when you "
                          "--resume", o->stop_at, settings_schema[i].name);
    if (!from && options_given(o, "warmup") && o->warmup > o->steps && o->steps > 0)
        die_usage("--warmup %ld is longer than --steps %ld; give a --warmup of at most %ld", o->warmup, o->steps, o->steps);
    if (!from && !options_given(o, "warmup") && o->warmup > o->steps / WARMUP_SHARE)  // the default fits a short run
        o->warmup = o->steps / WARMUP_SHARE;
    resolve_validation(o, r);
    if (dist_rank() == 0 && !o->load) {
        char buf[CKPT_PATH_MAX + 16];
        check_replacing(o, r, o->save);
        if (o->eval_every && o->keep != KEEP_LAST && o->save) check_replacing(o, r, run_best_path(o, buf, sizeof buf));
    }
    if (!o->eval_ctx.n) o->eval_ctx.v[o->eval_ctx.n++] = (int)o->ctx;
    if (!(o->stop_at && o->stop_at < o->steps)) check_evaluations(o, r);
}

static void write_checkpoint(const options *o, const run_t *r, const train_report *tr, const char *path) {
    run_state st = {.vocab = r->m.cfg.vocab, .base_ctx = r->m.cfg.base_ctx, .step = tr->steps_done,
                    .data_rng = r->d.rng.s, .seconds = (float)tr->seconds, .curve = tr->curve, .n_curve = tr->n_curve};
    uint32_t crc;
    data_identity(&r->d, &st.data_size, &crc);
    st.data_crc = crc;
    static options file;  // the checkpoint's settings: the global batch (an options struct is large for a stack)
    options_copy(&file, o);
    settings_scale_per_process(&file, dist_size());
    char err[512];
    if (ckpt_save(path, &r->m, &file, &st, 1, err, sizeof err) != 0) die_runtime("%s", err);
}

// Every process calls it: they compare their weights (CRC-32), process 0
// writes, and all wait until the file is in place.
void run_save_to(const options *o, const run_t *r, const train_report *tr, const char *path) {
    long step = tr->steps_done;
    unsigned crc = (unsigned)crc32_update(0, r->m.params, sizeof(float) * r->m.tab.total), lo, hi;
    dist_min_max(crc, &lo, &hi);
    if (lo != hi)
        die_runtime("after step %ld the processes' weights differ (CRC-32 %08x to %08x); stopped without saving; the "
                    "last checkpoint written is intact", step, lo, hi);
    if (dist_rank() == 0) write_checkpoint(o, r, tr, path);
    dist_barrier();
}

void run_save(const options *o, const run_t *r, const train_report *tr) { run_save_to(o, r, tr, o->save); }

// MPI: every process must run the same settings (mpirun can give each its
// own command line): a different --seed or --pe would train two models and
// exit 0, a different --eval-ctx would hang a collective. The processes
// compare a hash of each setting of the schema (as the --json config writes
// it; the rows marked SET_LOCAL may differ) before the first step; a
// mismatch is refused on every process, naming the setting.
void run_check_same_settings(const options *o, const run_t *r) {
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
    // The same text may name different files (each process has its own
    // working folder, or its own machine): the processes compare what the
    // paths name — the corpus's size and CRC-32, and the model they start
    // from (its weights' CRC-32 and step: a --load, --resume or --init file,
    // or the weights a --seed makes).
    uint64_t size;
    uint32_t crc;
    data_identity(&r->d, &size, &crc);
    unsigned lo, hi, corpus = crc ^ (unsigned)size ^ (unsigned)(size >> 32);
    dist_min_max(corpus, &lo, &hi);
    if (lo != hi)
        die_runtime("the %d processes read different corpora under --data %s (process %d's: %llu bytes, CRC-32 %08x); "
                    "give every process the same file", dist_size(), o->data, dist_rank(), (unsigned long long)size,
                    (unsigned)crc);
    unsigned model = crc32_update(0, r->m.params, sizeof(float) * r->m.tab.total) ^ (unsigned)r->st.step;
    dist_min_max(model, &lo, &hi);
    if (lo != hi)
        die_runtime("the %d processes start from different models (process %d's weights' CRC-32 and step %ld: %08x)%s; "
                    "give every process the same checkpoint", dist_size(), dist_rank(), r->st.step, model,
                    o->load ? " under --load" : o->resume ? " under --resume" : o->init ? " under --init" : "");
}
