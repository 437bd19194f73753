// options.c — see options.h. The table below is the only list of ./train's
// own options; the encodings' options are read from the registry.
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define F(field) offsetof(options, field)

static const char *const attn_modes[] = {"causal", "bidir", NULL};
static const char *const attn_kernels[] = {"blocks", "fused", NULL};
static const char SEC_MODEL[] = "data and model", SEC_TRAIN[] = "training", SEC_OUT[] = "evaluation and output";

const cli_option cli_options[] = {
    {"data", OPT_STRING, F(data), 0, 0, "cats", NULL, NULL, SEC_MODEL, "SPEC",
     "'cats' (built-in synthetic corpus), 'task:NAME' (a built-in task: copy, reverse, sort, addition, count, "
     "selective-copy, flipflop), an llm.c token shard (GPT-2 tokens) or any other file (bytes)", NOT_WITH_RESUME},
    {"task-len", OPT_STRING, F(task_len), 0, 0, "1:16", NULL, NULL, SEC_MODEL, "A:B",
     "task:NAME: training instances have sizes A..B (README \"Tasks\")", NOT_WITH_LOAD},
    {"test-len", OPT_STRING, F(test_len), 0, 0, NULL, "2x and 4x the longest training size", NULL, SEC_MODEL, "A:B,...",
     "task:NAME: test sizes, each range scored on its own", 0},
    {"task-eval", OPT_INT, F(task_eval), 1, 1 << 20, "500", NULL, NULL, SEC_OUT, "N", "task:NAME: instances scored per size range", 0},
    {"pe", OPT_STRING, F(pe), 0, 0, "rope", NULL, NULL, SEC_MODEL, "NAME",
     "a position encoding, or absolute+relative (see --list-pe)", NOT_WITH_LOAD|NOT_WITH_RESUME|NOT_WITH_INIT},
    {"attn", OPT_CHOICE, F(attn), 0, 0, "causal", NULL, attn_modes, SEC_MODEL, "MODE",
     "causal (language model) or bidir (masked tokens)", NOT_WITH_LOAD|NOT_WITH_RESUME|NOT_WITH_INIT},
    {"ctx", OPT_INT, F(ctx), 1, 1 << 20, "64", NULL, NULL, SEC_MODEL, "N", "training context length", NOT_WITH_LOAD|NOT_WITH_RESUME},
    {"d-model", OPT_INT, F(d_model), 1, 1 << 14, "64", NULL, NULL, SEC_MODEL, "N", "channels", NOT_WITH_LOAD|NOT_WITH_RESUME|NOT_WITH_INIT},
    {"layers", OPT_INT, F(layers), 1, 256, "2", NULL, NULL, SEC_MODEL, "N", "Transformer blocks", NOT_WITH_LOAD|NOT_WITH_RESUME|NOT_WITH_INIT},
    {"heads", OPT_INT, F(heads), 1, 1 << 14, "4", NULL, NULL, SEC_MODEL, "N", "attention heads (must divide --d-model)", NOT_WITH_LOAD|NOT_WITH_RESUME|NOT_WITH_INIT},
    {"rand-pos", OPT_INT, F(rand_pos), 0, 1 << 20, "0", NULL, NULL, SEC_MODEL, "MAX",
     "randomized positions (Ruoss et al. 2023): each sequence's positions are a sorted random subset of [0, MAX), "
     "in training and evaluation (0: off)", NOT_WITH_LOAD|NOT_WITH_RESUME|NOT_WITH_INIT},
    {"batch", OPT_INT, F(batch), 1, 1 << 16, "16", NULL, NULL, SEC_TRAIN, "N", "sequences per step", NOT_WITH_LOAD|NOT_WITH_RESUME},
    {"steps", OPT_INT, F(steps), 0, 1L << 40, "5000", "5000; on cats 20000, a cap that --until-solved stops before", NULL,
     SEC_TRAIN, "N", "optimiser steps (the schedule spans them)", NOT_WITH_LOAD},
    {"until-solved", OPT_FLOAT, F(until_solved), 0, 1, NULL, "0.99 on cats, 0 (off) otherwise", NULL, SEC_TRAIN, "ACC",
     "cats: stop at the first --eval-every point where order_acc reaches ACC (the solve step; --json records it, or "
     "that the run reached --steps unsolved); 0: train every step", NOT_WITH_LOAD},
    {"lr", OPT_FLOAT, F(lr), 0, 10, "3e-3", NULL, NULL, SEC_TRAIN, "X", "peak learning rate", NOT_WITH_LOAD|NOT_WITH_RESUME},
    {"warmup", OPT_INT, F(warmup), 0, INT_MAX, "300", NULL, NULL, SEC_TRAIN, "N", "linear warmup steps", NOT_WITH_LOAD|NOT_WITH_RESUME},
    {"wd", OPT_FLOAT, F(wd), 0, 10, "0.1", NULL, NULL, SEC_TRAIN, "X", "AdamW weight decay on matrices and embeddings", NOT_WITH_LOAD|NOT_WITH_RESUME},
    {"clip", OPT_FLOAT, F(clip), 0, 1e9, "1.0", NULL, NULL, SEC_TRAIN, "X", "gradient clipping at this global norm, 0 = off", NOT_WITH_LOAD|NOT_WITH_RESUME},
    {"seed", OPT_INT, F(seed), 0, (double)LONG_MAX, "1", NULL, NULL, SEC_TRAIN, "N", "seed for weights, data and sampling", NOT_WITH_RESUME},
    {"threads", OPT_INT, F(threads), 1, 1024, NULL, "all cores", NULL, SEC_TRAIN, "N", "threads for OpenMP and OpenBLAS", 0},
    {"attn-kernel", OPT_CHOICE, F(attn_kernel), 0, 0, "blocks", NULL, attn_kernels, SEC_TRAIN, "K",
     "blocks (keeps the attention weights for the backward pass) or fused (keeps two numbers per row and "
     "recomputes them: memory linear in --ctx; README \"Attention kernels\")", 0},
    {"log-every", OPT_INT, F(log_every), 1, 1L << 40, NULL, "steps/10", NULL, SEC_TRAIN, "N", "progress line every N steps", NOT_WITH_LOAD},
    {"stop-at", OPT_INT, F(stop_at), 1, 1L << 40, NULL, NULL, NULL, SEC_TRAIN, "N",
     "stop after step N (the schedule still spans --steps); resume later", NOT_WITH_LOAD},
    {"eval-every", OPT_INT, F(eval_every), 0, 1L << 40, "0", "0 (off); 100 on cats", NULL, SEC_TRAIN, "N",
     "every N steps, validation loss (and order_acc on cats) into the progress line and --json's curve (0: off)", NOT_WITH_LOAD},
    {"eval-ctx", OPT_LIST, F(eval_ctx), 1, 1 << 20, NULL, "the training ctx", NULL, SEC_OUT, "L,L,...", "evaluation lengths", 0},
    {"eval-tokens", OPT_INT, F(eval_tokens), 1, 1L << 32, "16384", NULL, NULL, SEC_OUT, "N",
     "tokens scored per evaluation length, at most", 0},
    {"save", OPT_STRING, F(save), 0, 0, NULL, NULL, NULL, SEC_OUT, "FILE",
     "write a checkpoint at the end (and every --save-every steps)", NOT_WITH_LOAD},
    {"save-every", OPT_INT, F(save_every), 0, 1L << 40, "0", NULL, NULL, SEC_OUT, "N", "checkpoint every N steps (0: only at the end)", NOT_WITH_LOAD},
    {"load", OPT_STRING, F(load), 0, 0, NULL, NULL, NULL, SEC_OUT, "FILE", "read a model for evaluation or sampling (no training)", 0},
    {"resume", OPT_STRING, F(resume), 0, 0, NULL, NULL, NULL, SEC_OUT, "FILE",
     "continue a saved run to its --steps (or a new --steps)", 0},
    {"init", OPT_STRING, F(init), 0, 0, NULL, NULL, NULL, SEC_OUT, "FILE",
     "start a new run from a checkpoint's weights: new schedule, optimiser, --ctx and --data (fine-tuning)",
     NOT_WITH_LOAD | NOT_WITH_RESUME},
    {"json", OPT_STRING, F(json), 0, 0, NULL, NULL, NULL, SEC_OUT, "FILE", "write the config and results as one JSON object", 0},
    {"attn-png", OPT_STRING, F(attn_png), 0, 0, NULL, NULL, NULL, SEC_OUT, "FILE",
     "draw the attention weights on a held-out cats sentence, both orders", 0},
    {"sample", OPT_INT, F(sample), 0, 1 << 20, "0", NULL, NULL, SEC_OUT, "N", "generate N tokens after training (causal only)", 0},
    {"prompt", OPT_STRING, F(prompt), 0, 0, NULL, "cats: 'the', text: newline, shard: 50256", NULL, SEC_OUT, "TEXT", "start of the sample", 0},
    {"temperature", OPT_FLOAT, F(temperature), 1e-4, 100, "1.0", NULL, NULL, SEC_OUT, "X", "sampling temperature", 0},
    {"quiet", OPT_FLAG, F(quiet), 0, 0, NULL, NULL, NULL, SEC_OUT, NULL, "no progress lines", 0},
    {"list-pe", OPT_ACTION, 0, 0, 0, NULL, NULL, NULL, SEC_OUT, NULL, "list the position encodings and their options", 0},
    {"help", OPT_ACTION, 0, 0, 0, NULL, NULL, NULL, SEC_OUT, NULL, "this text", 0},
    {"version", OPT_ACTION, 0, 0, 0, NULL, NULL, NULL, SEC_OUT, NULL, "pelab's version", 0},
};
const int cli_option_count = sizeof cli_options / sizeof cli_options[0];
_Static_assert(sizeof cli_options / sizeof cli_options[0] <= sizeof ((options *)0)->given,
               "options.given[] has a flag per option of the table: make it larger");

