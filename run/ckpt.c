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
#define V2_TEXT_MAX (64 << 20)  // a guard against a corrupt length; a long curve stays far below

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

// The encodings' options that define the model (not the evaluation-only
// ones, but for an extension a fine-tune trained with).
static void encode_pe_options(text_buf *t, const model_t *m) {
    const model_config *c = &m->cfg;
    for (int i = 0; i < c->n_settings; i++) {
        const pe_option *o = NULL;
        for (int k = 0; k < PE_SLOTS && !o; k++) o = pe_option_find(m->pe[k].ops, c->settings[i].name, NULL);
        if (!o || (o->eval_only && !(o->tunes && c->base_ctx > 0))) continue;
        if (c->settings[i].n_list) {
            char buf[PE_FORMAT_MAX];
            config_format_list(c->settings[i].list, c->settings[i].n_list, buf, sizeof buf);
            text_add(t, "opt.%s=%s\n", c->settings[i].name, buf);
        } else
            text_add(t, "opt.%s=%.17g\n", c->settings[i].name, c->settings[i].value);
    }
}

// Every row of the schema with a key, in the schema's order.
static void encode_settings(text_buf *t, const model_t *m, const options *o, const run_state *st) {
    for (int i = 0; i < settings_count; i++) {
        const setting *s = &settings_schema[i];
        if (s->type == SET_PE_OPTIONS) encode_pe_options(t, m);
        if (!s->key || ((s->flags & SET_KEY_OPTIONAL) && setting_at_default(s, o, st))) continue;
        const void *f = (s->flags & SET_STATE) ? (const char *)st + s->field : (const char *)o + s->field;
        switch (s->type) {
        case SET_INT: text_add(t, "%s=%ld\n", s->key, *(const long *)f); break;
        case SET_U64: text_add(t, "%s=%" PRIu64 "\n", s->key, *(const uint64_t *)f); break;
        case SET_REAL: text_add(t, "%s=%.9g\n", s->key, *(const float *)f); break;
        case SET_CHOICE: text_add(t, "%s=%s\n", s->key, s->choices[*(const int *)f]); break;
        case SET_TEXT: text_add_escaped(t, s->key, *(const char *const *)f); break;
        default: break;
        }
    }
    // The learning curve so far, one line per point: step, training loss,
    // validation loss, order accuracy, task accuracy (the last two -1 when
    // they do not apply; a loss not measured is nan).
    for (int i = 0; i < st->n_curve; i++) {
        const curve_point *c = &st->curve[i];
        text_add(t, "curve=%ld %.17g %.17g %.17g %.17g\n", c->step, c->train_loss, c->val_loss, c->order_acc,
                 c->task_acc);
    }
}

// A "curve" line's value into the next point of st's curve; 0 when malformed.
static int decode_curve_point(const char *val, run_state *st) {
    curve_point c;
    char *end;
    errno = 0;
    c.step = strtol(val, &end, 10);
    double *v[4] = {&c.train_loss, &c.val_loss, &c.order_acc, &c.task_acc};
    for (int k = 0; k < 4; k++) {
        if (errno || *end != ' ') return 0;
        const char *p = end + 1;
        *v[k] = strtod(p, &end);
        if (end == p) return 0;
    }
    long last = st->n_curve ? st->curve[st->n_curve - 1].step : 0;
    if (errno || *end || c.step <= last || c.step > st->step || isinf(c.train_loss) || isinf(c.val_loss) ||
        !(c.order_acc >= -1 && c.order_acc <= 1) || !(c.task_acc >= -1 && c.task_acc <= 1))
        return 0;
    st->curve[st->n_curve++] = c;  // decode_settings made room for every curve line
    return 1;
}

// A settings value with its escapes undone (backslash-n, backslash-backslash)
// into out; 0 when an escape is not one of those.
static int unescape(const char *val, char *out, size_t cap) {
    size_t o = 0;
    // An escape is a backslash and one more byte; a lone backslash at the
    // end stops the loop before it steps past the terminator.
    for (const char *p = val; *p; p++) {
        char ch = *p;
        if (ch == '\\') {
            p++;
            ch = *p == 'n' ? '\n' : *p == '\\' ? '\\' : 0;
        }
        if (ch == 0 || o + 1 >= cap) return 0;
        out[o++] = ch;
    }
    out[o] = '\0';
    return 1;
}

// An encoding's option from its settings line into c: a number, or a list
// in brackets; 0 when it is neither, or repeated.
static int decode_pe_option(model_config *c, const char *name, const char *val) {
    if (config_setting(c, name)) return 0;
    if (*val == '[') {
        float v[PE_MAX_LIST];
        int n = config_parse_list(val, v, PE_MAX_LIST);
        return n > 0 && config_set_list(c, name, v, n);
    }
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    return !errno && end != val && !*end && isfinite(v) && config_set(c, name, v);
}

