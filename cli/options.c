// options.c — see options.h. The rows come from the settings schema
// (run/settings.c); the encodings' options from the registry.
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/files.h"
#include "../model/gemm.h"
#include "../run/results.h"
#include "config_file.h"

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
            if (seen) continue;
            if (n == MAX_PE_OPTIONS)  // the registry is fixed when pelab is built: every run (and the suite) says so
                die_runtime("the encodings declare more than %d distinct options: raise MAX_PE_OPTIONS in cli/options.c",
                            MAX_PE_OPTIONS);
            out[n++] = p;
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
// ("[xl: no clipping, shaw: 16]"), into buf.
static void pe_defaults_text(const char *name, char *buf, size_t cap) {
    char all[256] = "", first[64] = "", one[64];
    int differ = 0;
    size_t n = 0;
    for (int i = 0; i < pe_registry_count; i++) {
        const pe_option *p = pe_option_find(pe_registry[i], name, NULL);
        if (!p) continue;
        pe_default_text(p, one, sizeof one);
        if (!first[0]) snprintf(first, sizeof first, "%s", one);
        differ |= strcmp(first, one) != 0;
        if (n < sizeof all) n += (size_t)snprintf(all + n, sizeof all - n, "%s%s: %s", n ? ", " : "", pe_registry[i]->name, one);
    }
    snprintf(buf, cap, "[%s]", differ ? all : first);
}

// ---- --help and --list-pe ----

// --help fits 80 columns: the option in the first 25, its text wrapped at
// word boundaries in the rest (an option too long for its column gets a
// line of its own).
enum { HELP_WIDTH = 80, HELP_INDENT = 25 };

// Writes text's words from column *col on, wrapping at HELP_WIDTH to
// column indent.
static void print_words(FILE *f, const char *text, int *col, int indent) {
    for (const char *p = text; p && *p;) {
        while (*p == ' ') p++;
        size_t w = strcspn(p, " ");
        if (!w) break;
        if (*col > indent && *col + 1 + (int)w > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            *col = indent;
        } else if (*col > indent) {
            fputc(' ', f);
            (*col)++;
        }
        fwrite(p, 1, w, f);
        *col += (int)w;
        p += w;
    }
}

// One row: `left` in the first column (a line of its own when too long),
// help and def wrapped beside it.
static void print_row(FILE *f, const char *left, const char *help, const char *def) {
    int col = HELP_INDENT;
    if (strlen(left) <= HELP_INDENT - 3) fprintf(f, "  %-22s ", left);
    else fprintf(f, "  %s\n%*s", left, HELP_INDENT, "");
    print_words(f, help, &col, HELP_INDENT);
    print_words(f, def, &col, HELP_INDENT);
    fputc('\n', f);
}

static void print_option(FILE *f, const char *name, const char *metavar, const char *help, const char *def) {
    char left[64];
    snprintf(left, sizeof left, "--%s%s%s", name, metavar ? " " : "", metavar ? metavar : "");
    print_row(f, left, help, def);
}

// The encodings' options: one each, with the encodings that take them.
static void print_pe_options(FILE *f) {
    const pe_option *list[MAX_PE_OPTIONS];
    int n = pe_option_list(list);
    for (int i = 0; i < n; i++) {
        char takers[256], help[512], def[300];
        pe_option_takers(list[i]->name, takers, sizeof takers);
        snprintf(help, sizeof help, "%s (%s)", list[i]->help, takers);
        pe_defaults_text(list[i]->name, def, sizeof def);
        print_option(f, list[i]->name, list[i]->type == PE_OPT_CHOICE ? "KIND"
                     : list[i]->type == PE_OPT_INT  ? "N"
                     : list[i]->type == PE_OPT_LIST ? "X,X,..."
                                                    : "X",
                     help, def);
    }
}