// ---- values ----

static void *field_of(options *o, const cli_option *c) { return (char *)o + c->field; }
static const void *cfield_of(const options *o, const cli_option *c) { return (const char *)o + c->field; }

static long parse_long(const char *name, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) die_usage("--%s '%s': not a whole number", name, s);
    if (v < lo || v > hi) die_usage("--%s %ld: must be between %.0f and %.0f", name, v, lo, hi);
    return v;
}

static float parse_float(const char *name, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) die_usage("--%s '%s': not a number", name, s);
    if (v < lo || v > hi) die_usage("--%s %g: must be between %g and %g", name, v, lo, hi);
    return (float)v;
}

static void parse_list(const cli_option *c, const char *s, int_list *out) {
    out->n = 0;
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len == 0 || len >= sizeof item) die_usage("--%s '%s': give lengths like 64,128,256", c->name, s);
        memcpy(item, p, len);
        item[len] = '\0';
        if (out->n == MAX_EVAL_CTX) die_usage("--%s: at most %d lengths", c->name, MAX_EVAL_CTX);
        out->v[out->n++] = (int)parse_long(c->name, item, c->lo, c->hi);
        if (!p[len]) break;
        p += len + 1;
    }
}

// Stores the text value s of option c into o.
static void set_value(options *o, const cli_option *c, const char *s) {
    void *f = field_of(o, c);
    switch (c->type) {
    case OPT_INT: *(long *)f = parse_long(c->name, s, c->lo, c->hi); break;
    case OPT_FLOAT: *(float *)f = parse_float(c->name, s, c->lo, c->hi); break;
    case OPT_STRING: *(const char **)f = s; break;
    case OPT_FLAG: *(int *)f = 1; break;
    case OPT_LIST: parse_list(c, s, f); break;
    case OPT_CHOICE: {
        for (int k = 0; c->choices[k]; k++)
            if (strcmp(s, c->choices[k]) == 0) {
                *(int *)f = k;
                return;
            }
        char list[128] = "";
        for (int k = 0; c->choices[k]; k++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? " or " : "", c->choices[k]);
        die_usage("--%s '%s': choose %s", c->name, s, list);
    }
    case OPT_ACTION: break;
    }
}

