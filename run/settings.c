// settings.c — the schema (see settings.h) and what every reader of it shares:
// defaults, parsing a value with its range, the rules of what a setting
// needs, taking a checkpoint's values, the model a run's settings describe,
// and the JSON "config".
#include "settings.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../core/json.h"
#include "../data/data.h"
#include "../model/gemm.h"

#define O(f) .field = offsetof(options, f)
#define S(f) .field = offsetof(run_state, f)

static const char *const attn_modes[] = {"causal", "bidir", NULL};
static const char *const attn_kernels[] = {"blocks", "fused", NULL};
// --gemm: "auto", then model/gemm.h's engines in their list's order
static const char *const gemm_choices[] = GEMM_CHOICES;
static const char *const precisions[] = {"fp32", "bf16", "auto", NULL};
static const char *const keeps[] = {"both", "last", "best", NULL};
static const char SEC_DATA[] = "data", SEC_MODEL[] = "model", SEC_PE[] = "position encodings",
                  SEC_TRAIN[] = "training", SEC_OUT[] = "evaluation and output";
#define ALL_FILES (WITH_LOAD | WITH_RESUME | WITH_INIT)
#define MODEL_ROW .refused = ALL_FILES, .from_file = ALL_FILES  // the checkpoint's shape and encodings
#define RUN_ROW .refused = WITH_LOAD | WITH_RESUME, .from_file = WITH_RESUME  // the resumed run's schedule