// The lines of a settings text (checked to end in a newline) into o and st;
// 0 with the offending line in err.
static int decode_settings_lines(char *text, size_t n, options *o, run_state *st, char *err, size_t errlen) {
    unsigned char seen[sizeof o->given] = {0};
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
        if (strcmp(key, "curve") == 0) {  // after "step" (the schema's order): a point before it is past step 0, refused
            if (!decode_curve_point(val, st)) {
                snprintf(err, errlen, "bad curve point '%.80s'", val);
                return 0;
            }
            continue;
        }
        if (strncmp(key, "opt.", 4) == 0) {  // an encoding's option: the encodings check it with the model
            if (!decode_pe_option(&o->pe_opts, key + 4, val)) {
                snprintf(err, errlen, "bad option setting '%.40s=%.40s'", key, val);
                return 0;
            }
            continue;
        }
        int k = 0;
        while (k < settings_count && !(settings_schema[k].key && strcmp(settings_schema[k].key, key) == 0)) k++;
        if (k == settings_count || seen[k]) {
            snprintf(err, errlen, "%s settings key '%.40s'", k == settings_count ? "unknown" : "repeated", key);
            return 0;
        }
        seen[k] = o->given[k] = 1;  // given: the file holds it (settings_adopt reads it of SET_KEY_ADDED rows)
        const setting *s = &settings_schema[k];
        char plain[CKPT_PATH_MAX + 1];
        if (s->type == SET_TEXT && !unescape(val, plain, sizeof plain)) {
            snprintf(err, errlen, "bad settings value '%.40s=%.60s'", key, val);
            return 0;
        }
        if (!setting_parse(s, s->type == SET_TEXT ? plain : val, o, st, err, errlen)) return 0;
    }
    for (int k = 0; k < settings_count; k++)
        if (settings_schema[k].key && !(settings_schema[k].flags & (SET_KEY_OPTIONAL | SET_KEY_ADDED)) && !seen[k]) {
            snprintf(err, errlen, "its settings lack '%s'", settings_schema[k].key);
            return 0;
        }
    if (st->step > o->steps) {
        snprintf(err, errlen, "its step (%ld) is past the end of its schedule (steps=%ld)", st->step, o->steps);
        return 0;
    }
    st->data_known = 1;
    return 1;
}