void options_defaults(options *o) {
    memset(o, 0, sizeof *o);
    for (int i = 0; i < cli_option_count; i++)
        if (cli_options[i].def) set_value(o, &cli_options[i], cli_options[i].def);
}

int options_validate(const options *o, char *err, size_t errlen) {
    for (int i = 0; i < cli_option_count; i++) {
        const cli_option *c = &cli_options[i];
        if (!c->def) continue;  // no default: 0 means not given
        const void *f = cfield_of(o, c);
        double v = c->type == OPT_INT ? (double)*(const long *)f : c->type == OPT_FLOAT ? (double)*(const float *)f : 0;
        if ((c->type == OPT_INT || c->type == OPT_FLOAT) && !(v >= c->lo && v <= c->hi)) {
            snprintf(err, errlen, "--%s %g is outside [%g, %g]", c->name, v, c->lo, c->hi);
            return 0;
        }
    }
    return 1;
}

int options_given(const options *o, const char *name) {
    for (int i = 0; i < cli_option_count; i++)
        if (strcmp(cli_options[i].name, name) == 0) return o->given[i];
    return 0;
}

// ---- the encodings' options, from the registry ----

// Every distinct option name the encodings declare, with the first
// declaration (the others must have the same type).
#define MAX_PE_OPTIONS 64
static int pe_option_list(const pe_option **out) {
    int n = 0;
    for (int i = 0; i < pe_registry_count; i++)
        for (int k = 0; pe_registry[i]->options && pe_registry[i]->options[k].name; k++) {
            const pe_option *p = &pe_registry[i]->options[k];
            int seen = 0;
            for (int j = 0; j < n; j++) seen |= strcmp(out[j]->name, p->name) == 0;
            if (!seen && n < MAX_PE_OPTIONS) out[n++] = p;
        }
    return n;
}