// The rows that a checkpoint stores come in the order of its settings text
// (docs/checkpoint.md): a file written today has the same bytes as
// one written before this table existed. --help groups the rows by section.
const setting settings_schema[] = {
    {.name = "pe", .key = "pe", .type = SET_TEXT, O(pe), .hi = sizeof ((model_config *)0)->pe - 1, .def = "rope",
     .section = SEC_MODEL, .metavar = "NAME", .help = "a position encoding, or absolute+relative (see --list-pe)", MODEL_ROW},
    {.name = "attn", .key = "attn", .type = SET_CHOICE, O(attn), .def = "causal", .choices = attn_modes,
     .section = SEC_MODEL, .metavar = "MODE", .help = "causal (language model) or bidir (masked tokens)", MODEL_ROW},
    {.key = "vocab", .type = SET_INT, S(vocab), .lo = 2, .hi = 1 << 30, .flags = SET_STATE},
    {.name = "ctx", .key = "ctx", .type = SET_INT, O(ctx), .lo = 1, .hi = 1 << 20, .def = "64", .section = SEC_MODEL,
     .metavar = "N", .help = "training context length", .refused = WITH_LOAD | WITH_RESUME, .from_file = ALL_FILES},
    {.name = "d-model", .key = "d_model", .type = SET_INT, O(d_model), .lo = 1, .hi = 1 << 14, .def = "64",
     .section = SEC_MODEL, .metavar = "N", .help = "channels", MODEL_ROW},
    {.name = "layers", .key = "layers", .type = SET_INT, O(layers), .lo = 1, .hi = 256, .def = "2", .section = SEC_MODEL,
     .metavar = "N", .help = "Transformer blocks", MODEL_ROW},
    {.name = "heads", .key = "heads", .type = SET_INT, O(heads), .lo = 1, .hi = 1 << 14, .def = "4", .section = SEC_MODEL,
     .metavar = "N", .help = "attention heads (must divide --d-model)", MODEL_ROW},
    {.key = "base_ctx", .type = SET_INT, S(base_ctx), .lo = 1, .hi = 1 << 20, .flags = SET_STATE | SET_KEY_OPTIONAL},
    {.name = "rand-pos", .key = "rand_pos", .type = SET_INT, O(rand_pos), .lo = 0, .hi = 1 << 20, .def = "0",
     .section = SEC_MODEL, .metavar = "MAX",
     .help = "randomized positions (Ruoss et al. 2023): each sequence's positions are a sorted random subset of "
             "[0, MAX), in training and evaluation (0: off)",
     .flags = SET_KEY_OPTIONAL, MODEL_ROW},
    {.type = SET_PE_OPTIONS, .section = SEC_PE},
    {.key = "step", .type = SET_INT, S(step), .lo = 0, .hi = 1L << 40, .flags = SET_STATE},
    {.name = "steps", .key = "steps", .type = SET_INT, O(steps), .lo = 0, .hi = 1L << 40, .def = "5000",
     .def_help = "5000; on cats 20000, a cap that --until-solved stops before", .section = SEC_TRAIN, .metavar = "N",
     .help = "optimiser steps (the schedule spans them)", .refused = WITH_LOAD, .from_file = WITH_RESUME},
    {.name = "batch", .key = "batch", .type = SET_INT, O(batch), .lo = 1, .hi = 1 << 16, .def = "16", .section = SEC_TRAIN,
     .metavar = "N", .help = "sequences per step (per process under MPI)", .flags = SET_PER_PROCESS, RUN_ROW},
    {.name = "warmup", .key = "warmup", .type = SET_INT, O(warmup), .lo = 0, .hi = INT_MAX, .def = "300",
     .def_help = "300, at most a fifth of --steps", .section = SEC_TRAIN, .metavar = "N",
     .help = "linear warmup steps (then cosine decay to a tenth of --lr at the last step)", RUN_ROW},
    {.name = "lr", .key = "lr", .type = SET_REAL, O(lr), .lo = 0, .hi = 10, .def = "3e-3", .section = SEC_TRAIN,
     .metavar = "X", .help = "peak learning rate", RUN_ROW},
    {.name = "wd", .key = "wd", .type = SET_REAL, O(wd), .lo = 0, .hi = 10, .def = "0.1", .section = SEC_TRAIN,
     .metavar = "X", .help = "AdamW weight decay on matrices and embeddings", RUN_ROW},
    {.name = "clip", .key = "clip", .type = SET_REAL, O(clip), .lo = 0, .hi = 1e9, .def = "1.0", .section = SEC_TRAIN,
     .metavar = "X", .help = "gradient clipping at this global norm, 0 = off", RUN_ROW},
    {.name = "seed", .key = "seed", .type = SET_INT, O(seed), .lo = 0, .hi = (double)LONG_MAX, .def = "1",
     .section = SEC_TRAIN, .metavar = "N", .help = "seed for weights, data and sampling", .refused = WITH_RESUME,
     .from_file = WITH_LOAD | WITH_RESUME},
    {.key = "data_rng", .type = SET_U64, S(data_rng), .flags = SET_STATE},
    {.name = "data", .key = "data", .type = SET_TEXT, O(data), .hi = CKPT_PATH_MAX - 1, .def = "cats", .section = SEC_DATA,
     .metavar = "SPEC",
     .help = "'cats' (built-in synthetic corpus), 'task:NAME' (a built-in task: copy, reverse, sort, addition, count, "
             "selective-copy, flipflop, parity, even-pairs, passkey), an llm.c token shard (GPT-2 tokens) or any other file (bytes)",
     .refused = WITH_RESUME, .from_file = WITH_RESUME | WITH_LOAD, .path = PATH_INPUT},
    {.key = "data_size", .type = SET_U64, S(data_size), .flags = SET_STATE},
    {.key = "data_crc32", .type = SET_U64, S(data_crc), .hi = 4294967295.0, .flags = SET_STATE},
    {.key = "seconds", .type = SET_REAL, S(seconds), .lo = 0, .hi = 1e12, .flags = SET_STATE | SET_KEY_OPTIONAL},
    {.name = "task-ignore", .key = "task_ignore", .type = SET_TEXT, O(task_ignore), .hi = 31,
     .def_help = "the task's own: flipflop 0.8, selective-copy 0.5", .section = SEC_DATA, .metavar = "P",
     .help = "task:flipflop: the probability of an ignore instruction; task:selective-copy: the share of noise tokens "
             "in the question, its n digits kept (0 to 0.67; density; with --load, evaluate at another)",
     .refused = WITH_RESUME, .from_file = WITH_LOAD | WITH_RESUME, .flags = SET_KEY_OPTIONAL,
     .needs_corpus = CORPUS_TASKS, .needs_why = "needs --data task:flipflop or task:selective-copy"},
    // not stored: they shape this invocation only
    {.name = "tokenizer", .type = SET_TEXT, O(tokenizer), .section = SEC_DATA, .metavar = "FILE",
     .help = "llm.c's GPT-2 tokenizer file (gpt2_tokenizer.bin): --sample on a token shard prints text, not token ids",
     .needs = "sample", .needs_corpus = CORPUS_GPT2,
     .needs_why = "decodes --sample's tokens: it needs --sample and --data with an llm.c token shard", .path = PATH_INPUT, .flags = SET_AFTER_TRAINING},
    {.name = "task-len", .key = "task_len", .type = SET_TEXT, O(task_len), .hi = 63, .def = "1:16", .section = SEC_DATA,
     .metavar = "A:B", .help = "task:NAME: training instances have sizes A..B (docs/data.md)", .refused = WITH_LOAD,
     .from_file = WITH_RESUME, .flags = SET_KEY_OPTIONAL,
     .needs_corpus = CORPUS_TASKS, .needs_why = "needs --data task:NAME (a built-in task)"},
    {.name = "test-len", .type = SET_TEXT, O(test_len), .def_help = "2x and 4x the longest training size",
     .section = SEC_DATA, .metavar = "A:B,...", .help = "task:NAME: test sizes, each range scored on its own",
     .needs_corpus = CORPUS_TASKS, .needs_why = "needs --data task:NAME (a built-in task)", .flags = SET_AFTER_TRAINING},
    {.name = "task-eval", .type = SET_INT, O(task_eval), .lo = 1, .hi = 1 << 20, .def = "500", .section = SEC_DATA,
     .metavar = "N", .help = "task:NAME: instances scored per size range", .needs_corpus = CORPUS_TASKS,
     .needs_why = "needs --data task:NAME (a built-in task)", .flags = SET_AFTER_TRAINING},
    {.name = "until-solved", .key = "until_solved", .type = SET_REAL, O(until_solved), .lo = 0, .hi = 1,
     .def_help = "0.99 on cats, 0 (off) otherwise", .section = SEC_TRAIN, .metavar = "ACC",
     .help = "cats: stop at the first --eval-every point where order_acc reaches ACC; task:NAME: where the accuracy "
             "at the training sizes (task_acc) does (the solve step; --json records it, or that the run reached --steps "
             "unsolved); 0: train every step",
     .refused = WITH_LOAD, .from_file = WITH_RESUME, .flags = SET_KEY_ADDED},
    {.name = "threads", .type = SET_INT, O(threads), .lo = 1, .hi = 1024, .def_help = "all cores", .section = SEC_TRAIN,
     .metavar = "N", .help = "OpenMP threads (OpenBLAS is held to one: docs/performance.md)",
     .flags = SET_LOCAL},
    {.name = "gemm", .type = SET_CHOICE, O(gemm), .def = "auto", .choices = gemm_choices, .section = SEC_TRAIN,
     .metavar = "E",
     .help = "matrix engine: openblas, onednn (when built with Debian's libdnnl-dev), or auto (oneDNN on a CPU with "
             "AVX-512, else OpenBLAS); the engines' last bits differ; --json records the one used (docs/performance.md)"},
    {.name = "precision", .key = "precision", .type = SET_CHOICE, O(precision), .def = "fp32", .choices = precisions,
     .section = SEC_TRAIN, .from_file = WITH_RESUME, .flags = SET_KEY_OPTIONAL,
     .metavar = "P",
     .help = "fp32, or bf16: mixed precision, the matrix products' inputs rounded to bfloat16 with fp32 accumulation "
             "(needs --gemm onednn); weights, gradients and optimiser state stay fp32; or auto: bf16 where the engine "
             "is oneDNN and the CPU has AVX512_BF16, else fp32 (results then depend on the machine; --json and the "
             "checkpoint record the one used; docs/performance.md)"},
    {.name = "attn-kernel", .type = SET_CHOICE, O(attn_kernel), .def = "blocks", .choices = attn_kernels,
     .section = SEC_TRAIN, .metavar = "K",
     .help = "blocks (keeps the attention weights for the backward pass) or fused (keeps two numbers per row and "
             "recomputes them: memory linear in --ctx; docs/performance.md)"},
    {.name = "log-every", .type = SET_INT, O(log_every), .lo = 1, .hi = 1L << 40, .def_help = "steps/10",
     .section = SEC_TRAIN, .metavar = "N", .help = "progress line every N steps", .refused = WITH_LOAD},
    {.name = "stop-at", .type = SET_INT, O(stop_at), .lo = 1, .hi = 1L << 40, .section = SEC_TRAIN, .metavar = "N",
     .help = "stop after step N (the schedule still spans --steps); resume later", .refused = WITH_LOAD,
     .needs = "save", .needs_why = "needs --save FILE, or the run would be lost"},
    {.name = "eval-every", .key = "eval_every", .type = SET_INT, O(eval_every), .lo = 0, .hi = 1L << 40, .def = "0",
     .def_help = "100 on cats; on text and shards about 20 points a run (--steps/20, at least every 16384 training "
                 "tokens); 0 on a task", .section = SEC_TRAIN, .metavar = "N",
     .help = "every N steps, validation loss (and order_acc on cats) into the progress line and --json's curve, a "
             "warning when it has risen for 3 points in a row, and the best model kept (--keep); 0: off",
     .refused = WITH_LOAD, .from_file = WITH_RESUME, .flags = SET_KEY_ADDED},
    {.name = "eval-ctx", .type = SET_LIST, O(eval_ctx), .lo = 1, .hi = 1 << 20, .def_help = "the training ctx",
     .section = SEC_OUT, .metavar = "L,L,...", .help = "evaluation lengths", .flags = SET_AFTER_TRAINING},
    {.name = "eval-window", .type = SET_INT, O(eval_window), .lo = 0, .hi = 1 << 20, .def = "0", .def_help = "0 (off)",
     .section = SEC_OUT, .metavar = "W",
     .help = "also score each --eval-ctx length past W with at most W tokens of context per target (sliding window; "
             "causal only)", .flags = SET_AFTER_TRAINING},
    {.name = "attn-stats", .type = SET_FLAG, O(attn_stats), .section = SEC_OUT,
     .help = "at each --eval-ctx length, where each head's attention goes: the weight on the first token and beyond "
             "distances 16, 64 and 256 (into --json; docs/model.md)",
     .needs = "json", .needs_why = "writes its statistics into --json only: it needs --json FILE", .flags = SET_AFTER_TRAINING},
    {.name = "probe-positions", .type = SET_FLAG, O(probe_positions), .section = SEC_OUT,
     .help = "at each --eval-ctx length, how well a linear probe reads each token's position from the input and each "
             "block's output (held-out R², into --json; docs/model.md)", .flags = SET_AFTER_TRAINING},
    {.name = "eval-tokens", .type = SET_INT, O(eval_tokens), .lo = 1, .hi = 1L << 32, .def = "16384", .section = SEC_OUT,
     .metavar = "N", .help = "tokens scored per evaluation length, at most", .flags = SET_AFTER_TRAINING},
    {.name = "eval-rows", .type = SET_TEXT, O(eval_rows), .section = SEC_OUT, .metavar = "FILE",
     .help = "write the validation windows each --eval-ctx length scores (tokens, targets, segments; docs/pytorch.md): "
             "what another implementation needs to score the same rows, e.g. pelab_lab.torch --eval on cats or a task",
     .path = PATH_OUTPUT, .flags = SET_AFTER_TRAINING},
    {.name = "save", .type = SET_TEXT, O(save), .section = SEC_OUT, .metavar = "FILE",
     .help = "write a checkpoint at the end (and every --save-every steps)", .refused = WITH_LOAD, .path = PATH_OUTPUT},
    {.name = "config", .type = SET_TEXT, O(config), .section = SEC_OUT, .metavar = "FILE",
     .help = "take the settings not given on the command line from FILE: a run's record (its run.json; a rerun "
             "reproduces it, its outputs and threads left out) or lines 'key = value' (docs/options.md)",
     .path = PATH_INPUT},
    {.name = "out", .type = SET_TEXT, O(out), .section = SEC_OUT, .metavar = "DIR",
     .def_help = "runs/DATE-TIME-PE (PELAB_RUNS/… when set); a resumed run's own folder",
     .help = "the run folder: the outputs not named by --save, --json and --log go in it (model.ck and "
             "model.best.ck, run.json, log.jsonl) with curve.png; none: keep only what is named",
     .refused = WITH_LOAD},
    {.name = "overwrite", .type = SET_FLAG, O(overwrite), .section = SEC_OUT,
     .help = "let --save (or the run folder's model.ck) replace a checkpoint of another run (other settings or "
             "corpus); without it that is refused before training", .refused = WITH_LOAD},
    {.name = "keep", .type = SET_CHOICE, O(keep), .def = "both", .choices = keeps, .section = SEC_OUT, .metavar = "K",
     .help = "which checkpoints a run with --eval-every points keeps: both (the last, and the best validation loss's "
             "beside it as NAME.best.ck), last, or best (only the best; interrupted and --save-every saves still write "
             "the last)", .refused = WITH_LOAD},
    {.name = "save-every", .type = SET_INT, O(save_every), .lo = 0, .hi = 1L << 40, .def = "0", .section = SEC_OUT,
     .metavar = "N", .help = "checkpoint every N steps (0: only at the end)", .refused = WITH_LOAD, .needs = "save",
     .needs_why = "needs --save FILE"},
    {.name = "load", .type = SET_TEXT, O(load), .section = SEC_OUT, .metavar = "FILE",
     .help = "read a model for evaluation or sampling (no training)", .path = PATH_INPUT},
    {.name = "resume", .type = SET_TEXT, O(resume), .section = SEC_OUT, .metavar = "FILE",
     .help = "continue a saved run to its --steps (or a new --steps)", .path = PATH_INPUT},
    {.name = "init", .type = SET_TEXT, O(init), .section = SEC_OUT, .metavar = "FILE",
     .help = "start a new run from a checkpoint's weights: new schedule, optimiser, --ctx and --data (fine-tuning)",
     .refused = WITH_LOAD | WITH_RESUME, .path = PATH_INPUT},
    {.name = "json", .type = SET_TEXT, O(json), .section = SEC_OUT, .metavar = "FILE",
     .help = "write the config and results as one JSON object", .path = PATH_OUTPUT, .flags = SET_AFTER_TRAINING},
    {.name = "log", .type = SET_TEXT, O(log), .section = SEC_OUT, .metavar = "FILE",
     .help = "append one JSON object per progress line as training goes (step, loss, lr, tokens/s, elapsed seconds, "
             "the time; val_loss and order_acc/task_acc at --eval-every points), after a first one that says where the "
             "run starts; a resumed run appends to the same file",
     .refused = WITH_LOAD, .path = PATH_APPEND},
    {.name = "attn-png", .type = SET_TEXT, O(attn_png), .section = SEC_OUT, .metavar = "FILE",
     .help = "draw the attention weights on a held-out cats sentence, both orders", .needs_corpus = CORPUS_ORDER_PROBE,
     .needs_why = "draws a cats sentence; it needs --data cats", .path = PATH_OUTPUT, .flags = SET_AFTER_TRAINING},
    {.name = "sample", .type = SET_INT, O(sample), .lo = 0, .hi = 1 << 20, .def = "0", .section = SEC_OUT,
     .metavar = "N", .help = "generate N tokens after training (causal only)", .flags = SET_AFTER_TRAINING},
    {.name = "prompt", .type = SET_TEXT, O(prompt), .def_help = "cats: 'the', text: newline, shard: 50256",
     .section = SEC_OUT, .metavar = "TEXT", .help = "start of the sample", .needs = "sample",
     .needs_why = "shapes the text --sample N generates; give --sample N too, or leave it out", .flags = SET_AFTER_TRAINING},
    {.name = "temperature", .type = SET_REAL, O(temperature), .lo = 0, .hi = 100, .def = "1.0", .section = SEC_OUT,
     .metavar = "X", .help = "sampling temperature; 0: greedy (the most likely token each time)", .needs = "sample",
     .needs_why = "shapes the text --sample N generates; give --sample N too, or leave it out", .flags = SET_AFTER_TRAINING},
    {.name = "top-k", .type = SET_INT, O(top_k), .lo = 0, .hi = 1 << 30, .def = "0", .section = SEC_OUT, .metavar = "K",
     .help = "sample from the K most likely text tokens only (0: from all); with --temperature", .needs = "sample",
     .needs_why = "shapes the text --sample N generates; give --sample N too, or leave it out", .flags = SET_AFTER_TRAINING},
    {.name = "samples", .type = SET_INT, O(samples), .lo = 1, .hi = 1000, .def = "1", .section = SEC_OUT,
     .metavar = "N", .help = "generate N samples of --sample tokens, each from the prompt", .needs = "sample",
     .needs_why = "says how many texts --sample N generates; give --sample N too, or leave it out",
     .flags = SET_AFTER_TRAINING},
    {.name = "sample-every", .type = SET_INT, O(sample_every), .lo = 0, .hi = 1L << 40, .def = "0", .section = SEC_OUT,
     .metavar = "N", .help = "also print a sample of --sample tokens every N training steps (its own random stream: "
     "training's bits do not change)", .needs = "sample", .refused = WITH_LOAD,
     .needs_why = "prints --sample N tokens during training; give --sample N too, or leave it out"},
    {.name = "quiet", .type = SET_FLAG, O(quiet), .section = SEC_OUT, .help = "no progress lines", .flags = SET_LOCAL},
    {.name = "list-pe", .type = SET_ACTION, .section = SEC_OUT, .help = "list the position encodings and their options"},
    {.name = "list-gemm", .type = SET_ACTION, .section = SEC_OUT,
     .help = "the matrix engines --gemm takes: name, whether this build has it, what it is"},
    {.name = "list-results", .type = SET_ACTION, .section = SEC_OUT,
     .help = "the fields --json writes (path, type, unit, when, meaning), as JSON"},
    {.name = "help", .type = SET_ACTION, .section = SEC_OUT, .help = "this text"},
    {.name = "version", .type = SET_ACTION, .section = SEC_OUT, .help = "pelab's version"},
};
const int settings_count = sizeof settings_schema / sizeof settings_schema[0];
_Static_assert(sizeof settings_schema / sizeof settings_schema[0] <= sizeof ((options *)0)->given,
               "options.given[] has a flag per row of the schema: make it larger");

