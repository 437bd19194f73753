// ckpt.c — see ckpt.h.
#include "ckpt.h"

#include "../core/files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'P', 'E', 'L', 'A', 'B', 'C', 'K', '1'};

// Version 1's fixed header: magic, version, flags, the config block, the
// training-state block, N.
#define V1_CONFIG_BYTES (9 * 4 + 3 * 4 + 32)
#define V1_STATE_BYTES (8 + 8 + 4 + 4 + 3 * 4 + 8 + 8 + 512)
#define V1_HEADER_BYTES (8 + 4 + 4 + V1_CONFIG_BYTES + V1_STATE_BYTES + 8)
// Version 2's fixed part: magic, version, flags, N, the text length.
#define V2_FIXED_BYTES (8 + 4 + 4 + 8 + 4)
#define V2_TEXT_MAX (1 << 20)

// ---- little-endian numbers, whatever the host ----

static void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static float get_le_float(const unsigned char *p) {
    uint32_t u = (uint32_t)get_le(p, 4);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

// Floats in memory <-> little-endian bytes, in place (nothing to do on x86).
static void floats_to_from_le(float *x, size_t n) {
    if (host_is_little_endian()) return;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        u = (u >> 24) | ((u >> 8) & 0xFF00u) | ((u << 8) & 0xFF0000u) | (u << 24);
        memcpy(&x[i], &u, 4);
    }
}

// ---- the settings text ----

typedef struct {
    char *p;
    size_t n, cap;
} text_buf;

static void text_add(text_buf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(text_buf *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            return;
        }
        t->cap = t->cap * 2 + (size_t)(k > 0 ? k : 64) + 1;
        char *q = realloc(t->p, t->cap);
        if (!q) die_runtime("out of memory writing a checkpoint");
        t->p = q;
    }
}

// A value on one line: backslash and newline escaped.
static void text_add_escaped(text_buf *t, const char *key, const char *value) {
    text_add(t, "%s=", key);
    for (const char *c = value; *c; c++) {
        if (*c == '\\') text_add(t, "\\\\");
        else if (*c == '\n') text_add(t, "\\n");
        else text_add(t, "%c", *c);
    }
    text_add(t, "\n");
}

static void encode_settings(text_buf *t, const model_t *m, const train_state *st) {
    const model_config *c = &m->cfg;
    text_add(t, "pe=%s\nattn=%s\nvocab=%d\nctx=%d\nd_model=%d\nlayers=%d\nheads=%d\n", c->pe,
             c->causal ? "causal" : "bidir", c->vocab, c->ctx, c->d_model, c->layers, c->heads);
    // the encodings' options that define the model (not the evaluation-only ones)
    if (c->base_ctx > 0) text_add(t, "base_ctx=%d\n", c->base_ctx);
    if (c->rand_pos > 0) text_add(t, "rand_pos=%d\n", c->rand_pos);
    for (int i = 0; i < c->n_settings; i++) {
        const pe_option *o = NULL;
        for (int k = 0; k < PE_SLOTS && !o; k++) o = pe_option_find(m->pe[k].ops, c->settings[i].name, NULL);
        if (o && (!o->eval_only || (o->tunes && c->base_ctx > 0)))
            text_add(t, "opt.%s=%.17g\n", c->settings[i].name, c->settings[i].value);
    }
    text_add(t, "step=%" PRId64 "\nsteps=%" PRId64 "\nbatch=%d\nwarmup=%d\n", st->step, st->steps, st->batch, st->warmup);
    text_add(t, "lr=%.9g\nwd=%.9g\nclip=%.9g\nseed=%" PRIu64 "\ndata_rng=%" PRIu64 "\n", st->lr, st->wd, st->clip,
             st->seed, st->data_rng);
    text_add_escaped(t, "data", st->data);
    text_add(t, "data_size=%" PRIu64 "\ndata_crc32=%" PRIu32 "\n", st->data_size, st->data_crc);
}