// An encoding option's default as text: its value, or what def_text says.
static const char *pe_default_text(const pe_option *p, char *buf, size_t cap) {
    if (!isnan(p->def)) pe_option_format(p, p->def, buf, cap);
    else snprintf(buf, cap, "%s", p->def_text ? p->def_text : "unset");
    return buf;
}

// --help's default of an option: one value, or each taker's when they differ
// ("[xl: no clipping, shaw: 16]").
static void print_pe_defaults(FILE *f, const char *name) {
    char all[256] = "", first[64] = "", buf[64];
    int differ = 0;
    size_t n = 0;
    for (int i = 0; i < pe_registry_count; i++) {
        const pe_option *p = pe_option_find(pe_registry[i], name, NULL);
        if (!p) continue;
        pe_default_text(p, buf, sizeof buf);
        if (!first[0]) snprintf(first, sizeof first, "%s", buf);
        differ |= strcmp(first, buf) != 0;
        if (n < sizeof all) n += (size_t)snprintf(all + n, sizeof all - n, "%s%s: %s", n ? ", " : "", pe_registry[i]->name, buf);
    }
    fprintf(f, "  [%s]", differ ? all : first);
}

// ---- --help and --list-pe ----

static void print_option(FILE *f, const char *name, const char *metavar, const char *help) {
    char left[64];
    snprintf(left, sizeof left, "--%s%s%s", name, metavar ? " " : "", metavar ? metavar : "");
    fprintf(f, "  %-22s %s", left, help);
}

void options_usage(FILE *f) {
    fprintf(f, "usage: ./train [options]\n"
               "Trains a small GPT-style Transformer from random weights with the position\n"
               "encoding of your choice, then evaluates it.\n");
    const char *sections[] = {SEC_MODEL, NULL, SEC_TRAIN, SEC_OUT};
    for (int s = 0; s < 4; s++) {
        if (!sections[s]) {  // after the model: the encodings' options
            fprintf(f, "\nposition encodings (%s)\n", pe_names());
            const pe_option *list[MAX_PE_OPTIONS];
            int n = pe_option_list(list);
            for (int i = 0; i < n; i++) {
                char takers[256], help[512];
                pe_option_takers(list[i]->name, takers, sizeof takers);
                snprintf(help, sizeof help, "%s (%s)", list[i]->help, takers);
                print_option(f, list[i]->name, list[i]->type == PE_OPT_CHOICE ? "KIND" : list[i]->type == PE_OPT_INT ? "N" : "X",
                             help);
                print_pe_defaults(f, list[i]->name);
                fputc('\n', f);
            }
            continue;
        }
        fprintf(f, "\n%s\n", sections[s]);
        for (int i = 0; i < cli_option_count; i++) {
            const cli_option *c = &cli_options[i];
            if (c->section != sections[s]) continue;
            print_option(f, c->name, c->metavar, c->help);
            if (c->def_help) fprintf(f, "  [%s]", c->def_help);
            else if (c->def && c->type != OPT_FLAG) fprintf(f, "  [%s]", c->def);
            fputc('\n', f);
        }
    }
}