// --help's sections, in order.
const char *const settings_sections[] = {SEC_DATA, SEC_MODEL, SEC_PE, SEC_TRAIN, SEC_OUT, NULL};

// ---- values ----

static void *field_of(const setting *s, options *o, run_state *st) {
    return (s->flags & SET_STATE) ? (void *)((char *)st + s->field) : (void *)((char *)o + s->field);
}
static const void *cfield_of(const setting *s, const options *o) { return (const char *)o + s->field; }

const setting *settings_find(const char *name) {
    for (int i = 0; i < settings_count; i++)
        if (settings_schema[i].name && strcmp(settings_schema[i].name, name) == 0) return &settings_schema[i];
    return NULL;
}

int options_given(const options *o, const char *name) {
    const setting *s = settings_find(name);
    return s && o->given[s - settings_schema];
}

int setting_is_set(const options *o, const setting *s) {
    const void *f = cfield_of(s, o);
    switch (s->type) {
    case SET_INT: return *(const long *)f != 0;
    case SET_REAL: return *(const float *)f != 0.0f;
    case SET_TEXT: return *(const char *const *)f != NULL;
    case SET_LIST: return ((const int_list *)f)->n > 0;
    case SET_FLAG: return *(const int *)f != 0;
    default: return 1;
    }
}

