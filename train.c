// train.c — pelab's command line: options, the training loop, reporting.
// The model (model/) and the data (data/) are libraries; this file only
// wires them together.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "data/data.h"
#include "model/ckpt.h"
#include "model/eval.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/viz.h"

#define PELAB_VERSION "0.1.0"
#define MAX_EVAL_CTX 16

typedef struct {
    char data[512];
    char pe[32];
    int ctx, causal, d_model, layers, heads, batch;
    long steps, stop_at, save_every, log_every;
    float lr, wd, clip, temperature;
    int warmup, threads;
    unsigned long long seed;
    int eval_ctx[MAX_EVAL_CTX], n_eval_ctx;
    long eval_tokens;
    float rope_base, rope_factor, sin_base, sin_scale;
    int rope_scale, rel_clip, t5_buckets, t5_max_distance;
    const char *save, *load, *resume, *json, *prompt, *attn_png;
    long sample;
    int quiet;
    int given_steps;
} options;

// SIGINT/SIGTERM: the first one lets the current step finish, then the run
// saves (with --save) and exits 128+signal; a second one exits at once. A
// checkpoint is only ever replaced by rename, so neither can corrupt it.
static volatile sig_atomic_t stop_signal = 0;

static void on_signal(int sig) {
    if (stop_signal) _exit(128 + sig);
    stop_signal = sig;
}

static void install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    // a parent may hand them down blocked (some shells do for background jobs)
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

// Everything a run allocates, in one place, so that every way out of main —
// the end, --stop-at, a signal, a refused option, a runtime error (the die_*
// functions call exit) — frees it through one atexit handler. A sanitizer
// build then reports no leak on any exit path.
static struct {
    model_t m;
    data_t d;
    model_acts a;
    int *tok, *tgt, *seg;  // (B, T) each
    int have_model, have_data, have_acts;
} owned;

static void release_owned(void) {
    if (owned.have_acts) model_acts_free(&owned.a);
    if (owned.have_data) data_close(&owned.d);
    if (owned.have_model) model_free(&owned.m);
    free(owned.tok);
    free(owned.tgt);
    free(owned.seg);
    memset(&owned, 0, sizeof owned);
}

static const char *const rope_scale_names[] = {"none", "pi", "ntk", "yarn"};

static void usage(FILE *f) {
    fprintf(f,
        "usage: ./train [options]\n"
        "Trains a small GPT-style Transformer from random weights with the position\n"
        "encoding of your choice, then evaluates it.\n\n"
        "data and model\n"
        "  --data SPEC          'cats' (built-in synthetic corpus) or a text file (bytes)  [cats]\n"
        "  --pe NAME            none, sinusoidal, learned, rope, alibi, t5, xl, shaw, or abs+rel  [rope]\n"
        "  --attn MODE          causal (language model) or bidir (masked tokens)  [causal]\n"
        "  --ctx N              training context length  [64]\n"
        "  --d-model N          channels  [64]\n"
        "  --layers N           Transformer blocks  [2]\n"
        "  --heads N            attention heads (must divide --d-model)  [4]\n"
        "position encodings\n"
        "  --sin-base X         sinusoidal base  [10000]\n"
        "  --sin-scale X        sinusoidal amplitude  [1/sqrt(d-model)]\n"
        "  --rope-base X        RoPE base  [10000]\n"
        "  --rope-scale KIND    RoPE extension at evaluation: none, pi, ntk, yarn  [none]\n"
        "  --rope-factor X      RoPE extension factor  [eval length / training ctx]\n"
        "  --rel-clip K         relative clipping distance (shaw; xl when given)  [16 for shaw]\n"
        "  --t5-buckets N       T5 bias buckets  [32]\n"
        "  --t5-max-distance N  T5 largest distinguished distance  [128]\n"
        "training\n"
        "  --batch N            sequences per step  [16]\n"
        "  --steps N            optimiser steps  [2500]\n"
        "  --lr X               peak learning rate  [6e-3]\n"
        "  --warmup N           linear warmup steps  [100]\n"
        "  --wd X               AdamW weight decay on matrices and embeddings  [0.1]\n"
        "  --clip X             gradient clipping at this global norm, 0 = off  [1.0]\n"
        "  --seed N             seed for weights, data and sampling  [1]\n"
        "  --threads N          threads for OpenMP and OpenBLAS  [all cores]\n"
        "  --log-every N        progress line every N steps  [steps/10]\n"
        "  --stop-at N          stop after step N (the schedule still spans --steps); resume later\n"
        "evaluation and output\n"
        "  --eval-ctx L,L,...   evaluation lengths  [the training ctx]\n"
        "  --eval-tokens N      tokens scored per evaluation length, at most  [16384]\n"
        "  --save FILE          write a checkpoint at the end (and every --save-every steps)\n"
        "  --save-every N       checkpoint every N steps  [0 = only at the end]\n"
        "  --load FILE          read a model for evaluation or sampling (no training)\n"
        "  --resume FILE        continue a saved run to its --steps (or a new --steps)\n"
        "  --json FILE          write the config and results as one JSON object\n"
        "  --attn-png FILE      draw the attention weights on a held-out cats sentence, both orders\n"
        "  --sample N           generate N tokens after training (causal only)\n"
        "  --prompt TEXT        start of the sample  [cats: 'the', text: newline]\n"
        "  --temperature X      sampling temperature  [1.0]\n"
        "  --quiet              no progress lines\n"
        "  --help, --version\n");
}