// Fills o and st from the settings text, each value parsed by its row of the
// schema (its type and range); 0 with the offending line in err (and st
// owning nothing).
static int decode_settings(char *text, size_t n, options *o, run_state *st, char *err, size_t errlen) {
    options_defaults(o);
    memset(st, 0, sizeof *st);
    if (n == 0 || text[n - 1] != '\n' || memchr(text, '\0', n)) {
        snprintf(err, errlen, "its settings text is malformed");
        return 0;
    }
    size_t points = strncmp(text, "curve=", 6) == 0;
    for (const char *p = text; (p = memchr(p, '\n', (size_t)(text + n - p))) && p + 1 < text + n; p++)
        points += strncmp(p + 1, "curve=", 6) == 0;
    if (points) st->curve = xmalloc(sizeof *st->curve * points);
    if (decode_settings_lines(text, n, o, st, err, errlen)) return 1;
    run_state_release(st);
    return 0;
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

int ckpt_save(const char *path, const model_t *m, const options *o, const run_state *st, int with_optimizer, char *err,
              size_t errlen) {
    atomic_file af;
    if (atomic_open(&af, path, "checkpoint", err, errlen) != 0) return -1;
    text_buf text = {xmalloc(1024), 0, 1024};
    encode_settings(&text, m, o, st);
    if (text.n > V2_TEXT_MAX) {  // a learning curve of about 600,000 points
        free(text.p);
        atomic_abort(&af);
        snprintf(err, errlen, "cannot write checkpoint '%s': its settings and learning curve take %zu bytes, more than "
                 "the %d a checkpoint holds (a larger --eval-every keeps fewer points; the previous file is unchanged)",
                 path, text.n, V2_TEXT_MAX);
        return -1;
    }
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

static int vload_fail(FILE *f, run_state *s, char *err, size_t errlen, const char *fmt, va_list ap) {
    vsnprintf(err, errlen, fmt, ap);
    if (s) run_state_release(s);
    if (f) fclose(f);
    return -1;
}

static int load_fail(FILE *f, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vload_fail(f, NULL, err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

// A load failure once the settings are read: also frees what the state owns.
static int header_fail(FILE *f, run_state *s, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int header_fail(FILE *f, run_state *s, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vload_fail(f, s, err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

// Version 1's option fields, by the option names that replaced them, as
// settings lines: a v1 model gets a line for each option its encodings take.
static void v1_option_lines(text_buf *t, const char *pe, const int32_t *ints, const float *fl) {
    const struct {
        const char *name;
        double value;
        int unset_if_zero;
    } v1[] = {{"sin-base", fl[0], 0}, {"sin-scale", fl[1], 0}, {"rope-base", fl[2], 0},
              {"rel-clip", ints[6], 1}, {"t5-buckets", ints[7], 0}, {"t5-max-distance", ints[8], 0}};
    const pe_ops *abs, *rel;
    char err[256];
    if (!pe_parse_spec(pe, &abs, &rel, err, sizeof err)) return;  // model_config_check reports it
    for (size_t i = 0; i < sizeof v1 / sizeof v1[0]; i++) {
        if (v1[i].unset_if_zero && v1[i].value == 0) continue;
        if (pe_option_find(abs, v1[i].name, NULL) || pe_option_find(rel, v1[i].name, NULL))
            text_add(t, "opt.%s=%.17g\n", v1[i].name, v1[i].value);
    }
}

// A version 1 header's fixed fields (after magic, version, flags) as the
// settings text a version 2 file would hold, so that both versions' values
// go through one parser with the same ranges and rules (decode_settings):
// a v1 file with lr -1, a causal flag of 2 or a step past its steps is as
// corrupt as a v2 file saying so. v1 has no data identity: data_size and
// data_crc32 are written as 0 and the caller forgets them (data_known).
static char *v1_settings_text(const unsigned char *r, uint64_t *n, size_t *len) {
    int32_t ints[9];
    for (int i = 0; i < 9; i++, r += 4) ints[i] = (int32_t)get_le(r, 4);
    float fl[3];
    for (int i = 0; i < 3; i++, r += 4) fl[i] = get_le_float(r);
    char pe[33], data[513];
    memcpy(pe, r, 32), pe[32] = '\0', r += 32;
    text_buf t = {0};
    text_add_escaped(&t, "pe", pe);
    if (ints[5] == 0 || ints[5] == 1) text_add(&t, "attn=%s\n", ints[5] ? "causal" : "bidir");
    else text_add(&t, "attn=%d\n", (int)ints[5]);  // refused by the parser, naming it
    text_add(&t, "vocab=%d\nctx=%d\nd_model=%d\nlayers=%d\nheads=%d\n", (int)ints[0], (int)ints[1], (int)ints[2],
             (int)ints[3], (int)ints[4]);
    v1_option_lines(&t, pe, ints, fl);
    text_add(&t, "step=%lld\n", (long long)get_le(r, 8)), r += 8;
    text_add(&t, "steps=%lld\n", (long long)get_le(r, 8)), r += 8;
    text_add(&t, "batch=%d\n", (int)(int32_t)get_le(r, 4)), r += 4;
    text_add(&t, "warmup=%d\n", (int)(int32_t)get_le(r, 4)), r += 4;
    text_add(&t, "lr=%.9g\n", get_le_float(r)), r += 4;
    text_add(&t, "wd=%.9g\n", get_le_float(r)), r += 4;
    text_add(&t, "clip=%.9g\n", get_le_float(r)), r += 4;
    text_add(&t, "seed=%lld\n", (long long)get_le(r, 8)), r += 8;
    text_add(&t, "data_rng=%llu\n", (unsigned long long)get_le(r, 8)), r += 8;
    memcpy(data, r, 512), data[512] = '\0', r += 512;
    text_add_escaped(&t, "data", data);
    text_add(&t, "data_size=0\ndata_crc32=0\n");
    *n = get_le(r, 8);
    *len = t.n;
    return t.p;
}

// What the header of a checkpoint says, once read and checked against the
// file's size: the file stays open at the first weight.
typedef struct {
    FILE *f;
    options o;
    run_state s;
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
    options *o = &h->o;
    run_state s;
    uint64_t n;
    size_t text_len = 0;
    if (version == 1) {
        char why[256], *text = v1_settings_text(head + 16, &n, &text_len);
        int ok = decode_settings(text, text_len, o, &s, why, sizeof why);
        free(text);
        text_len = 0;  // not in the file: the fixed part was all
        if (!ok) return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: %s", path, why);
        s.data_known = 0;
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
        int ok = decode_settings(text, text_len, o, &s, why, sizeof why);
        free(text);
        if (!ok) return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: %s", path, why);
    }
    char cerr[256] = "";
    model_config c = settings_model_config(o, &s);
    if (!model_config_check(&c, cerr, sizeof cerr))
        return header_fail(f, &s, err, errlen, "checkpoint '%s' is corrupt: its config is invalid (%s)", path, cerr);
    if ((flags & ~1u) || n == 0 || n > ((uint64_t)1 << 36) || s.step < 0 || o->steps < 0 || o->batch < 1 || o->warmup < 0)
        return header_fail(f, &s, err, errlen, "checkpoint '%s' is corrupt: bad flags, counts or training state", path);
    // The file size the header implies, checked before anything large is allocated.
    size_t per_tensor_bytes = sizeof(float) * n;
    uint64_t expect = (uint64_t)fixed + text_len + (uint64_t)per_tensor_bytes * ((flags & 1) ? 3 : 1) + 4;
    if ((uint64_t)sb.st_size != expect)
        return header_fail(f, &s, err, errlen, "checkpoint '%s' is %s: %lld bytes, expected %llu for %llu parameters", path,
                         (uint64_t)sb.st_size < expect ? "truncated" : "corrupt (trailing bytes)",
                         (long long)sb.st_size, (unsigned long long)expect, (unsigned long long)n);
    if (model_param_count(&c) != n)
        return header_fail(f, &s, err, errlen, "checkpoint '%s' is corrupt: %llu parameters, but its config implies %zu", path,
                         (unsigned long long)n, model_param_count(&c));
    if (with_optimizer && !(flags & 1))
        return header_fail(f, &s, err, errlen, "checkpoint '%s' holds no optimiser state, so it cannot be resumed; use --load to evaluate it", path);
    h->f = f, h->s = s, h->n = n, h->flags = flags, h->crc = crc;
    return 0;
}

int ckpt_peek(const char *path, options *file, run_state *st, uint64_t *n_params, int with_optimizer, char *err,
              size_t errlen) {
    ckpt_header h;
    if (read_header(path, with_optimizer, &h, err, errlen) != 0) return -1;
    fclose(h.f);
    run_state_release(&h.s);  // what loading will need does not depend on the curve
    options_copy(file, &h.o);
    *st = h.s, *n_params = h.n;
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

int ckpt_load(const char *path, const pe_setting *extra, int n_extra, model_t *m, options *file, run_state *st,
              int with_optimizer, char *err, size_t errlen) {
    ckpt_header h;
    if (read_header(path, with_optimizer, &h, err, errlen) != 0) return -1;
    FILE *f = h.f;
    model_config c = settings_model_config(&h.o, &h.s);
    uint64_t n = h.n;
    uint32_t flags = h.flags, crc = h.crc;
    size_t per_tensor_bytes = sizeof(float) * n;
    for (int i = 0; i < n_extra; i++) config_copy_setting(&c, &extra[i]);
    if (n_extra && !model_config_check(&c, err, errlen)) {
        run_state_release(&h.s);
        fclose(f);
        return -2;
    }
    model_create(m, &c);
    float *bufs[3] = {m->params, m->m, m->v};
    int nb = (flags & 1) && with_optimizer ? 3 : 1;  // moments only for a run that trains on
    for (int i = 0; i < nb; i++) {
        if (fread(bufs[i], 1, per_tensor_bytes, f) != per_tensor_bytes) {
            model_free(m);
            return header_fail(f, &h.s, err, errlen, "checkpoint '%s' is truncated", path);
        }
        crc = crc32_update(crc, bufs[i], per_tensor_bytes);
        floats_to_from_le(bufs[i], n);
    }
    if ((flags & 1) && nb == 1 && !crc_skip(f, 2 * n, &crc)) {
        model_free(m);
        return header_fail(f, &h.s, err, errlen, "checkpoint '%s' is truncated", path);
    }
    unsigned char stored[4];
    if (fread(stored, 1, 4, f) != 4 || get_le(stored, 4) != crc) {
        model_free(m);
        return header_fail(f, &h.s, err, errlen, "checkpoint '%s' is corrupt: checksum mismatch (the file was damaged or changed)", path);
    }
    // A file can carry a valid checksum over values no run produces.
    static const char *const what[3] = {"weights", "first moments", "second moments"};
    for (int i = 0; i < nb; i++) {
        size_t bad = n;
        for (size_t k = 0; k < n && bad == n; k++)
            if (!isfinite(bufs[i][k]) || (i == 2 && bufs[i][k] < 0.0f)) bad = k;
        if (bad < n) {
            model_free(m);
            return header_fail(f, &h.s, err, errlen, "checkpoint '%s' is corrupt: its %s hold %s at index %zu", path, what[i],
                             i == 2 ? "a negative or non-finite value" : "a non-finite value", bad);
        }
    }
    fclose(f);
    options_copy(file, &h.o);
    *st = h.s;
    return 0;
}