// Parses one number of a settings line; 0 when it is not one, or out of range.
static int parse_num(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

// A whole number in [lo, hi]: "16.5" or "1e3" is not one (a count or a
// length written as a fraction is a corrupt file, not one to round).
static int parse_int(const char *s, double lo, double hi, double *out) {
    for (const char *p = *s == '-' ? s + 1 : s; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return parse_num(s, lo, hi, out);
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') return 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return 0;
    *out = v;
    return 1;
}

// Fills c and st from the settings text; 0 with the offending line in err.
static int decode_settings(char *text, size_t n, model_config *c, train_state *st, char *err, size_t errlen) {
    enum { K_PE, K_ATTN, K_VOCAB, K_CTX, K_D, K_LAYERS, K_HEADS, K_STEP, K_STEPS, K_BATCH, K_WARMUP, K_LR, K_WD,
           K_CLIP, K_SEED, K_RNG, K_DATA, K_DSIZE, K_DCRC, K_N };
    static const char *const keys[K_N] = {"pe", "attn", "vocab", "ctx", "d_model", "layers", "heads", "step",
                                          "steps", "batch", "warmup", "lr", "wd", "clip", "seed", "data_rng",
                                          "data", "data_size", "data_crc32"};
    int seen[K_N] = {0};
    memset(c, 0, sizeof *c);
    memset(st, 0, sizeof *st);
    if (n == 0 || text[n - 1] != '\n' || memchr(text, '\0', n)) {
        snprintf(err, errlen, "its settings text is malformed");
        return 0;
    }
    for (char *line = text; line < text + n;) {
        char *nl = memchr(line, '\n', (size_t)(text + n - line));
        *nl = '\0';
        char *eq = strchr(line, '=');
        if (!eq) {
            snprintf(err, errlen, "settings line '%.60s' has no '='", line);
            return 0;
        }
        *eq = '\0';
        const char *key = line, *val = eq + 1;
        line = nl + 1;
        double v;
        if (strcmp(key, "base_ctx") == 0 || strcmp(key, "rand_pos") == 0) {  // optional: fine-tuned, --rand-pos models
            int *field = key[0] == 'b' ? &c->base_ctx : &c->rand_pos;
            if (*field || !parse_int(val, 1, 1 << 20, &v)) {
                snprintf(err, errlen, "bad settings value '%.40s=%.60s'", key, val);
                return 0;
            }
            *field = (int)v;
            continue;
        }
        if (strncmp(key, "opt.", 4) == 0) {
            if (!parse_num(val, -1e300, 1e300, &v) || config_setting(c, key + 4) || !config_set(c, key + 4, v)) {
                snprintf(err, errlen, "bad option setting '%.40s=%.40s'", key, val);
                return 0;
            }
            continue;
        }
        int k = 0;
        while (k < K_N && strcmp(keys[k], key) != 0) k++;
        if (k == K_N || seen[k]) {
            snprintf(err, errlen, "%s settings key '%.40s'", k == K_N ? "unknown" : "repeated", key);
            return 0;
        }
        seen[k] = 1;
        int ok = 1;
        switch (k) {
        case K_PE: ok = strlen(val) < sizeof c->pe; snprintf(c->pe, sizeof c->pe, "%s", val); break;
        case K_ATTN: ok = !strcmp(val, "causal") || !strcmp(val, "bidir"); c->causal = !strcmp(val, "causal"); break;
        case K_VOCAB: ok = parse_int(val, 2, 1 << 30, &v); c->vocab = (int)v; break;
        case K_CTX: ok = parse_int(val, 1, 1 << 20, &v); c->ctx = (int)v; break;
        case K_D: ok = parse_int(val, 1, 1 << 14, &v); c->d_model = (int)v; break;
        case K_LAYERS: ok = parse_int(val, 1, 256, &v); c->layers = (int)v; break;
        case K_HEADS: ok = parse_int(val, 1, 1 << 14, &v); c->heads = (int)v; break;
        case K_STEP: ok = parse_int(val, 0, 1e15, &v); st->step = (int64_t)v; break;
        case K_STEPS: ok = parse_int(val, 0, 1e15, &v); st->steps = (int64_t)v; break;
        case K_BATCH: ok = parse_int(val, 1, 1 << 16, &v); st->batch = (int32_t)v; break;
        case K_WARMUP: ok = parse_int(val, 0, 2147483647.0, &v); st->warmup = (int32_t)v; break;
        case K_LR: ok = parse_num(val, 0, 10, &v); st->lr = (float)v; break;
        case K_WD: ok = parse_num(val, 0, 10, &v); st->wd = (float)v; break;
        case K_CLIP: ok = parse_num(val, 0, 1e9, &v); st->clip = (float)v; break;
        case K_SEED: ok = parse_u64(val, &st->seed); break;
        case K_RNG: ok = parse_u64(val, &st->data_rng); break;
        case K_DSIZE: ok = parse_u64(val, &st->data_size); break;
        case K_DCRC: {
            uint64_t u = 0;
            ok = parse_u64(val, &u) && u <= 0xFFFFFFFFu;
            st->data_crc = (uint32_t)u;
            break;
        }
        case K_DATA: {
            size_t o = 0;
            // An escape is a backslash and one more byte; a lone backslash at
            // the end stops the loop before it steps past the terminator.
            for (const char *p = val; *p; p++) {
                char ch = *p;
                if (ch == '\\') {
                    p++;
                    ch = *p == 'n' ? '\n' : *p == '\\' ? '\\' : 0;
                }
                if (ch == 0 || o + 1 >= sizeof st->data) {
                    ok = 0;
                    break;
                }
                st->data[o++] = ch;
            }
            st->data[o] = '\0';
            ok = ok && o > 0;  // a run always names its data
            break;
        }
        }
        if (!ok) {
            snprintf(err, errlen, "bad settings value '%.40s=%.60s'", key, val);
            return 0;
        }
    }
    for (int k = 0; k < K_N; k++)
        if (!seen[k]) {
            snprintf(err, errlen, "its settings lack '%s'", keys[k]);
            return 0;
        }
    if (st->step > st->steps) {
        snprintf(err, errlen, "its step (%lld) is past the end of its schedule (steps=%lld)", (long long)st->step,
                 (long long)st->steps);
        return 0;
    }
    st->data_known = 1;
    return 1;
}

// ---- saving ----

// Writes n bytes and folds them into the CRC; 0, or -1 on a write error.
static int write_bytes(FILE *f, const void *p, size_t n, uint32_t *crc) {
    *crc = crc32_update(*crc, p, n);
    return fwrite(p, 1, n, f) == n ? 0 : -1;
}

// Floats as little-endian bytes (through a converted copy on big-endian hosts).
static int write_floats(FILE *f, const float *x, size_t n, uint32_t *crc) {
    if (host_is_little_endian()) return write_bytes(f, x, sizeof(float) * n, crc);
    float buf[4096];
    for (size_t i = 0; i < n; i += 4096) {
        size_t k = n - i < 4096 ? n - i : 4096;
        memcpy(buf, x + i, sizeof(float) * k);
        floats_to_from_le(buf, k);
        if (write_bytes(f, buf, sizeof(float) * k, crc)) return -1;
    }
    return 0;
}

int ckpt_save(const char *path, const model_t *m, const train_state *st, int with_optimizer, char *err, size_t errlen) {
    atomic_file af;
    if (atomic_open(&af, path, "checkpoint", err, errlen) != 0) return -1;
    text_buf text = {xmalloc(1024), 0, 1024};
    encode_settings(&text, m, st);
    unsigned char fixed[V2_FIXED_BYTES];
    memcpy(fixed, MAGIC, 8);
    put_le(fixed + 8, CKPT_VERSION, 4);
    put_le(fixed + 12, with_optimizer ? 1u : 0u, 4);
    put_le(fixed + 16, m->tab.total, 8);
    put_le(fixed + 24, text.n, 4);
    uint32_t crc = 0;
    size_t n = m->tab.total;
    int bad = write_bytes(af.f, fixed, sizeof fixed, &crc) || write_bytes(af.f, text.p, text.n, &crc) ||
              write_floats(af.f, m->params, n, &crc);
    free(text.p);
    if (!bad && with_optimizer) bad = write_floats(af.f, m->m, n, &crc) || write_floats(af.f, m->v, n, &crc);
    unsigned char crc_bytes[4];
    put_le(crc_bytes, crc, 4);
    if (!bad) bad = fwrite(crc_bytes, 1, 4, af.f) != 4;
    if (bad) {
        snprintf(err, errlen, "cannot write checkpoint '%s': %s (the previous file, if any, is unchanged)", path, strerror(errno));
        atomic_abort(&af);
        return -1;
    }
    return atomic_commit(&af, "checkpoint", err, errlen);
}

// ---- loading ----

// Reports a load failure: closes f, fills err, returns -1.
static int load_fail(FILE *f, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int load_fail(FILE *f, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (f) fclose(f);
    return -1;
}

// Version 1's option fields, by the option names that replaced them: a v1
// model gets a setting for each option its encodings take.
static void v1_settings(model_config *c, const int32_t *ints, const float *fl) {
    const struct {
        const char *name;
        double value;
        int unset_if_zero;
    } v1[] = {{"sin-base", fl[0], 0}, {"sin-scale", fl[1], 0}, {"rope-base", fl[2], 0},
              {"rel-clip", ints[6], 1}, {"t5-buckets", ints[7], 0}, {"t5-max-distance", ints[8], 0}};
    const pe_ops *abs, *rel;
    char err[256];
    if (!pe_parse_spec(c->pe, &abs, &rel, err, sizeof err)) return;  // model_config_check reports it
    for (size_t i = 0; i < sizeof v1 / sizeof v1[0]; i++) {
        if (v1[i].unset_if_zero && v1[i].value == 0) continue;
        if (pe_option_find(abs, v1[i].name, NULL) || pe_option_find(rel, v1[i].name, NULL))
            config_set(c, v1[i].name, v1[i].value);
    }
}

// Reads the rest of a version 1 header (after magic, version, flags).
static void decode_v1(const unsigned char *r, model_config *c, train_state *s, uint64_t *n) {
    memset(c, 0, sizeof *c);
    memset(s, 0, sizeof *s);
    int32_t ints[9];
    for (int i = 0; i < 9; i++, r += 4) ints[i] = (int32_t)get_le(r, 4);
    float fl[3];
    for (int i = 0; i < 3; i++, r += 4) fl[i] = get_le_float(r);
    memcpy(c->pe, r, 32);
    c->pe[31] = '\0';
    r += 32;
    c->vocab = ints[0], c->ctx = ints[1], c->d_model = ints[2], c->layers = ints[3], c->heads = ints[4];
    c->causal = ints[5];
    v1_settings(c, ints, fl);
    s->step = (int64_t)get_le(r, 8), r += 8;
    s->steps = (int64_t)get_le(r, 8), r += 8;
    s->batch = (int32_t)get_le(r, 4), r += 4;
    s->warmup = (int32_t)get_le(r, 4), r += 4;
    s->lr = get_le_float(r), r += 4;
    s->wd = get_le_float(r), r += 4;
    s->clip = get_le_float(r), r += 4;
    s->seed = get_le(r, 8), r += 8;
    s->data_rng = get_le(r, 8), r += 8;
    memcpy(s->data, r, 512);
    s->data[511] = '\0';
    r += 512;
    *n = get_le(r, 8);
}

// What the header of a checkpoint says, once read and checked against the
// file's size: the file stays open at the first weight.
typedef struct {
    FILE *f;
    model_config c;
    train_state s;
    uint64_t n;       // parameters
    uint32_t flags;
    uint32_t crc;     // of every byte read so far
} ckpt_header;

// Opens path and reads its header: 0, or -1 with err filled and the file closed.
static int read_header(const char *path, int with_optimizer, ckpt_header *h, char *err, size_t errlen) {
    struct stat sb;
    if (!check_input_file(path, "checkpoint", err, errlen)) return -1;  // a FIFO would block forever
    if (stat(path, &sb) != 0) return load_fail(NULL, err, errlen, "cannot open checkpoint '%s': %s", path, strerror(errno));
    FILE *f = fopen(path, "rb");
    if (!f) return load_fail(NULL, err, errlen, "cannot open checkpoint '%s': %s", path, strerror(errno));
    unsigned char head[V1_HEADER_BYTES];  // the larger of the two fixed parts
    size_t got = fread(head, 1, 16, f);
    if (got >= 8 && memcmp(head, MAGIC, 8) != 0)
        return load_fail(f, err, errlen, "'%s' is not a pelab checkpoint (bad magic)", path);
    if (got != 16) return load_fail(f, err, errlen, "checkpoint '%s' is truncated: shorter than its header", path);
    uint32_t version = (uint32_t)get_le(head + 8, 4), flags = (uint32_t)get_le(head + 12, 4);
    if (version != 1 && version != 2)
        return load_fail(f, err, errlen, "checkpoint '%s' has format version %u; this pelab reads versions 1 and 2", path, version);
    size_t fixed = version == 1 ? V1_HEADER_BYTES : V2_FIXED_BYTES;
    if (fread(head + 16, 1, fixed - 16, f) != fixed - 16)
        return load_fail(f, err, errlen, "checkpoint '%s' is truncated: shorter than its %zu-byte header", path, fixed);
    uint32_t crc = crc32_update(0, head, fixed);
    model_config c;
    train_state s;
    uint64_t n;
    size_t text_len = 0;
    if (version == 1) {
        decode_v1(head + 16, &c, &s, &n);
    } else {
        n = get_le(head + 16, 8);
        text_len = (size_t)get_le(head + 24, 4);
        if (text_len == 0 || text_len > V2_TEXT_MAX)
            return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: its settings text claims %zu bytes", path, text_len);
        if (fixed + text_len > (uint64_t)sb.st_size)
            return load_fail(f, err, errlen, "checkpoint '%s' is truncated: shorter than its settings text", path);
        char *text = xmalloc(text_len);
        if (fread(text, 1, text_len, f) != text_len) {
            free(text);
            return load_fail(f, err, errlen, "checkpoint '%s' is truncated: shorter than its settings text", path);
        }
        crc = crc32_update(crc, text, text_len);
        char why[256];
        int ok = decode_settings(text, text_len, &c, &s, why, sizeof why);
        free(text);
        if (!ok) return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: %s", path, why);
    }
    char cerr[256] = "";
    if (!model_config_check(&c, cerr, sizeof cerr))
        return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: its config is invalid (%s)", path, cerr);
    if ((flags & ~1u) || n == 0 || n > ((uint64_t)1 << 36) || s.step < 0 || s.steps < 0 || s.batch < 1 || s.warmup < 0)
        return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: bad flags, counts or training state", path);
    // The file size the header implies, checked before anything large is allocated.
    size_t per_tensor_bytes = sizeof(float) * n;
    uint64_t expect = (uint64_t)fixed + text_len + (uint64_t)per_tensor_bytes * ((flags & 1) ? 3 : 1) + 4;
    if ((uint64_t)sb.st_size != expect)
        return load_fail(f, err, errlen, "checkpoint '%s' is %s: %lld bytes, expected %llu for %llu parameters", path,
                         (uint64_t)sb.st_size < expect ? "truncated" : "corrupt (trailing bytes)",
                         (long long)sb.st_size, (unsigned long long)expect, (unsigned long long)n);
    if (model_param_count(&c) != n)
        return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: %llu parameters, but its config implies %zu", path,
                         (unsigned long long)n, model_param_count(&c));
    if (with_optimizer && !(flags & 1))
        return load_fail(f, err, errlen, "checkpoint '%s' holds no optimiser state, so it cannot be resumed; use --load to evaluate it", path);
    *h = (ckpt_header){f, c, s, n, flags, crc};
    return 0;
}

int ckpt_peek(const char *path, model_config *c, train_state *st, uint64_t *n_params, int with_optimizer, char *err, size_t errlen) {
    ckpt_header h;
    if (read_header(path, with_optimizer, &h, err, errlen) != 0) return -1;
    fclose(h.f);
    *c = h.c, *st = h.s, *n_params = h.n;
    return 0;
}

// Reads n floats from f into a small buffer at a time, only to add them to
// *crc (the optimiser moments an evaluation does not use): 1 when all were there.
static int crc_skip(FILE *f, uint64_t n, uint32_t *crc) {
    unsigned char buf[1 << 16];
    for (uint64_t left = n * sizeof(float); left > 0;) {
        size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
        if (fread(buf, 1, want, f) != want) return 0;
        *crc = crc32_update(*crc, buf, want);
        left -= want;
    }
    return 1;
}

int ckpt_load(const char *path, const pe_setting *extra, int n_extra, model_t *m, train_state *st, int with_optimizer,
              char *err, size_t errlen) {
    ckpt_header h;
    if (read_header(path, with_optimizer, &h, err, errlen) != 0) return -1;
    FILE *f = h.f;
    model_config c = h.c;
    uint64_t n = h.n;
    uint32_t flags = h.flags, crc = h.crc;
    size_t per_tensor_bytes = sizeof(float) * n;
    for (int i = 0; i < n_extra; i++) config_set(&c, extra[i].name, extra[i].value);
    if (n_extra && !model_config_check(&c, err, errlen)) {
        fclose(f);
        return -2;
    }
    model_create(m, &c);
    float *bufs[3] = {m->params, m->m, m->v};
    int nb = (flags & 1) && with_optimizer ? 3 : 1;  // moments only for a run that trains on
    for (int i = 0; i < nb; i++) {
        if (fread(bufs[i], 1, per_tensor_bytes, f) != per_tensor_bytes) {
            model_free(m);
            return load_fail(f, err, errlen, "checkpoint '%s' is truncated", path);
        }
        crc = crc32_update(crc, bufs[i], per_tensor_bytes);
        floats_to_from_le(bufs[i], n);
    }
    if ((flags & 1) && nb == 1 && !crc_skip(f, 2 * n, &crc)) {
        model_free(m);
        return load_fail(f, err, errlen, "checkpoint '%s' is truncated", path);
    }
    unsigned char stored[4];
    if (fread(stored, 1, 4, f) != 4 || get_le(stored, 4) != crc) {
        model_free(m);
        return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: checksum mismatch (the file was damaged or changed)", path);
    }
    // A file can carry a valid checksum over values no run produces.
    static const char *const what[3] = {"weights", "first moments", "second moments"};
    for (int i = 0; i < nb; i++) {
        size_t bad = n;
        for (size_t k = 0; k < n && bad == n; k++)
            if (!isfinite(bufs[i][k]) || (i == 2 && bufs[i][k] < 0.0f)) bad = k;
        if (bad < n) {
            model_free(m);
            return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: its %s hold %s at index %zu", path, what[i],
                             i == 2 ? "a negative or non-finite value" : "a non-finite value", bad);
        }
    }
    fclose(f);
    *st = h.s;
    return 0;
}