void options_list_pe(FILE *f) {
    for (int i = 0; i < pe_registry_count; i++) {
        const pe_ops *e = pe_registry[i];
        fprintf(f, "%-18s %-9s %s", e->name, strcmp(e->name, "none") == 0 ? "none" : e->absolute ? "absolute" : "relative",
                e->summary ? e->summary : "");
        if (e->causal_only) fprintf(f, "; causal only");
        for (int k = 0; e->options && e->options[k].name; k++) {
            const pe_option *p = &e->options[k];
            fprintf(f, "%s --%s", k ? "," : ";", p->name);
            if (p->type == PE_OPT_CHOICE)
                for (int c = 0; p->choices[c]; c++) fprintf(f, "%s%s", c ? "|" : " ", p->choices[c]);
            char buf[64];
            fprintf(f, " [%s]", pe_default_text(p, buf, sizeof buf));
        }
        fputc('\n', f);
    }
    char buf[80];
    for (int i = 0; pe_composite(i, buf, sizeof buf); i++)
        fprintf(f, "%-18s %-9s one absolute and one relative encoding\n", buf, "composite");
}

// ---- parsing ----

enum { PE_OPT_BASE = 1000 };

void options_parse(options *o, int argc, char **argv) {
    const pe_option *pe_list[MAX_PE_OPTIONS];
    int npe = pe_option_list(pe_list);
    struct option longopts[sizeof cli_options / sizeof cli_options[0] + MAX_PE_OPTIONS + 1];
    int n = 0;
    for (int i = 0; i < cli_option_count; i++)
        longopts[n++] = (struct option){cli_options[i].name,
                                        cli_options[i].type == OPT_FLAG || cli_options[i].type == OPT_ACTION ? 0 : 1, 0,
                                        256 + i};
    for (int i = 0; i < npe; i++) longopts[n++] = (struct option){pe_list[i]->name, 1, 0, PE_OPT_BASE + i};
    longopts[n] = (struct option){0, 0, 0, 0};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c == ':') die_usage("option '%s' needs a value", argv[optind - 1]);
        if (c >= PE_OPT_BASE && c < PE_OPT_BASE + npe) {
            const pe_option *p = pe_list[c - PE_OPT_BASE];
            double v;
            char err[256];
            if (!pe_option_parse(p, optarg, &v, err, sizeof err)) die_usage("%s", err);
            if (!config_set(&o->pe_opts, p->name, v)) die_usage("too many encoding options");
            continue;
        }
        if (c < 256 || c >= 256 + cli_option_count) die_usage("unknown option '%s'", argv[optind - 1]);
        const cli_option *opt = &cli_options[c - 256];
        o->given[c - 256] = 1;
        if (opt->type == OPT_ACTION) {
            if (strcmp(opt->name, "help") == 0) options_usage(stdout);
            else if (strcmp(opt->name, "version") == 0) printf("pelab %s\n", PELAB_VERSION);
            else options_list_pe(stdout);
            // what was asked for is the output: a full disk or a closed pipe is a failure
            if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "train: cannot write --%s to standard output (%s)\n", opt->name,
                        errno ? strerror(errno) : "write error");
                exit(EXIT_RUNTIME);
            }
            exit(0);
        }
        set_value(o, opt, optarg);
    }
    if (optind < argc) die_usage("unexpected argument '%s' (options start with --)", argv[optind]);
    if (o->load && o->resume) die_usage("--load and --resume cannot be combined: --load evaluates, --resume trains on");
    if (o->init && (o->load || o->resume))
        die_usage("--init cannot be combined with --%s: --init starts a new run from a checkpoint's weights",
                  o->load ? "load" : "resume");
    for (int i = 0; i < cli_option_count; i++) {
        const cli_option *c = &cli_options[i];
        if (!o->given[i]) continue;
        if (o->load && (c->not_with & NOT_WITH_LOAD))
            die_usage("--%s cannot be given with --load: it evaluates a saved model as it is, without training", c->name);
        if (o->resume && (c->not_with & NOT_WITH_RESUME))
            die_usage("--%s cannot be given with --resume: a resumed run keeps the checkpoint's value (start a new run to change it)",
                      c->name);
        if (o->init && (c->not_with & NOT_WITH_INIT))
            die_usage("--%s cannot be given with --init: the model's shape and encoding come from the checkpoint", c->name);
    }
    if (o->sample && o->attn != 0 && !o->load) die_usage("--sample needs a causal model (--attn causal)");
    const char *from = o->load ? "--load" : o->resume ? "--resume" : o->init ? "--init" : NULL;
    char err[512];
    for (int i = 0; i < o->pe_opts.n_settings; i++) {
        const char *name = o->pe_opts.settings[i].name;
        const pe_option *p = NULL;
        for (int k = 0; k < npe && !p; k++)
            if (strcmp(pe_list[k]->name, name) == 0) p = pe_list[k];
        if (from && !p->eval_only)
            die_usage("--%s: the model's options come from the checkpoint; with %s give only evaluation options", name, from);
    }
    // With a new model, an option its encodings do not take is refused now
    // (with a checkpoint, once the file says which encodings it has).
    if (!from && !pe_check_settings(o->pe, &o->pe_opts, err, sizeof err)) die_usage("%s", err);
}