// Strict number parsing: the whole string, in range, or exit 2 naming the option.
static long parse_long(const char *opt, const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) die_usage("--%s '%s': not a whole number", opt, s);
    if (v < lo || v > hi) die_usage("--%s %ld: must be between %ld and %ld", opt, v, lo, hi);
    return v;
}

static float parse_float(const char *opt, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) die_usage("--%s '%s': not a number", opt, s);
    if (v < lo || v > hi) die_usage("--%s %g: must be between %g and %g", opt, v, lo, hi);
    return (float)v;
}

static void parse_eval_ctx(options *o, const char *s) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    o->n_eval_ctx = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (o->n_eval_ctx == MAX_EVAL_CTX) die_usage("--eval-ctx: at most %d lengths", MAX_EVAL_CTX);
        o->eval_ctx[o->n_eval_ctx++] = (int)parse_long("eval-ctx", tok, 1, 1 << 20);
    }
    if (!o->n_eval_ctx) die_usage("--eval-ctx '%s': give lengths like 64,128,256", s);
}

enum {
    O_DATA = 256, O_PE, O_CTX, O_ATTN, O_DMODEL, O_LAYERS, O_HEADS, O_BATCH, O_STEPS, O_LR, O_WARMUP,
    O_WD, O_CLIP, O_SEED, O_THREADS, O_EVAL_CTX, O_EVAL_TOKENS, O_ROPE_BASE, O_ROPE_SCALE,
    O_ROPE_FACTOR, O_SIN_BASE, O_SIN_SCALE, O_REL_CLIP, O_T5_BUCKETS, O_T5_MAXD, O_SAVE,
    O_SAVE_EVERY, O_LOAD, O_RESUME, O_JSON, O_SAMPLE, O_PROMPT, O_TEMP, O_QUIET, O_HELP, O_VERSION,
    O_STOP_AT, O_LOG_EVERY, O_ATTN_PNG
};