void run_state_release(run_state *st) {
    free(st->curve);
    st->curve = NULL, st->n_curve = 0;
}

int setting_at_default(const setting *s, const options *o, const run_state *st) {
    const void *f = (s->flags & SET_STATE) ? (const void *)((const char *)st + s->field) : cfield_of(s, o);
    switch (s->type) {
    case SET_INT: return *(const long *)f == (s->def ? strtol(s->def, NULL, 10) : 0);
    case SET_U64: return *(const uint64_t *)f == 0;
    case SET_REAL: return *(const float *)f == (s->def ? (float)strtod(s->def, NULL) : 0.0f);
    case SET_CHOICE: return s->def && strcmp(s->choices[*(const int *)f], s->def) == 0;
    case SET_TEXT: {
        const char *v = *(const char *const *)f;
        return v == s->def || (v && s->def && strcmp(v, s->def) == 0);
    }
    default: return 0;
    }
}

const char *options_keep_text(options *o, const char *s) {
    size_t n = strlen(s) + 1;
    if (n > sizeof o->text - o->text_used) return NULL;
    char *p = o->text + o->text_used;
    memcpy(p, s, n);
    o->text_used += n;
    return p;
}

// A refused value: a checkpoint's names its key and the line; the command
// line's names the option and what is wrong.
static int bad_value(const setting *s, int from_file, const char *text, const char *why, char *err, size_t errlen) {
    if (from_file) snprintf(err, errlen, "bad settings value '%.40s=%.60s'", s->key, text);
    else snprintf(err, errlen, "--%s '%.200s': %s", s->name, text, why);
    return 0;
}

