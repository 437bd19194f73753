// settings.h — a run's settings, from one schema (run/settings.c): each row
// is one setting — its name on the command line, its key in a checkpoint, its
// type, range and default, which commands take it, whether a checkpoint's
// value replaces it, what it needs to have an effect, its help text. The
// parser and --help (cli/options.c), the checkpoint's writer and reader
// (run/ckpt.c), the JSON "config", the comparison of the processes' settings
// under MPI and the options page's test all read it, so adding a setting is one row
// (and a field below). The encodings' own options (--rope-base …) are
// declared in their files (model/pe/) and stand in the schema as one row.
#ifndef PELAB_SETTINGS_H
#define PELAB_SETTINGS_H

#include <stdint.h>
#include <stdio.h>

#include "../model/model.h"

#define PELAB_VERSION "0.2.0"
#define MAX_EVAL_CTX 16
#define CKPT_PATH_MAX 4096  // Linux's PATH_MAX: no path the system can open is longer

typedef struct {
    int n;
    int v[MAX_EVAL_CTX];
} int_list;

// The settings of a run: what the command line gave (or the defaults), and
// what a checkpoint holds of them.
typedef struct {
    // data and model
    const char *data, *pe;
    const char *task_len, *test_len;  // --data task:NAME: sizes "A:B", "A:B,C:D…"
    const char *task_ignore;          // --task-ignore P as given (NULL: the task's own density)
    long task_eval;
    int attn;  // index into "causal", "bidir"
    int attn_kernel;  // index into "blocks", "fused"
    int gemm;         // index into "auto", "openblas", "onednn" (after start-up: the engine in use, never auto)
    int precision;    // index into "fp32", "bf16" (the products': model/gemm.h)
    long ctx, d_model, layers, heads, rand_pos;
    // training
    long batch, steps, warmup, threads, log_every, stop_at, seed, eval_every;
    float lr, wd, clip;
    float until_solved;  // cats: order_acc that ends training at an --eval-every point (0: off; not given: 0.99 on cats)
    // evaluation and output
    int_list eval_ctx;
    long eval_tokens, eval_window, save_every, sample;
    long samples, top_k, sample_every;  // --samples N, --top-k K (0: all), --sample-every N (0: off)
    const char *out;     // --out: the run folder ("none": none)
    const char *config;  // --config: the file the settings not given came from
    const char *save, *load, *resume, *init, *json, *attn_png, *prompt, *log, *tokenizer, *eval_rows;
    float temperature;
    int quiet;
    int keep;             // --keep: KEEP_BOTH, KEEP_LAST, KEEP_BEST
    int overwrite;        // --overwrite: a checkpoint of another run may be replaced
    int attn_stats;       // --attn-stats
    int probe_positions;  // --probe-positions
    // the encodings' options given, by name
    model_config pe_opts;  // only n_settings and settings are used
    // which schema rows were given on the command line (index into the schema)
    unsigned char given[96];
    // the text of string settings read from a checkpoint (data, pe)
    char text[2 * CKPT_PATH_MAX + 64];
    size_t text_used;
} options;

enum { KEEP_BOTH, KEEP_LAST, KEEP_BEST };  // --keep's choices, in their order

// One point of a run's learning curve (--eval-every).
typedef struct {
    long step;
    double train_loss, val_loss, order_acc;  // order_acc < 0: not cats
    double task_acc;                         // < 0: not a task
} curve_point;

// What a checkpoint holds besides the settings: where the run is.
typedef struct {
    long vocab;          // the model's vocabulary (the data's)
    long base_ctx;       // a fine-tuned model (--init): the ctx its weights were first trained at; 0 otherwise
    long step;           // optimiser steps completed
    uint64_t data_rng;   // the batch stream's state
    // The identity of the training data, so that --resume can refuse a
    // corpus that changed: its size in bytes and the CRC-32 of its bytes (0
    // and 0 for the built-in corpus). data_known is 0 for version 1 files.
    uint64_t data_size, data_crc;
    int data_known;
    // The run so far, so that a resumed run continues its record: training
    // seconds of every earlier invocation, and the learning curve's points
    // (heap, owned: run_state_release frees them).
    float seconds;
    curve_point *curve;
    int n_curve;
} run_state;

// Frees what a run_state read from a checkpoint owns (its curve).
void run_state_release(run_state *st);

typedef enum {
    SET_INT,        // long (run_state: long)
    SET_U64,        // uint64_t (run_state only)
    SET_REAL,       // float
    SET_CHOICE,     // int: an index into choices
    SET_TEXT,       // const char *: a path, a spec, a prompt
    SET_LIST,       // int_list
    SET_FLAG,       // int: 1 when given
    SET_ACTION,     // --help, --version, --list-pe: print and exit
    SET_PE_OPTIONS  // the encodings' options (model/pe/): their place in --help and in a checkpoint
} setting_type;

