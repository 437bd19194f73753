// options.h — ./train's command line, from one table (cli/options.c): the
// getopt table, the parsing and range checks, --help, the JSON "config"
// object and the README check all read it. The encodings' options (--rope-base
// …) come from the registry (model/pe/), each declared in its encoding's file.
#ifndef PELAB_OPTIONS_H
#define PELAB_OPTIONS_H

#include <stdio.h>

#include "../model/model.h"

#define PELAB_VERSION "0.2.0"
#define MAX_EVAL_CTX 16

typedef struct {
    int n;
    int v[MAX_EVAL_CTX];
} int_list;

typedef struct {
    // data and model
    const char *data, *pe;
    const char *task_len, *test_len;  // --data task:NAME: sizes "A:B", "A:B,C:D…"
    long task_eval;
    int attn;  // index into "causal", "bidir"
    int attn_kernel;  // index into "blocks", "fused"
    long ctx, d_model, layers, heads, rand_pos;
    // training
    long batch, steps, warmup, threads, log_every, stop_at, seed, eval_every;
    float lr, wd, clip;
    float until_solved;  // cats: order_acc that ends training at an --eval-every point (0: off; not given: 0.99 on cats)
    // evaluation and output
    int_list eval_ctx;
    long eval_tokens, save_every, sample;
    const char *save, *load, *resume, *init, *json, *attn_png, *prompt;
    float temperature;
    int quiet;
    // the encodings' options given, by name
    model_config pe_opts;  // only n_settings and settings are used
    // which table options were given (index into the table)
    unsigned char given[64];
} options;

typedef enum { OPT_INT, OPT_FLOAT, OPT_STRING, OPT_FLAG, OPT_CHOICE, OPT_LIST, OPT_ACTION } opt_type;

typedef struct {
    const char *name;             // without the dashes
    opt_type type;
    size_t field;                 // offsetof(options, …); unused for OPT_ACTION
    double lo, hi;                // range (INT, FLOAT; LIST: each element)
    const char *def;              // default, as command-line text; NULL: none (def_help says)
    const char *def_help;         // --help's note on the default (shown instead of def) when it is computed
    const char *const *choices;   // OPT_CHOICE: NULL-terminated
    const char *section;          // --help heading
    const char *metavar;          // --help: "N", "X", "FILE" …
    const char *help;
    int not_with;                 // NOT_WITH_*: refused with --load / --resume / --init (the file decides, or nothing trains)
} cli_option;

enum { NOT_WITH_LOAD = 1, NOT_WITH_RESUME = 2, NOT_WITH_INIT = 4 };

extern const cli_option cli_options[];
extern const int cli_option_count;

// Sets every option to its default.
void options_defaults(options *o);
// Parses argv (exit 2 with a message on a bad option or value); handles
// --help, --version and --list-pe (print and exit 0).
void options_parse(options *o, int argc, char **argv);
// Checks every number in o that has a default against the table's ranges, as
// the command line does: for values that came from a checkpoint. 0 with a
// message.
int options_validate(const options *o, char *err, size_t errlen);
// 1 when the table option `name` was given on the command line.
int options_given(const options *o, const char *name);
// --help, generated from the table and the registry.
void options_usage(FILE *f);
// --list-pe: one line per encoding (name, kind, summary, options), then the
// composites the tests and experiments use (one absolute with each relative).
void options_list_pe(FILE *f);
// Writes the "config" object's members as JSON: every table option's value
// as the run uses it, the vocabulary, then every option of the model's
// encodings (defaults included; null when unset).
void options_json_config(FILE *f, const options *o, const model_t *m);
// A JSON string: escaped, and valid UTF-8 whatever the bytes (a byte that is
// not part of a valid UTF-8 sequence is written as the character of the
// same number, \u00XX, as Latin-1 would read it).
void json_string(FILE *f, const char *s);
// A JSON number with fmt, or null when v is NaN or infinite (JSON has no
// such numbers).
void json_number(FILE *f, const char *fmt, double v);

#endif