// A whole number: digits with an optional leading minus ("16.5", "1e3" and
// "4e0" are not one: a count written as a fraction is not a count).
static int whole_number(const char *t) {
    const char *p = *t == '-' ? t + 1 : t;
    if (!*p) return 0;
    for (; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

static int parse_list(const setting *s, const char *text, int_list *out, char *err, size_t errlen) {
    out->n = 0;
    for (const char *p = text;;) {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len == 0 || len >= sizeof item) {
            snprintf(err, errlen, "--%s '%.200s': give lengths like 64,128,256", s->name, text);
            return 0;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (out->n == MAX_EVAL_CTX) {
            snprintf(err, errlen, "--%s: at most %d lengths", s->name, MAX_EVAL_CTX);
            return 0;
        }
        errno = 0;
        char *end;
        long v = strtol(item, &end, 10);
        if (errno || !whole_number(item)) {
            snprintf(err, errlen, "--%s '%s': not a whole number", s->name, item);
            return 0;
        }
        if (v < s->lo || v > s->hi) {
            snprintf(err, errlen, "--%s %ld: must be between %.0f and %.0f", s->name, v, s->lo, s->hi);
            return 0;
        }
        out->v[out->n++] = (int)v;
        if (!p[len]) return 1;
        p += len + 1;
    }
}

int setting_parse(const setting *s, const char *text, options *o, run_state *st, char *err, size_t errlen) {
    void *f = field_of(s, o, st);
    int from_file = st != NULL;  // a checkpoint's settings text, else the command line
    char *end;
    errno = 0;
    switch (s->type) {
    case SET_INT:
    case SET_REAL: {
        int whole = s->type == SET_INT;
        long n = whole ? strtol(text, &end, 10) : 0;
        double v = whole ? (double)n : strtod(text, &end);
        if (errno || end == text || *end || !isfinite(v) || (whole && !whole_number(text)))
            return bad_value(s, from_file, text, whole ? "not a whole number" : "not a number", err, errlen);
        if (v < s->lo || v > s->hi) {
            if (from_file) return bad_value(s, 1, text, NULL, err, errlen);
            if (whole) snprintf(err, errlen, "--%s %ld: must be between %.0f and %.0f", s->name, n, s->lo, s->hi);
            else snprintf(err, errlen, "--%s %g: must be between %g and %g", s->name, v, s->lo, s->hi);
            return 0;
        }
        if (whole) *(long *)f = n;
        else *(float *)f = (float)v;
        return 1;
    }
    case SET_U64: {
        if (*text < '0' || *text > '9') return bad_value(s, 1, text, NULL, err, errlen);
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || *end || (s->hi > 0 && (double)v > s->hi)) return bad_value(s, 1, text, NULL, err, errlen);
        *(uint64_t *)f = v;
        return 1;
    }
    case SET_CHOICE: {
        for (int k = 0; s->choices[k]; k++)
            if (strcmp(text, s->choices[k]) == 0) {
                *(int *)f = k;
                return 1;
            }
        if (from_file) return bad_value(s, 1, text, NULL, err, errlen);
        char list[128] = "";
        nearest_name near = NEAREST_INIT;
        for (int k = 0; s->choices[k]; k++) {
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? " or " : "", s->choices[k]);
            nearest_offer(&near, text, s->choices[k]);
        }
        snprintf(err, errlen, "--%s '%.200s': %s%s%schoose %s", s->name, text, near.best ? "did you mean " : "",
                 near.best ? near.best : "", near.best ? "? " : "", list);
        return 0;
    }
    case SET_TEXT:
        if (from_file) {  // a file's text is kept in o; a run always names its data and encoding
            const char *kept = *text && strlen(text) <= s->hi ? options_keep_text(o, text) : NULL;
            if (!kept) return bad_value(s, 1, text, NULL, err, errlen);
            *(const char **)f = kept;
        } else {
            *(const char **)f = text;
        }
        return 1;
    case SET_LIST: return parse_list(s, text, f, err, errlen);
    case SET_FLAG: *(int *)f = 1; return 1;
    default: return 1;
    }
}