// Commands that take a checkpoint (bits of setting.refused and .from_file).
enum { WITH_LOAD = 1, WITH_RESUME = 2, WITH_INIT = 4 };
// setting.path: how the run uses the file an option names. Every option
// whose value is a path declares it (cli/every_path_option_has_a_role): the
// check that no two name the same file, the check that each output can be
// written, and the protection of the inputs from the tidying of stale
// temporaries all walk these rows.
enum { PATH_INPUT = 1, PATH_OUTPUT, PATH_APPEND };
// setting.flags
enum {
    SET_STATE = 1,         // the field is in run_state, not options: the run's position, not an option
    SET_KEY_OPTIONAL = 2,  // written only when not at its default; a file without the key gives the default
    SET_PER_PROCESS = 4,   // MPI: the option is per process, the checkpoint holds it times the processes
    SET_LOCAL = 8,         // may differ between the processes of an MPI run (it changes no result)
    SET_AFTER_TRAINING = 16,  // acts after the last step (evaluation, outputs, sample): refused with an early --stop-at
    // A key checkpoints gained later: always written; a file without it
    // predates it, and the run resolves the setting as it did then. A value
    // a file holds is the run's own, as if given (no default replaces it).
    SET_KEY_ADDED = 32,
};

typedef struct {
    const char *name;        // the option without its dashes; NULL: not an option (run state)
    const char *key;         // its key in a checkpoint's settings text; NULL: not stored
    setting_type type;
    size_t field;            // offsetof(options or run_state, …)
    double lo, hi;           // range (INT, REAL, U64 (hi 0: any); LIST: each element)
    const char *def;         // default, as command-line text; NULL: none (def_help says)
    const char *def_help;    // --help's note on the default when it is computed
    const char *const *choices;  // SET_CHOICE: NULL-terminated
    const char *section;     // --help heading
    const char *metavar;     // --help: "N", "X", "FILE" …
    const char *help;
    unsigned refused;        // WITH_*: refused with these (the checkpoint decides, or nothing trains)
    unsigned from_file;      // WITH_*: with these, the checkpoint's value is the run's (unless given)
    unsigned flags;          // SET_*
    const char *needs;       // has an effect only with this setting given (not 0): refused without it
    unsigned needs_corpus;   // has an effect only on data that offers these (CORPUS_* of data/data.h)
    const char *needs_why;   // the refusal's reason, after "--NAME "
    unsigned path;           // PATH_*: a file the run reads or writes (0: the value is not a path)
} setting;

extern const setting settings_schema[];
extern const int settings_count;
// --help's sections, in order, NULL-terminated (each row names its own).
extern const char *const settings_sections[];

// Every option at its default; st zeroed.
void options_defaults(options *o);
// The row of option `name`, or NULL.
const setting *settings_find(const char *name);
// 1 when option `name` was given on the command line.
int options_given(const options *o, const char *name);
// 1 when the row's value in o is not its "off" value (0, NULL, an empty list).
int setting_is_set(const options *o, const setting *s);

// 1 when the row's value (in o, or st for a state row) is its default (0
// for a row without one).
int setting_at_default(const setting *s, const options *o, const run_state *st);

// Parses text s as the value of row s into o (or st, for a state row): 1, or
// 0 with err filled ("--NAME …" with from NULL, else "KEY=… in FROM").
int setting_parse(const setting *s, const char *text, options *o, run_state *st, char *err, size_t errlen);
// Copies a string into o's own storage (o->text) and returns it; NULL when full.
const char *options_keep_text(options *o, const char *s);

// A copy of src whose strings kept in src's own storage are dst's.
void options_copy(options *dst, const options *src);
// What a checkpoint stores of a per-process setting: its value times the
// processes (the global batch).
void settings_scale_per_process(options *o, int processes);

// Refuses a setting given where it has no effect (its needs: another
// setting, or data with capabilities caps): 1, or 0 with err filled.
int settings_check_needs(const options *o, unsigned caps, char *err, size_t errlen);
// A checkpoint's settings (file) become the run's (o) for the rows whose
// from_file has mode (WITH_LOAD, WITH_RESUME, WITH_INIT) and that were not
// given. A per-process setting is divided by `processes`; 0 with err when it
// does not divide.
int settings_adopt(options *o, const options *file, unsigned mode, int processes, char *err, size_t errlen);
// The model the settings describe (vocab and base_ctx from st).
model_config settings_model_config(const options *o, const run_state *st);

// Writes the "config" object's members as JSON: every option's value as the
// run uses it, the vocabulary, then every option of the model's encodings
// (defaults included; null when unset).
void settings_json_config(FILE *f, const options *o, const model_t *m);
// A hash of one setting's value (its JSON text) for the MPI comparison;
// the settings' rows with SET_LOCAL are left out by the caller.
uint32_t setting_hash(const options *o, const model_t *m, int row);

#endif