// ---- JSON ----

// The length of the valid UTF-8 sequence at s (1 to 4), or 0.
static int utf8_length(const unsigned char *s) {
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || (n == 2 && s[0] < 0xC2) || (n == 4 && s[0] > 0xF4)) return 0;
    for (int k = 1; k < n; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;  // overlong, surrogates
    if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;  // overlong, > U+10FFFF
    return n;
}

void json_string(FILE *f, const char *s) {
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        int n = utf8_length(p);
        if (n == 1 && (*p == '"' || *p == '\\')) fprintf(f, "\\%c", *p);
        else if (n == 1 && *p < 0x20) fprintf(f, "\\u%04x", *p);
        else if (n == 0) fprintf(f, "\\u%04x", *p);  // not UTF-8: the byte as a code point
        else fwrite(p, 1, (size_t)n, f);
        p += n ? n : 1;
    }
    fputc('"', f);
}

void json_number(FILE *f, const char *fmt, double v) {
    if (isfinite(v)) fprintf(f, fmt, v);
    else fprintf(f, "null");
}

static void json_key(FILE *f, const char *name, int *first) {
    fprintf(f, "%s\"", *first ? "" : ", ");
    for (const char *p = name; *p; p++) fputc(*p == '-' ? '_' : *p, f);
    fprintf(f, "\": ");
    *first = 0;
}

void options_json_config(FILE *f, const options *o, const model_t *m) {
    int first = 1;
    for (int i = 0; i < cli_option_count; i++) {
        const cli_option *c = &cli_options[i];
        if (c->type == OPT_ACTION) continue;
        const void *v = cfield_of(o, c);
        json_key(f, c->name, &first);
        switch (c->type) {
        case OPT_INT: fprintf(f, "%ld", *(const long *)v); break;
        case OPT_FLOAT: json_number(f, "%g", *(const float *)v); break;
        case OPT_FLAG: fprintf(f, "%s", *(const int *)v ? "true" : "false"); break;
        case OPT_CHOICE: json_string(f, c->choices[*(const int *)v]); break;
        case OPT_STRING:
            if (*(const char *const *)v) json_string(f, *(const char *const *)v);
            else fprintf(f, "null");
            break;
        case OPT_LIST: {
            const int_list *l = v;
            fputc('[', f);
            for (int k = 0; k < l->n; k++) fprintf(f, "%s%d", k ? ", " : "", l->v[k]);
            fputc(']', f);
            break;
        }
        case OPT_ACTION: break;
        }
    }
    json_key(f, "vocab", &first);
    fprintf(f, "%d", m->cfg.vocab);
    for (int s = 0; s < PE_SLOTS; s++) {
        const pe_ops *e = m->pe[s].ops;
        for (int k = 0; e && e->options && e->options[k].name; k++) {
            const pe_option *p = &e->options[k];
            double v = m->pe[s].opt[k];
            json_key(f, p->name, &first);
            if (isnan(v)) {
                fprintf(f, "null");
            } else {
                char buf[64];
                pe_option_format(p, v, buf, sizeof buf);
                if (p->type == PE_OPT_CHOICE) json_string(f, buf);
                else fprintf(f, "%s", buf);
            }
        }
    }
}