void options_defaults(options *o) {
    memset(o, 0, sizeof *o);
    char err[256];
    for (int i = 0; i < settings_count; i++) {
        const setting *s = &settings_schema[i];
        if (s->def && !(s->flags & SET_STATE) && !setting_parse(s, s->def, o, NULL, err, sizeof err))
            die_runtime("internal: the default of --%s does not parse: %s", s->name, err);  // a bug in the table
    }
}

void options_copy(options *dst, const options *src) {
    memcpy(dst, src, sizeof *dst);
    for (int i = 0; i < settings_count; i++) {  // a string src keeps in its own storage is dst's now
        const setting *s = &settings_schema[i];
        if (s->type != SET_TEXT || !s->name) continue;
        const char *p = *(const char *const *)cfield_of(s, src);
        if (p >= src->text && p < src->text + sizeof src->text)
            *(const char **)((char *)dst + s->field) = dst->text + (p - src->text);
    }
}

void settings_scale_per_process(options *o, int processes) {
    for (int i = 0; i < settings_count; i++)
        if (settings_schema[i].flags & SET_PER_PROCESS) *(long *)((char *)o + settings_schema[i].field) *= processes;
}

// ---- rules ----

int settings_check_needs(const options *o, unsigned caps, char *err, size_t errlen) {
    for (int i = 0; i < settings_count; i++) {
        const setting *s = &settings_schema[i];
        if (!s->name || !o->given[i] || !setting_is_set(o, s)) continue;
        const setting *need = s->needs ? settings_find(s->needs) : NULL;
        if ((need && !setting_is_set(o, need)) || (s->needs_corpus & ~caps)) {
            snprintf(err, errlen, "--%s %s", s->name, s->needs_why);
            return 0;
        }
    }
    return 1;
}