static void parse_options(options *o, int argc, char **argv) {
    static const struct option longopts[] = {
        {"data", 1, 0, O_DATA}, {"pe", 1, 0, O_PE}, {"ctx", 1, 0, O_CTX}, {"attn", 1, 0, O_ATTN},
        {"d-model", 1, 0, O_DMODEL}, {"layers", 1, 0, O_LAYERS}, {"heads", 1, 0, O_HEADS},
        {"batch", 1, 0, O_BATCH}, {"steps", 1, 0, O_STEPS}, {"lr", 1, 0, O_LR},
        {"warmup", 1, 0, O_WARMUP}, {"wd", 1, 0, O_WD}, {"clip", 1, 0, O_CLIP}, {"seed", 1, 0, O_SEED},
        {"threads", 1, 0, O_THREADS}, {"eval-ctx", 1, 0, O_EVAL_CTX}, {"eval-tokens", 1, 0, O_EVAL_TOKENS},
        {"rope-base", 1, 0, O_ROPE_BASE}, {"rope-scale", 1, 0, O_ROPE_SCALE},
        {"rope-factor", 1, 0, O_ROPE_FACTOR}, {"sin-base", 1, 0, O_SIN_BASE},
        {"sin-scale", 1, 0, O_SIN_SCALE}, {"rel-clip", 1, 0, O_REL_CLIP},
        {"t5-buckets", 1, 0, O_T5_BUCKETS}, {"t5-max-distance", 1, 0, O_T5_MAXD},
        {"save", 1, 0, O_SAVE}, {"save-every", 1, 0, O_SAVE_EVERY}, {"load", 1, 0, O_LOAD},
        {"resume", 1, 0, O_RESUME}, {"json", 1, 0, O_JSON}, {"sample", 1, 0, O_SAMPLE},
        {"prompt", 1, 0, O_PROMPT}, {"temperature", 1, 0, O_TEMP}, {"quiet", 0, 0, O_QUIET},
        {"help", 0, 0, O_HELP}, {"version", 0, 0, O_VERSION}, {"stop-at", 1, 0, O_STOP_AT},
        {"log-every", 1, 0, O_LOG_EVERY}, {"attn-png", 1, 0, O_ATTN_PNG}, {0, 0, 0, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case O_DATA: snprintf(o->data, sizeof o->data, "%s", optarg); break;
        case O_PE:
            if (strlen(optarg) >= sizeof o->pe) die_usage("--pe '%s': unknown encoding", optarg);
            snprintf(o->pe, sizeof o->pe, "%s", optarg);
            break;
        case O_CTX: o->ctx = (int)parse_long("ctx", optarg, 1, 1 << 20); break;
        case O_ATTN:
            if (strcmp(optarg, "causal") == 0) o->causal = 1;
            else if (strcmp(optarg, "bidir") == 0) o->causal = 0;
            else die_usage("--attn '%s': choose causal or bidir", optarg);
            break;
        case O_DMODEL: o->d_model = (int)parse_long("d-model", optarg, 1, 1 << 14); break;
        case O_LAYERS: o->layers = (int)parse_long("layers", optarg, 1, 256); break;
        case O_HEADS: o->heads = (int)parse_long("heads", optarg, 1, 1 << 14); break;
        case O_BATCH: o->batch = (int)parse_long("batch", optarg, 1, 1 << 16); break;
        case O_STEPS: o->steps = parse_long("steps", optarg, 0, 1L << 40); o->given_steps = 1; break;
        case O_LR: o->lr = parse_float("lr", optarg, 0.0, 10.0); break;
        case O_WARMUP: o->warmup = (int)parse_long("warmup", optarg, 0, INT_MAX); break;
        case O_WD: o->wd = parse_float("wd", optarg, 0.0, 10.0); break;
        case O_CLIP: o->clip = parse_float("clip", optarg, 0.0, 1e9); break;
        case O_SEED: o->seed = (unsigned long long)parse_long("seed", optarg, 0, LONG_MAX); break;
        case O_THREADS: o->threads = (int)parse_long("threads", optarg, 1, 1024); break;
        case O_EVAL_CTX: parse_eval_ctx(o, optarg); break;
        case O_EVAL_TOKENS: o->eval_tokens = parse_long("eval-tokens", optarg, 1, 1L << 32); break;
        case O_ROPE_BASE: o->rope_base = parse_float("rope-base", optarg, 1.0001, 1e12); break;
        case O_ROPE_SCALE: {
            int k = -1;
            for (int i = 0; i < 4; i++)
                if (strcmp(optarg, rope_scale_names[i]) == 0) k = i;
            if (k < 0) die_usage("--rope-scale '%s': choose none, pi, ntk or yarn", optarg);
            o->rope_scale = k;
            break;
        }
        case O_ROPE_FACTOR: o->rope_factor = parse_float("rope-factor", optarg, 1.0, 1e6); break;
        case O_SIN_BASE: o->sin_base = parse_float("sin-base", optarg, 1.0001, 1e12); break;
        case O_SIN_SCALE: o->sin_scale = parse_float("sin-scale", optarg, 1e-9, 1e6); break;
        case O_REL_CLIP: o->rel_clip = (int)parse_long("rel-clip", optarg, 1, 1 << 16); break;
        case O_T5_BUCKETS: o->t5_buckets = (int)parse_long("t5-buckets", optarg, 4, 1024); break;
        case O_T5_MAXD: o->t5_max_distance = (int)parse_long("t5-max-distance", optarg, 2, 1 << 20); break;
        case O_SAVE: o->save = optarg; break;
        case O_SAVE_EVERY: o->save_every = parse_long("save-every", optarg, 0, 1L << 40); break;
        case O_LOAD: o->load = optarg; break;
        case O_RESUME: o->resume = optarg; break;
        case O_JSON: o->json = optarg; break;
        case O_ATTN_PNG: o->attn_png = optarg; break;
        case O_SAMPLE: o->sample = parse_long("sample", optarg, 0, 1 << 20); break;
        case O_PROMPT: o->prompt = optarg; break;
        case O_TEMP: o->temperature = parse_float("temperature", optarg, 1e-4, 100.0); break;
        case O_QUIET: o->quiet = 1; break;
        case O_STOP_AT: o->stop_at = parse_long("stop-at", optarg, 1, 1L << 40); break;
        case O_LOG_EVERY: o->log_every = parse_long("log-every", optarg, 1, 1L << 40); break;
        case O_HELP: usage(stdout); exit(0);
        case O_VERSION: printf("pelab %s\n", PELAB_VERSION); exit(0);
        case ':': die_usage("option '%s' needs a value", argv[optind - 1]);
        default: die_usage("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) die_usage("unexpected argument '%s' (options start with --)", argv[optind]);
    if (o->load && o->resume) die_usage("--load and --resume cannot be combined: --load evaluates, --resume trains on");
    if (o->rope_factor > 0 && !o->rope_scale) die_usage("--rope-factor needs --rope-scale pi, ntk or yarn");
    if (o->sample && !o->causal && !o->load) die_usage("--sample needs a causal model (--attn causal)");
}

static void set_defaults(options *o) {
    memset(o, 0, sizeof *o);
    snprintf(o->data, sizeof o->data, "cats");
    snprintf(o->pe, sizeof o->pe, "rope");
    o->ctx = 64, o->causal = 1, o->d_model = 64, o->layers = 2, o->heads = 4, o->batch = 16;
    o->steps = 2500, o->lr = 6e-3f, o->warmup = 100, o->wd = 0.1f, o->clip = 1.0f, o->seed = 1;
    o->eval_tokens = 16384, o->rope_base = 10000.0f, o->sin_base = 10000.0f;
    o->t5_buckets = 32, o->t5_max_distance = 128, o->temperature = 1.0f;
}

static void config_from_options(model_config *c, const options *o, int vocab) {
    memset(c, 0, sizeof *c);
    c->vocab = vocab, c->ctx = o->ctx, c->d_model = o->d_model, c->layers = o->layers, c->heads = o->heads;
    c->causal = o->causal;
    snprintf(c->pe, sizeof c->pe, "%s", o->pe);
    c->sin_base = o->sin_base;
    c->sin_scale = o->sin_scale > 0 ? o->sin_scale : 1.0f / sqrtf((float)o->d_model);
    c->rope_base = o->rope_base;
    c->rel_clip = o->rel_clip;
    c->t5_buckets = o->t5_buckets, c->t5_max_distance = o->t5_max_distance;
}

// Fails early (exit 1) when an output file cannot be written, rather than
// after training. Leaves no file behind that was not there before.
static void check_writable(const char *path, const char *what) {
    if (!path) return;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) die_runtime("cannot write %s '%s': it is a directory", what, path);
        if (access(path, W_OK) != 0) die_runtime("cannot write %s '%s': %s", what, path, strerror(errno));
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) die_runtime("cannot write %s '%s': %s", what, path, strerror(errno));
    close(fd);
    unlink(path);
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

typedef struct {
    long steps_done;
    double final_loss, tokens_per_s, seconds;
} train_report;

static void write_json(const char *path, const options *o, const model_t *m, const train_report *tr,
                       const eval_result *ev, int nev, int has_order, double acc, int n_order) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) die_runtime("cannot write --json '%s': %s", path, strerror(errno));
    const model_config *c = &m->cfg;
    fprintf(f, "{\"config\": {\"data\": ");
    json_string(f, o->data);
    fprintf(f, ", \"pe\": ");
    json_string(f, c->pe);
    fprintf(f, ", \"ctx\": %d, \"attn\": \"%s\", \"d_model\": %d, \"layers\": %d, \"heads\": %d, \"vocab\": %d",
            c->ctx, c->causal ? "causal" : "bidir", c->d_model, c->layers, c->heads, c->vocab);
    fprintf(f, ", \"batch\": %d, \"steps\": %ld, \"lr\": %g, \"warmup\": %d, \"wd\": %g, \"clip\": %g, \"seed\": %llu, \"threads\": %d",
            o->batch, o->steps, o->lr, o->warmup, o->wd, o->clip, o->seed, o->threads);
    fprintf(f, ", \"eval_ctx\": [");
    for (int i = 0; i < o->n_eval_ctx; i++) fprintf(f, "%s%d", i ? ", " : "", o->eval_ctx[i]);
    fprintf(f, "], \"eval_tokens\": %ld, \"rope_base\": %g, \"rope_scale\": \"%s\", \"rope_factor\": %g",
            o->eval_tokens, c->rope_base, rope_scale_names[o->rope_scale], o->rope_factor);
    fprintf(f, ", \"sin_base\": %g, \"sin_scale\": %g, \"rel_clip\": %d, \"t5_buckets\": %d, \"t5_max_distance\": %d",
            c->sin_base, c->sin_scale, c->rel_clip, c->t5_buckets, c->t5_max_distance);
    const char *files[] = {o->save, o->load, o->resume, o->prompt, o->json, o->attn_png};
    const char *names[] = {"save", "load", "resume", "prompt", "json", "attn_png"};
    for (int i = 0; i < 6; i++) {
        fprintf(f, ", \"%s\": ", names[i]);
        if (files[i]) json_string(f, files[i]);
        else fprintf(f, "null");
    }
    fprintf(f, ", \"save_every\": %ld, \"stop_at\": %ld, \"log_every\": %ld, \"sample\": %ld, \"temperature\": %g, \"quiet\": %s}",
            o->save_every, o->stop_at, o->log_every, o->sample, o->temperature, o->quiet ? "true" : "false");
    fprintf(f, ", \"params\": %zu", model_num_params(m));
    fprintf(f, ", \"train\": {\"steps\": %ld, \"final_loss\": %.6f, \"tokens_per_s\": %.1f, \"seconds\": %.3f}",
            tr->steps_done, tr->final_loss, tr->tokens_per_s, tr->seconds);
    fprintf(f, ", \"eval\": [");
    for (int i = 0; i < nev; i++) {
        fprintf(f, "%s{\"ctx\": %d", i ? ", " : "", ev[i].L);
        if (ev[i].ok) fprintf(f, ", \"loss\": %.6f, \"ppl\": %.6f, \"tokens\": %zu}", ev[i].loss, ev[i].ppl, ev[i].tokens);
        else {
            fprintf(f, ", \"error\": ");
            json_string(f, ev[i].err);
            fprintf(f, "}");
        }
    }
    fprintf(f, "]");
    if (has_order) fprintf(f, ", \"order\": {\"acc\": %.6f, \"n\": %d}", acc, n_order);
    fprintf(f, "}\n");
    if (fflush(f) != 0 || ferror(f)) die_runtime("cannot write --json '%s': %s", path, strerror(errno));
    fclose(f);
    if (rename(tmp, path) != 0) die_runtime("cannot write --json '%s': %s", path, strerror(errno));
}