// The environment variables train reads (core/startup.c, plot/canvas.c;
// the PELAB_TEST_ ones are the test suite's hooks, core/test_hooks.c): a test
// finds every getenv of the sources here and in docs/options.md.
static void print_environment(FILE *f) {
    char par_min[32];
    snprintf(par_min, sizeof par_min, "[%g]", PAR_MIN_NS);
    const char *const rows[][3] = {
        {"PELAB_PARALLEL_MIN=NS",
         "a parallel region estimated to take one core less than NS nanoseconds runs on one thread; 0: every "
         "region on --threads (the bits are the same either way)",
         par_min},
        {"PELAB_RUNS=DIR", "where a run's own folder is made when --out does not name one; none: no folder unless "
                           "--out names one (scripts, the lab)", "[runs]"},
        {"PELAB_FONT=FILE", "the TrueType font of the pictures' text (a regular file; one that cannot be drawn with, "
                            "tried first in a child process, gives a warning and the pixel font)",
         "[DejaVu Sans where installed, else a built-in pixel font]"},
        {"OPENBLAS_CORETYPE=KIND",
         "OpenBLAS's kernel, as OpenBLAS reads it; unset, where OpenBLAS would fall back to Prescott train starts "
         "again with Haswell or SkylakeX, the best the CPU runs",
         ""},
        {"OMP_WAIT_POLICY", "how idle threads wait, as libgomp reads it; with neither set, train starts again with "
                            "GOMP_SPINCOUNT=10000 (a short spin, then sleep)",
         ""},
        {"GOMP_SPINCOUNT", "the same, as libgomp reads it", ""},
        {"PELAB_ENV_SET", "set by train when it starts itself again with the settings above; set it yourself to skip "
                          "them (libgomp's and OpenBLAS's own defaults)",
         ""},
    };
    fprintf(f, "\nenvironment\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) print_row(f, rows[i][0], rows[i][1], rows[i][2]);
}

// Commands that run as written in a fresh clone (the GPL text is on every
// Debian system).
static const char *const help_examples[][2] = {
    {"./train", "cats: does the model learn who chases whom?"},
    {"./train --pe none", "the same without position information"},
    {"./train --data task:copy --pe alibi", "a task, trained at sizes 1-16, tested at 17-64"},
    {"./train --data /usr/share/common-licenses/GPL-3 --ctx 128 \\\n"
     "        --steps 1000 --eval-ctx 128,512 --save gpl.ck",
     "a text, evaluated at 4x its training length"},
    {"./train --load gpl.ck --data /usr/share/common-licenses/GPL-3 \\\n"
     "        --eval-ctx 512 --rope-scale yarn",
     "the same model at 512, RoPE extended by YaRN"},
};

void options_usage(FILE *f) {
    fprintf(f, "usage: ./train [options]\n"
               "Trains a small GPT-style Transformer from random weights with the position\n"
               "encoding of your choice, then evaluates it.\n");
    for (int k = 0; settings_sections[k]; k++) {
        fprintf(f, "\n%s", settings_sections[k]);
        for (int i = 0; i < settings_count; i++)  // the encodings' section names them
            if (settings_schema[i].section == settings_sections[k] && settings_schema[i].type == SET_PE_OPTIONS) {
                char names[512];
                snprintf(names, sizeof names, "(%s)", pe_names());
                int col = 2;
                fprintf(f, "\n  ");
                print_words(f, names, &col, 3);
            }
        fputc('\n', f);
        for (int i = 0; i < settings_count; i++) {
            const setting *s = &settings_schema[i];
            if (s->section != settings_sections[k]) continue;
            if (s->type == SET_PE_OPTIONS) {
                print_pe_options(f);
                continue;
            }
            char def[256] = "";
            if (s->def_help) snprintf(def, sizeof def, "[%s]", s->def_help);
            else if (s->def && s->type != SET_FLAG) snprintf(def, sizeof def, "[%s]", s->def);
            print_option(f, s->name, s->metavar, s->help, def);
        }
    }
    print_environment(f);
    fprintf(f, "\nexamples\n");
    for (size_t i = 0; i < sizeof help_examples / sizeof help_examples[0]; i++)
        fprintf(f, "  %s\n      %s\n", help_examples[i][0], help_examples[i][1]);
}

void options_list_gemm(FILE *f) {
    for (int i = 0; i < gemm_engine_count; i++) {
        char why[256] = "";
        int ok = gemm_engines[i].available(why, sizeof why);
        fprintf(f, "%-10s %-9s %s%s%s\n", gemm_engines[i].name, ok ? "available" : "absent", gemm_engines[i].what,
                ok ? "" : "; ", ok ? "" : why);
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

// The refusal of an option that a checkpoint decides, or that does nothing
// when no model trains.
static const char *refusal(unsigned mode) {
    return mode == WITH_LOAD     ? "cannot be given with --load: it evaluates a saved model as it is, without training"
           : mode == WITH_RESUME ? "cannot be given with --resume: a resumed run keeps the checkpoint's value (start a "
                                   "new run to change it)"
                                 : "cannot be given with --init: the model's shape and encoding come from the checkpoint";
}


// " (did you mean --NAME?)" for a mistyped option: the same name with '-'
// for '_' (an underscore spelling is suggested, never accepted silently), or
// the nearest option within two edits; "" when none is near.
static void suggest_option(const char *arg, const struct option *opts, char *buf, size_t cap) {
    char want[64];
    snprintf(want, sizeof want, "%s", arg + strspn(arg, "-"));
    want[strcspn(want, "=")] = '\0';
    for (char *p = want; *p; p++)
        if (*p == '_') *p = '-';
    nearest_name near = NEAREST_INIT;
    for (const struct option *o = opts; o->name; o++) nearest_offer(&near, want, o->name);
    if (near.best) snprintf(buf, cap, " (did you mean --%s?)", near.best);
    else if (cap) buf[0] = '\0';
}

// A record's setting that is not the rerun's: where its outputs went, the
// machine's threads, its own record's name.
static int not_rerun(const setting *s) {
    static const char *const names[] = {"out", "load", "resume", "threads", "quiet", "config", "overwrite", NULL};
    if (s->path == PATH_OUTPUT || s->path == PATH_APPEND || s->type == SET_ACTION) return 1;
    for (int i = 0; names[i]; i++)
        if (!strcmp(s->name, names[i])) return 1;
    return 0;
}

// 1 when name is one of list's comma-separated names.
static int in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || !p[n])) return 1;
    return 0;
}