int settings_adopt(options *o, const options *file, unsigned mode, int processes, char *err, size_t errlen) {
    for (int i = 0; i < settings_count; i++) {
        const setting *s = &settings_schema[i];
        if (!s->key || (s->flags & SET_STATE) || !(s->from_file & mode) || o->given[i]) continue;
        if (s->flags & SET_KEY_ADDED) {
            if (!file->given[i]) continue;  // the file predates the key: the run resolves it as it did then
            o->given[i] = 1;                // the file's value is the run's own: no default replaces it
        }
        const void *from = cfield_of(s, file);
        void *to = (char *)o + s->field;
        switch (s->type) {
        case SET_INT: {
            long v = *(const long *)from;
            if ((s->flags & SET_PER_PROCESS) && processes > 1) {
                if (v % processes) {
                    snprintf(err, errlen, "its %s of %ld does not split over %d processes; resume with a number of "
                             "processes that divides it", s->key, v, processes);
                    return 0;
                }
                v /= processes;
            }
            *(long *)to = v;
            break;
        }
        case SET_REAL: *(float *)to = *(const float *)from; break;
        case SET_CHOICE: *(int *)to = *(const int *)from; break;
        case SET_TEXT: {
            const char *text = *(const char *const *)from;
            if (!text) {  // an optional key the file does not have: the setting's default
                *(const char **)to = NULL;
                break;
            }
            const char *kept = options_keep_text(o, text);
            if (!kept) {
                snprintf(err, errlen, "its %s is too long", s->key);
                return 0;
            }
            *(const char **)to = kept;
            break;
        }
        default: break;
        }
    }
    return 1;
}