static void save_checkpoint(const options *o, const model_t *m, const data_t *d, long step) {
    train_state st;
    memset(&st, 0, sizeof st);
    st.step = step, st.steps = o->steps, st.batch = o->batch, st.warmup = o->warmup;
    st.lr = o->lr, st.wd = o->wd, st.clip = o->clip, st.seed = o->seed, st.data_rng = d->rng.s;
    snprintf(st.data, sizeof st.data, "%s", o->data);
    char err[512];
    if (ckpt_save(o->save, m, &st, 1, err, sizeof err) != 0) die_runtime("%s", err);
}

static void sample_text(model_t *m, const data_t *d, const options *o) {
    if (!m->cfg.causal) die_usage("--sample needs a causal model (--attn causal)");
    int T = m->cfg.ctx;
    int *ctx = xmalloc(sizeof(int) * (size_t)(T + o->sample + 1024));
    char err[256];
    const char *prompt = o->prompt ? o->prompt : d->kind == DATA_CATS ? "the" : "\n";
    int n = data_encode(d, prompt, ctx, 1024, err, sizeof err);
    if (n <= 0) {
        free(ctx);
        if (n < 0) die_usage("%s", err);
        die_usage("--prompt is empty");
    }
    model_acts a;
    model_acts_alloc(&a, m, 1, T, 0);
    int *win = xmalloc(sizeof(int) * T);
    rng_t r = {o->seed * 7919 + 17};
    char piece[64];
    printf("sample: ");
    for (int i = 0; i < n; i++) {
        data_decode(d, ctx[i], piece, sizeof piece);
        fputs(piece, stdout);
    }
    int V = m->cfg.vocab;
    float *p = xmalloc(sizeof(float) * V);
    for (long s = 0; s < o->sample; s++) {
        int start = n > T ? n - T : 0, len = n - start;
        for (int t = 0; t < T; t++) win[t] = t < len ? ctx[start + t] : 0;
        model_forward(m, &a, win, NULL, NULL);
        const float *z = a.logits + (size_t)(len - 1) * V;
        float mx = z[0], sum = 0.0f;
        for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        for (int v = 0; v < V; v++) sum += (p[v] = expf((z[v] - mx) / o->temperature));
        // never sample [MASK] or cats' padding
        float u = rng_uniform(&r) * sum, acc = 0.0f;
        int next = V - 1;
        for (int v = 0; v < V; v++) {
            acc += p[v];
            if (u < acc) { next = v; break; }
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

int main(int argc, char **argv) {
    ops_select_blas_kernel(argv);
    options o;
    set_defaults(&o);
    parse_options(&o, argc, argv);
#ifdef _OPENMP
    if (!o.threads) o.threads = omp_get_num_procs();
#else
    if (!o.threads) o.threads = 1;
#endif
    ops_init_threads(o.threads);
    install_signal_handlers();  // before any OpenMP thread exists, so they all inherit the mask
    atexit(release_owned);

    model_t *m = &owned.m;
    train_state st;
    memset(&st, 0, sizeof st);
    long start_step = 0;
    char err[1024];
    const char *from = o.load ? o.load : o.resume;
    if (from) {
        if (ckpt_load(from, m, &st, o.resume != NULL, err, sizeof err) != 0) die_runtime("%s", err);
        owned.have_model = 1;
        // the model's shape and the run's schedule come from the file
        o.ctx = m->cfg.ctx, o.d_model = m->cfg.d_model, o.layers = m->cfg.layers, o.heads = m->cfg.heads;
        o.causal = m->cfg.causal;
        snprintf(o.pe, sizeof o.pe, "%s", m->cfg.pe);
        if (o.resume) {
            snprintf(o.data, sizeof o.data, "%s", st.data);
            o.batch = st.batch, o.warmup = st.warmup, o.lr = st.lr, o.wd = st.wd, o.clip = st.clip;
            o.seed = st.seed;
            if (!o.given_steps) o.steps = st.steps;
            start_step = st.step;
        } else {
            o.steps = 0;
        }
    }
    data_t *d = &owned.d;
    data_open(d, o.data, o.causal, o.seed);
    owned.have_data = 1;
    if (!from) {
        model_config cfg;
        config_from_options(&cfg, &o, d->vocab);
        model_create(m, &cfg);
        owned.have_model = 1;
        model_init_weights(m, o.seed);
    } else if (m->cfg.vocab != d->vocab) {
        die_usage("checkpoint '%s' has a vocabulary of %d but --data %s has %d; give the --data it was trained on",
                  from, m->cfg.vocab, o.data, d->vocab);
    }
    if (o.resume) d->rng.s = st.data_rng;
    if (!data_check_ctx(d, o.ctx, err, sizeof err)) die_usage("%s", err);
    if (o.rope_scale && !(m->pe_rel.ops && strcmp(m->pe_rel.ops->name, "rope") == 0))
        die_usage("--rope-scale %s needs --pe rope (or abs+rope)", rope_scale_names[o.rope_scale]);
    if (!o.n_eval_ctx) o.eval_ctx[o.n_eval_ctx++] = o.ctx;
    if (o.save_every && !o.save) die_usage("--save-every needs --save FILE");
    if (o.stop_at && !o.save) die_usage("--stop-at needs --save FILE, or the run would be lost");
    check_writable(o.save, "--save");
    check_writable(o.json, "--json");
    check_writable(o.attn_png, "--attn-png");
    if (o.attn_png && d->kind != DATA_CATS) die_usage("--attn-png draws a cats sentence; it needs --data cats");
    if (o.warmup > o.steps && o.steps > 0 && !from) o.warmup = (int)o.steps;

    const int B = o.batch, T = o.ctx;
    if (!o.quiet)
        printf("pelab %s: data=%s pe=%s attn=%s ctx=%d d=%d layers=%d heads=%d params=%zu batch=%d steps=%ld threads=%d\n",
               PELAB_VERSION, o.data, m->cfg.pe, m->cfg.causal ? "causal" : "bidir", T, m->cfg.d_model,
               m->cfg.layers, m->cfg.heads, model_num_params(m), B, o.steps, o.threads);
    train_report tr = {start_step, 0.0, 0.0, 0.0};
    long end_step = o.stop_at && o.stop_at < o.steps ? o.stop_at : o.steps;
    if (start_step < end_step) {
        char fit[512];
        if (!model_fits_in_memory(m, B, T, 1, fit, sizeof fit)) die_runtime("%s", fit);
        model_acts_alloc(&owned.a, m, B, T, 1);
        owned.have_acts = 1;
        size_t BT = (size_t)B * T;
        int *tok = owned.tok = xmalloc(sizeof(int) * BT), *tgt = owned.tgt = xmalloc(sizeof(int) * BT),
            *seg = owned.seg = xmalloc(sizeof(int) * BT);
        adamw_hparams hp = {o.lr, 0.9f, 0.95f, 1e-8f, o.wd};
        long log_every = o.log_every ? o.log_every : (o.steps >= 10 ? o.steps / 10 : 1);
        double t0 = now_seconds();
        // test hook: PELAB_TEST_NAN_AT=k makes step k's loss NaN
        const char *nan_at_env = getenv("PELAB_TEST_NAN_AT");
        long nan_at = nan_at_env ? atol(nan_at_env) : -1;
        // test hook: PELAB_TEST_STEP_SLEEP_MS=n sleeps n ms after each step, so
        // that a signal sent by a test lands mid-run however fast the machine
        const char *sleep_env = getenv("PELAB_TEST_STEP_SLEEP_MS");
        long sleep_ms = sleep_env ? atol(sleep_env) : 0;
        for (long step = start_step; step < end_step; step++) {
            data_next_batch(d, B, T, tok, tgt, seg);
            double loss = model_forward(m, &owned.a, tok, tgt, seg);
            if (step + 1 == nan_at) loss = NAN;
            if (!isfinite(loss))
                die_runtime("non-finite loss (%g) at step %ld; stopped without saving%s; lower --lr or check the data", loss,
                            step + 1, o.save ? " (the last checkpoint written is intact)" : "");
            model_zero_grad(m);
            model_backward(m, &owned.a, tok, tgt, seg);
            hp.lr = lr_schedule(o.lr, o.warmup, step, o.steps);
            float norm = model_adamw_step(m, &hp, o.clip, step + 1);
            if (!isfinite(norm))
                die_runtime("non-finite gradient at step %ld; stopped without saving%s; lower --lr", step + 1,
                            o.save ? " (the last checkpoint written is intact)" : "");
            tr.final_loss = loss;
            tr.steps_done = step + 1;
            double el = now_seconds() - t0;
            long done = step + 1 - start_step;
            tr.seconds = el;
            tr.tokens_per_s = (double)done * BT / el;
            if (!o.quiet && ((step + 1) % log_every == 0 || step + 1 == end_step)) {
                double eta = el / done * (double)(end_step - step - 1);
                printf("step %ld/%ld loss %.4f lr %.2e tok/s %.0f elapsed %.1fs eta %.1fs\n", step + 1, o.steps, loss,
                       hp.lr, tr.tokens_per_s, el, eta);
                fflush(stdout);
            }
            if (sleep_ms > 0) usleep((useconds_t)sleep_ms * 1000);
            if (o.save && o.save_every && (step + 1) % o.save_every == 0 && step + 1 < end_step)
                save_checkpoint(&o, m, d, step + 1);
            if (stop_signal) {
                int sig = stop_signal;
                if (o.save) {
                    save_checkpoint(&o, m, d, step + 1);
                    printf("interrupted by %s after step %ld; saved %s; continue with --resume %s\n",
                           sig == SIGINT ? "SIGINT" : "SIGTERM", step + 1, o.save, o.save);
                } else {
                    printf("interrupted by %s after step %ld; nothing saved (no --save)\n", sig == SIGINT ? "SIGINT" : "SIGTERM", step + 1);
                }
                fflush(stdout);
                exit(128 + sig);  // release_owned frees the run
            }
        }
    }
    // Past training a signal has nothing to save: let it end the program at once.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (stop_signal) raise(stop_signal);
    if (o.save && !o.load) {
        save_checkpoint(&o, m, d, tr.steps_done);
        if (!o.quiet) printf("saved %s at step %ld\n", o.save, tr.steps_done);
    }
    if (o.stop_at && tr.steps_done < o.steps) {
        printf("stopped at step %ld of %ld; continue with --resume %s\n", tr.steps_done, o.steps, o.save);
        return 0;
    }

    eval_result ev[MAX_EVAL_CTX];
    int any_ok = 0;
    for (int i = 0; i < o.n_eval_ctx; i++) {
        int L = o.eval_ctx[i];
        if (m->pe_rel.ops) {
            m->pe_rel.rope_scale = o.rope_scale;
            m->pe_rel.rope_factor = o.rope_factor > 0 ? o.rope_factor : (L > T ? (float)L / T : 1.0f);
        }
        eval_perplexity(m, d, L, (size_t)o.eval_tokens, &ev[i]);
        if (ev[i].ok) {
            printf("eval ctx=%d loss=%.4f ppl=%.3f\n", L, ev[i].loss, ev[i].ppl);
            any_ok = 1;
        } else {
            printf("eval ctx=%d refused\n", L);
            fprintf(stderr, "train: eval ctx=%d: %s\n", L, ev[i].err);
        }
    }
    if (m->pe_rel.ops) m->pe_rel.rope_scale = ROPE_SCALE_NONE, m->pe_rel.rope_factor = 1.0f;
    double acc = 0.0;
    int n_order = 0;
    if (d->kind == DATA_CATS) {
        acc = eval_order(m, d, &n_order);
        printf("order_acc=%.3f n=%d\n", acc, n_order);
    }
    fflush(stdout);
    if (o.json) write_json(o.json, &o, m, &tr, ev, o.n_eval_ctx, d->kind == DATA_CATS, acc, n_order);
    if (o.attn_png) {
        if (viz_attention_png(m, d, o.attn_png, err, sizeof err) != 0) die_runtime("%s", err);
        if (!o.quiet) printf("attention picture: %s\n", o.attn_png);
    }
    if (o.sample) sample_text(m, d, &o);
    return any_ok ? 0 : EXIT_RUNTIME;
}