// An encoding option's value text is its default.
static int pe_value_is_default(const pe_option *p, const char *v) {
    if (isnan(p->def)) return 0;
    if (p->type == PE_OPT_CHOICE) return p->choices && !strcmp(v, p->choices[(int)p->def]);
    char *end;
    double x = strtod(v, &end);
    return end != v && !*end && (float)x == (float)p->def;
}

// --config FILE: its settings, beneath the command line's (an option given
// there wins). From a run's record every setting is there, defaults
// included: a value at its default, null or off is left unset (as if not
// given, so that what needs another setting is not asked for), and what is
// not the rerun's (not_rerun) is left out. From "key = value" lines every
// line is as if typed, and a key that is no setting is refused.
static void apply_config(options *o, const pe_option *const *pe_list, int npe) {
    static config_file cf;  // kept: the options point into its text
    char err[512], where[64] = "";
    for (int i = 0; i < settings_count; i++) {  // checked before it is read, as run_resolve checks the others
        const setting *s = &settings_schema[i];
        const char *path = s->path == PATH_OUTPUT || s->path == PATH_APPEND ? *(const char *const *)((const char *)o + s->field) : NULL;
        if (path && same_file(o->config, path))
            die_usage("--config '%s' and --%s '%s' are the same file; an output must not overwrite an input", o->config,
                      s->name, path);
    }
    if (config_file_read(o->config, &cf, err, sizeof err) != 0) die_usage("--config %s: %s", o->config, err);
    for (int i = 0; i < cf.n; i++) {
        const config_item *it = &cf.items[i];
        char name[64];
        snprintf(name, sizeof name, "%s", it->key);
        for (char *q = name; *q; q++) *q = *q == '_' ? '-' : *q;
        if (it->line) snprintf(where, sizeof where, " line %d", it->line);
        if (cf.from_record && !strcmp(name, "vocab")) continue;  // the data's
        const setting *s = settings_find(name);
        const pe_option *p = NULL;
        for (int k = 0; k < npe && !p && !s; k++)
            if (!strcmp(pe_list[k]->name, name)) p = pe_list[k];
        if (!s && !p) {
            if (cf.from_record) {  // a record of another version of pelab
                warn_msg("--config %s: '%s' is not a setting of this pelab; left out", o->config, it->key);
                continue;
            }
            die_usage("--config %s%s: '%s' is not a setting (./train --help lists them)", o->config, where, it->key);
        }
        if (s && (s->type == SET_ACTION || !strcmp(s->name, "config"))) {
            if (cf.from_record) continue;
            die_usage("--config %s%s: '%s' cannot be set from a file", o->config, where, it->key);
        }
        if (!it->value || (cf.from_record && s && not_rerun(s)) || (cf.given && !in_list(cf.given, s ? s->name : p->name)))
            continue;  // a record's default or derived value is derived again
        if (s && o->given[s - settings_schema]) continue;  // the command line's
        int set = 0;
        for (int k = 0; p && k < o->pe_opts.n_settings; k++) set |= !strcmp(o->pe_opts.settings[k].name, p->name);
        if (set) continue;
        if (p) {
            if (cf.from_record && pe_value_is_default(p, it->value)) continue;
            if (!pe_option_set(p, it->value, &o->pe_opts, err, sizeof err))
                die_usage("--config %s%s: %s", o->config, where, err);
            continue;
        }
        if (s->type == SET_FLAG) {
            if (!strcmp(it->value, "false") || !strcmp(it->value, "0")) continue;
            if (strcmp(it->value, "true") && strcmp(it->value, "1"))
                die_usage("--config %s%s: %s is a switch: true or false, not '%s'", o->config, where, it->key, it->value);
        }
        // a record's 0 where 0 is out of range is the option unset (--stop-at, --log-every)
        if (cf.from_record && s->lo > 0 && (s->type == SET_INT || s->type == SET_REAL) && strtod(it->value, NULL) == 0) continue;
        if (!setting_parse(s, it->value, o, NULL, err, sizeof err)) die_usage("--config %s%s: %s", o->config, where, err);
        if (cf.from_record && setting_at_default(s, o, NULL)) continue;
        o->given[s - settings_schema] = 1;
    }
}