model_config settings_model_config(const options *o, const run_state *st) {
    model_config c = o->pe_opts;  // the encodings' options
    c.vocab = (int)st->vocab, c.base_ctx = (int)st->base_ctx;
    c.ctx = (int)o->ctx, c.d_model = (int)o->d_model, c.layers = (int)o->layers, c.heads = (int)o->heads;
    c.causal = o->attn == 0, c.rand_pos = (int)o->rand_pos;
    snprintf(c.pe, sizeof c.pe, "%s", o->pe ? o->pe : "");
    return c;
}

// ---- JSON ----

static void json_key(FILE *f, const char *name, int *first) {
    fprintf(f, "%s\"", *first ? "" : ", ");
    for (const char *p = name; *p; p++) fputc(*p == '-' ? '_' : *p, f);
    fprintf(f, "\": ");
    *first = 0;
}

// One option's value as JSON.
static void json_value(FILE *f, const setting *s, const options *o) {
    const void *v = cfield_of(s, o);
    switch (s->type) {
    case SET_INT: fprintf(f, "%ld", *(const long *)v); break;
    case SET_REAL: {  // the fewest digits (6 to 9) that read back as the same float: --config reruns it exactly
        float x = *(const float *)v;
        static const char *const fmts[] = {"%.6g", "%.7g", "%.8g", "%.9g"};
        char buf[32];
        int k = 0;
        for (; k < 3; k++) {
            snprintf(buf, sizeof buf, fmts[k], x);
            if (strtof(buf, NULL) == x) break;
        }
        json_number(f, fmts[k], x);
        break;
    }
    case SET_FLAG: fprintf(f, "%s", *(const int *)v ? "true" : "false"); break;
    case SET_CHOICE: json_string(f, s->choices[*(const int *)v]); break;
    case SET_TEXT:
        if (*(const char *const *)v) json_string(f, *(const char *const *)v);
        else fprintf(f, "null");
        break;
    case SET_LIST: {
        const int_list *l = v;
        fputc('[', f);
        for (int k = 0; k < l->n; k++) fprintf(f, "%s%d", k ? ", " : "", l->v[k]);
        fputc(']', f);
        break;
    }
    default: break;
    }
}

// Every option of the model's encodings as JSON members.
static void json_pe_options(FILE *f, const model_t *m, int *first) {
    for (int s = 0; s < PE_SLOTS; s++) {
        const pe_ops *e = m->pe[s].ops;
        for (int k = 0; e && e->options && e->options[k].name; k++) {
            const pe_option *p = &e->options[k];
            double v = m->pe[s].opt[k];
            json_key(f, p->name, first);
            if (isnan(v)) {
                fprintf(f, "null");
            } else {
                char buf[PE_FORMAT_MAX];
                pe_value_format(&m->pe[s], k, buf, sizeof buf);  // a LIST: a JSON array
                if (p->type == PE_OPT_CHOICE) json_string(f, buf);
                else fprintf(f, "%s", buf);
            }
        }
    }
}

void settings_json_config(FILE *f, const options *o, const model_t *m) {
    int first = 1;
    for (int i = 0; i < settings_count; i++) {
        const setting *s = &settings_schema[i];
        if (!s->name || s->type == SET_ACTION) continue;
        json_key(f, s->name, &first);
        json_value(f, s, o);
    }
    json_key(f, "vocab", &first);
    fprintf(f, "%d", m->cfg.vocab);
    json_pe_options(f, m, &first);
}

uint32_t setting_hash(const options *o, const model_t *m, int row) {
    const setting *s = &settings_schema[row];
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) die_runtime("cannot compare the processes' settings: out of memory");
    int first = 1;
    if (s->type == SET_PE_OPTIONS) json_pe_options(f, m, &first);
    else if (s->name && s->type != SET_ACTION) json_value(f, s, o);
    fclose(f);
    uint32_t crc = crc32_update(0, text, len);
    free(text);
    return crc;
}