void options_parse(options *o, int argc, char **argv) {
    options_defaults(o);
    const pe_option *pe_list[MAX_PE_OPTIONS];
    int npe = pe_option_list(pe_list);
    struct option longopts[sizeof ((options *)0)->given + MAX_PE_OPTIONS + 1];  // a place for every row of the schema
    int n = 0;
    for (int i = 0; i < settings_count; i++) {
        const setting *s = &settings_schema[i];
        if (s->name) longopts[n++] = (struct option){s->name, s->type == SET_FLAG || s->type == SET_ACTION ? 0 : 1, 0, 256 + i};
    }
    for (int i = 0; i < npe; i++) longopts[n++] = (struct option){pe_list[i]->name, 1, 0, PE_OPT_BASE + i};
    longopts[n] = (struct option){0, 0, 0, 0};
    opterr = 0;
    int c;
    char err[512];
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == ':') die_usage("option '%s' needs a value", argv[optind - 1]);
        if (c == 'h') {  // -h alone is --help; an 'h' inside a cluster such as -heads is a mistyped option
            if (strcmp(argv[optind - 1], "-h") != 0) die_usage("unknown option '%s' (options start with --)", argv[optind]);
            c = 256 + (int)(settings_find("help") - settings_schema);
        }
        if (c >= PE_OPT_BASE && c < PE_OPT_BASE + npe) {
            const pe_option *p = pe_list[c - PE_OPT_BASE];
            if (!pe_option_set(p, optarg, &o->pe_opts, err, sizeof err)) die_usage("%s", err);
            continue;
        }
        if (c < 256 || c >= 256 + settings_count) {
            char hint[96];
            suggest_option(argv[optind - 1], longopts, hint, sizeof hint);
            die_usage("unknown option '%s'%s", argv[optind - 1], hint);
        }
        const setting *s = &settings_schema[c - 256];
        if (o->given[c - 256] && s->type != SET_FLAG && s->type != SET_ACTION)  // the last would win, silently
            die_usage("--%s is given twice; give it once", s->name);
        o->given[c - 256] = 1;
        if (s->type == SET_ACTION) {
            if (strcmp(s->name, "help") == 0) options_usage(stdout);
            else if (strcmp(s->name, "version") == 0) printf("pelab %s\n", PELAB_VERSION);
            else if (strcmp(s->name, "list-results") == 0) results_print_schema(stdout);
            else if (strcmp(s->name, "list-gemm") == 0) options_list_gemm(stdout);
            else options_list_pe(stdout);
            // what was asked for is the output: a full disk or a closed pipe is a failure
            if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "train: cannot write --%s to standard output (%s)\n", s->name,
                        errno ? strerror(errno) : "write error");
                exit(EXIT_RUNTIME);
            }
            exit(0);
        }
        if (!setting_parse(s, optarg ? optarg : "", o, NULL, err, sizeof err)) die_usage("%s", err);
    }
    if (optind < argc) die_usage("unexpected argument '%s' (options start with --)", argv[optind]);
    if (o->config) apply_config(o, pe_list, npe);
    if (o->load && o->resume) die_usage("--load and --resume cannot be combined: --load evaluates, --resume trains on");
    if (o->init && (o->load || o->resume))
        die_usage("--init cannot be combined with --%s: --init starts a new run from a checkpoint's weights",
                  o->load ? "load" : "resume");
    unsigned mode = o->load ? WITH_LOAD : o->resume ? WITH_RESUME : o->init ? WITH_INIT : 0;
    for (int i = 0; i < settings_count; i++)
        if (o->given[i] && (settings_schema[i].refused & mode)) die_usage("--%s %s", settings_schema[i].name, refusal(mode));
    if (o->sample && o->attn != 0 && !o->load) die_usage("--sample needs a causal model (--attn causal)");
    for (int i = 0; i < o->pe_opts.n_settings; i++) {
        const char *name = o->pe_opts.settings[i].name;
        const pe_option *p = NULL;
        for (int k = 0; k < npe && !p; k++)
            if (strcmp(pe_list[k]->name, name) == 0) p = pe_list[k];
        if (mode && !p->eval_only)
            die_usage("--%s: the model's options come from the checkpoint; with --%s give only evaluation options", name,
                      mode == WITH_LOAD ? "load" : mode == WITH_RESUME ? "resume" : "init");
    }
    // With a new model, an option its encodings do not take is refused now
    // (with a checkpoint, once the file says which encodings it has).
    if (!mode && !pe_check_settings(o->pe, &o->pe_opts, err, sizeof err)) die_usage("%s", err);
}
