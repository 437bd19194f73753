// data.c — opening a corpus, training batches, evaluation windows, and
// tokens <-> text. See data.h.
#include "data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cats_init_held_out(data_t *d);

#define TEXT_MASK_RATE 0.15f
#define TEXT_VAL_FRACTION 0.10

// The size of the file at path, which must be a regular file.
static size_t text_file_size(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0)
        die_runtime("cannot open --data '%s': %s (give a text file, or 'cats' for the built-in corpus)", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) die_runtime("--data '%s' is a directory; give a text file", path);
    // a FIFO or a device would block, or never end
    if (!S_ISREG(st.st_mode)) die_runtime("--data '%s' is not a regular file (a FIFO, device or socket); give a text file", path);
    return (size_t)st.st_size;
}

static void read_text_file(data_t *d, const char *path) {
    size_t size = text_file_size(path);
    FILE *f = fopen(path, "rb");
    if (!f) die_runtime("cannot open --data '%s': %s", path, strerror(errno));
    size_t cap = size > 0 ? size : 4096, n = 0;
    // d->bytes holds the buffer from the start, so that data_close frees it
    // whatever happens below
    unsigned char *buf = d->bytes = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) die_runtime("out of memory reading --data '%s'", path);
            buf = d->bytes = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) die_runtime("error reading --data '%s': %s", path, strerror(errno));
    fclose(f);
    if (n == 0) die_runtime("--data '%s' is empty; give a text file with some content", path);
    d->bytes = buf;
    d->n = n;
}

static uint32_t le32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

// Token i of a text file or a shard.
static int token_at(const data_t *d, size_t i) {
    if (d->kind == DATA_TEXT) return d->bytes[i];
    const unsigned char *p = d->bytes + SHARD_HEADER_BYTES + 2 * i;
    return p[0] | p[1] << 8;
}

// A file that starts with the magic is an llm.c shard: its header must say
// version 1 and a token count that the file holds exactly, and every token
// must be a GPT-2 token. A file named *.bin without the magic is refused
// rather than read as text.
static int open_shard(data_t *d, const char *path, size_t size) {
    int magic = size >= 4 && le32(d->bytes) == SHARD_MAGIC;
    size_t len = strlen(path);
    if (!magic) {
        if (len >= 4 && !strcmp(path + len - 4, ".bin"))
            die_runtime("--data '%s' is named .bin but is not an llm.c token shard (its first 4 bytes are not the magic "
                        "%d); give a shard written by llm.c's dev/data scripts, or a text file", path, SHARD_MAGIC);
        return 0;
    }
    if (size < SHARD_HEADER_BYTES)
        die_runtime("--data '%s': an llm.c shard truncated inside its %d-byte header (%zu bytes)", path, SHARD_HEADER_BYTES, size);
    uint32_t version = le32(d->bytes + 4), count = le32(d->bytes + 8);
    if (version != 1)
        die_runtime("--data '%s': llm.c shard version %u; pelab reads version 1 (uint16 GPT-2 tokens)", path, (unsigned)version);
    if (size != SHARD_HEADER_BYTES + 2 * (size_t)count)
        die_runtime("--data '%s': the header says %u tokens (%zu bytes in all) but the file has %zu bytes; it is %s",
                    path, (unsigned)count, SHARD_HEADER_BYTES + 2 * (size_t)count, size,
                    size < SHARD_HEADER_BYTES + 2 * (size_t)count ? "truncated" : "longer than its header says");
    if (count == 0) die_runtime("--data '%s': the shard holds no tokens", path);
    d->kind = DATA_SHARD;
    d->n = count;
    for (size_t i = 0; i < d->n; i++)
        if (token_at(d, i) >= SHARD_VOCAB)
            die_runtime("--data '%s': token %d at position %zu is not a GPT-2 token (vocabulary %d)", path, token_at(d, i), i, SHARD_VOCAB);
    return 1;
}

void data_describe(const char *spec, int causal, int *vocab, size_t *bytes) {
    *bytes = 0;
    if (strcmp(spec, "cats") == 0) {
        *vocab = cats_vocab_size();
        return;
    }
    if (strncmp(spec, "task:", 5) == 0) {
        if (task_find(spec + 5) < 0) die_usage("--data '%s': no such task; the tasks are %s", spec, task_names());
        *vocab = TT_VOCAB;
        return;
    }
    if (!spec[0]) die_usage("--data is empty; give 'cats', 'task:NAME' or a path to a text file");
    *bytes = text_file_size(spec);
    unsigned char head[4] = {0};
    FILE *f = fopen(spec, "rb");
    if (!f) die_runtime("cannot open --data '%s': %s", spec, strerror(errno));
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    int shard = got == sizeof head && le32(head) == SHARD_MAGIC;
    *vocab = (shard ? SHARD_VOCAB : 256) + !causal;  // plus [MASK] for the masked objective
}

void data_open(data_t *d, const char *spec, int causal, unsigned long long seed) {
    memset(d, 0, sizeof *d);
    d->causal = causal;
    d->seed = seed;
    d->rng.s = seed * 0x9E3779B97F4A7C15ull + 0x5151;
    size_t bytes;
    data_describe(spec, causal, &d->vocab, &bytes);  // checks the spec
    if (strcmp(spec, "cats") == 0) {
        d->kind = DATA_CATS;
        d->mask_token = 1;
        cats_init_held_out(d);
        return;
    }
    if (strncmp(spec, "task:", 5) == 0) {
        d->kind = DATA_TASK;
        d->task = task_find(spec + 5);
        d->mask_token = TT_MASK;  // [MASK] is in the vocabulary in both modes
        char err[256];
        if (!data_task_sizes(d, "1:16", NULL, err, sizeof err)) die_usage("%s", err);
        return;
    }
    d->kind = DATA_TEXT;
    d->path = xmalloc(strlen(spec) + 1);
    memcpy(d->path, spec, strlen(spec) + 1);
    read_text_file(d, spec);
    size_t size = d->n;
    d->crc = crc32_update(0, d->bytes, size);
    int vocab = open_shard(d, spec, size) ? SHARD_VOCAB : 256;
    d->n_train = d->n - (size_t)((double)d->n * TEXT_VAL_FRACTION);
    d->vocab = causal ? vocab : vocab + 1;  // plus [MASK] for the masked objective
    d->mask_token = vocab;
}

void data_close(data_t *d) {
    free(d->bytes);
    free(d->path);
    memset(d, 0, sizeof *d);
}

int data_task_sizes(data_t *d, const char *train, const char *tests, char *err, size_t errlen) {
    char e[160], buf[512];
    if (!task_parse_range(train, &d->train_len, e, sizeof e)) return snprintf(err, errlen, "--task-len %s", e), 0;
    int hi = d->train_len.hi;
    if (!tests) {
        if (hi >= TASK_MAX_SIZE)  // no unseen size is left for the default test ranges; nobody gave --test-len
            return snprintf(err, errlen, "--task-len %d:%d leaves no larger size to test on (sizes go up to %d): give "
                            "a smaller --task-len, or --test-len with sizes it does not cover", d->train_len.lo, hi,
                            TASK_MAX_SIZE), 0;
        snprintf(buf, sizeof buf, "%d:%d,%d:%d", hi + 1, 2 * hi, 2 * hi + 1, 4 * hi);
        if (4 * hi > TASK_MAX_SIZE) snprintf(buf, sizeof buf, "%d:%d", hi + 1, TASK_MAX_SIZE);
        tests = buf;
    }
    d->n_tests = 0;
    if (!*tests) return snprintf(err, errlen, "--test-len is empty: give size ranges A:B,C:D,…"), 0;
    for (const char *p = tests; *p;) {
        size_t len = strcspn(p, ",");
        char one[64];
        if (len == 0 || len >= sizeof one) return snprintf(err, errlen, "--test-len '%s': expected A:B,C:D,…", tests), 0;
        if (d->n_tests == TASK_MAX_TESTS) return snprintf(err, errlen, "--test-len: at most %d ranges", TASK_MAX_TESTS), 0;
        memcpy(one, p, len), one[len] = 0;
        task_range *r = &d->tests[d->n_tests++];
        if (!task_parse_range(one, r, e, sizeof e)) return snprintf(err, errlen, "--test-len %s", e), 0;
        if (r->lo <= d->train_len.hi && r->hi >= d->train_len.lo)
            return snprintf(err, errlen, "--test-len %d:%d overlaps the training sizes %d:%d; test sizes must be unseen",
                            r->lo, r->hi, d->train_len.lo, d->train_len.hi), 0;
        p += len;
        if (*p == ',' && !*++p) return snprintf(err, errlen, "--test-len '%s': expected A:B,C:D,…", tests), 0;
    }
    snprintf(buf, sizeof buf, "task:%s %d:%d", task_name(d->task), d->train_len.lo, d->train_len.hi);
    d->crc = crc32_update(0, buf, strlen(buf));
    return 1;
}

void data_identity(const data_t *d, uint64_t *size, uint32_t *crc) {
    *size = d->kind == DATA_TEXT || d->kind == DATA_SHARD ? d->n : 0;
    *crc = d->kind == DATA_CATS ? 0 : d->crc;
}

int data_check_ctx(const data_t *d, int T, char *err, size_t errlen) {
    if (d->kind == DATA_TASK) {
        int need = task_len(d->task, d->train_len.hi);
        if (T < need) {
            snprintf(err, errlen, "--ctx %d is shorter than a %s instance of size %d (%d tokens); use --ctx %d or more, or "
                     "leave --ctx out (it then fits the longest training instance)", T, task_name(d->task), d->train_len.hi, need, need);
            return 0;
        }
        return 1;
    }
    if (d->kind == DATA_CATS) {
        if (T < CATS_MAX_EXAMPLE + 1) {
            snprintf(err, errlen, "--ctx %d is shorter than one cats example and its answer (%d tokens); use --ctx %d or more",
                     T, CATS_MAX_EXAMPLE + 1, CATS_MAX_EXAMPLE + 1);
            return 0;
        }
        return 1;
    }
    if (d->n_train < (size_t)T + 1) {
        snprintf(err, errlen, "--data '%s': the training split has %zu tokens, too short for --ctx %d (needs %d); use a longer file or a smaller --ctx",
                 d->path, d->n_train, T, T + 1);
        return 0;
    }
    return 1;
}

// Replaces TEXT_MASK_RATE of a row's positions by [MASK] (at least one); only
// those carry a target.
static void mask_row(const data_t *d, rng_t *rng, int T, size_t start, int *tokens, int *targets) {
    int any = 0;
    for (int t = 0; t < T; t++) {
        int masked = rng_uniform(rng) < TEXT_MASK_RATE, x = token_at(d, start + t);
        tokens[t] = masked ? d->mask_token : x;
        targets[t] = masked ? x : -1;
        any |= masked;
    }
    if (!any) {
        int t = (int)rng_below(rng, (uint32_t)T);
        tokens[t] = d->mask_token;
        targets[t] = token_at(d, start + t);
    }
}

// The row of a text file or a shard that starts at token `start`.
static void text_row(const data_t *d, rng_t *rng, size_t start, int T, int *tokens, int *targets, int *seg) {
    if (d->causal) {
        for (int t = 0; t < T; t++) {
            tokens[t] = token_at(d, start + t);
            targets[t] = token_at(d, start + t + 1);
        }
    } else {
        mask_row(d, rng, T, start, tokens, targets);
    }
    for (int t = 0; t < T; t++) seg[t] = 0;
}

void data_task_row(const data_t *d, rng_t *rng, task_range r, int T, int *tokens, int *targets, int *seg) {
    int inst[4 * TASK_MAX_SIZE + 8];
    unsigned char answer[4 * TASK_MAX_SIZE + 8];
    int n = r.lo + (int)rng_below(rng, (uint32_t)(r.hi - r.lo + 1));
    int len = task_make(d->task, n, rng, inst, answer);
    for (int t = 0; t < T; t++) {
        int in = t < len;
        tokens[t] = in ? inst[t] : TT_PAD;
        targets[t] = -1;
        seg[t] = in ? 0 : -1 - t;  // each pad alone: the instance never sees one
        if (!in) continue;
        if (d->causal) {  // answer token t + 1 is predicted at t
            if (t + 1 < len && answer[t + 1]) targets[t] = inst[t + 1];
        } else if (answer[t]) {  // every answer token masked at once
            tokens[t] = TT_MASK;
            targets[t] = inst[t];
        }
    }
}

void data_next_batch(data_t *d, int B, int T, int *tokens, int *targets, int *seg) {
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * T;
        if (d->kind == DATA_CATS) {
            cats_fill_row(d, &d->rng, T, tokens + o, targets + o, seg + o);
        } else if (d->kind == DATA_TASK) {
            data_task_row(d, &d->rng, d->train_len, T, tokens + o, targets + o, seg + o);
        } else {
            size_t span = d->n_train - (size_t)T;  // start offsets 0..span-1 leave room for T+1
            size_t start = (size_t)(rng_next(&d->rng) % (span ? span : 1));
            text_row(d, &d->rng, start, T, tokens + o, targets + o, seg + o);
        }
    }
}

size_t data_eval_windows(const data_t *d, int L, size_t max_tokens, char *err, size_t errlen) {
    size_t want = max_tokens / (size_t)L;
    if (want < 1) want = 1;
    if (d->kind == DATA_CATS) return want;
    if (d->kind == DATA_TASK) {
        if (L < task_len(d->task, d->train_len.hi)) {
            snprintf(err, errlen, "ctx=%d is shorter than the longest training instance (%d tokens); the task's loss is "
                     "measured on training-size instances", L, task_len(d->task, d->train_len.hi));
            return 0;
        }
        return want;
    }
    size_t nval = d->n - d->n_train;
    size_t have = nval > 0 ? (nval - 1) / (size_t)L : 0;
    if (have == 0) {
        snprintf(err, errlen, "the validation split of '%s' has %zu tokens, too short for one window of %d",
                 d->path, nval, L);
        return 0;
    }
    return want < have ? want : have;
}

void data_eval_row(const data_t *d, int L, size_t w, int *tokens, int *targets, int *seg) {
    // Each window draws from its own stream, so the answer does not depend on
    // how windows are batched.
    rng_t r = {d->seed * 0xD1B54A32D192ED03ull + 0x3C6EF372FE94F82Aull + w * 0x9E3779B97F4A7C15ull};
    if (d->kind == DATA_CATS) {
        cats_fill_row(d, &r, L, tokens, targets, seg);
        return;
    }
    if (d->kind == DATA_TASK) {
        data_task_row(d, &r, d->train_len, L, tokens, targets, seg);
        return;
    }
    text_row(d, &r, d->n_train + w * (size_t)L, L, tokens, targets, seg);
}

int data_encode(const data_t *d, const char *text, int *out, int max, char *err, size_t errlen) {
    int n = 0;
    const char *too_long = "--prompt has more than %d tokens";
    if (d->kind == DATA_TASK) {
        for (const char *p = text; *p; p++) {
            if (*p == ' ') continue;
            int t = task_token_of_char(*p);
            if (t < 0 || t == TT_MASK) return snprintf(err, errlen, "--prompt '%c' is not a task token (0-9 | . + ? * w i r _)", *p), -1;
            if (n == max) return snprintf(err, errlen, too_long, max), -1;
            out[n++] = t;
        }
        return n;
    }
    if (d->kind == DATA_SHARD) {  // no tokenizer here: token ids, separated by spaces
        for (const char *p = text;;) {
            p += strspn(p, " \t\n,");
            if (!*p) return n;
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0 || v >= SHARD_VOCAB || (*end && !strchr(" \t\n,", *end)))
                return snprintf(err, errlen, "--prompt on a token shard is GPT-2 token ids separated by spaces (0 to %d), not '%.20s'",
                                SHARD_VOCAB - 1, p), -1;
            if (n == max) return snprintf(err, errlen, too_long, max), -1;
            out[n++] = (int)v;
            p = end;
        }
    }
    if (d->kind == DATA_TEXT) {
        for (const char *p = text; *p; p++) {
            if (n == max) return snprintf(err, errlen, too_long, max), -1;
            out[n++] = (unsigned char)*p;
        }
        return n;
    }
    for (const char *p = text;;) {  // words separated by white space
        p += strspn(p, " \t\n");
        size_t len = strcspn(p, " \t\n");
        if (!len) break;
        int tok = -1;
        for (int t = 0; t < d->vocab && tok < 0; t++)
            if (strlen(cats_word(t)) == len && strncmp(cats_word(t), p, len) == 0 && data_is_text(d, t)) tok = t;
        if (tok < 0) {
            snprintf(err, errlen, "--prompt word '%.*s' is not in the cats vocabulary (words like: the cat chases dog . who is chased ?)",
                     len > 60 ? 60 : (int)len, p);
            return -1;
        }
        if (n == max) return snprintf(err, errlen, too_long, max), -1;
        out[n++] = tok;
        p += len;
    }
    return n;
}

void data_decode(const data_t *d, int t, char *buf, size_t buflen) {
    if (d->kind == DATA_CATS) {
        snprintf(buf, buflen, "%s ", cats_word(t));
    } else if (d->kind == DATA_TASK) {
        snprintf(buf, buflen, "%c", task_token_char(t));
    } else if (d->kind == DATA_SHARD) {
        snprintf(buf, buflen, "%d ", t);
    } else if (t == d->mask_token) {
        snprintf(buf, buflen, "<mask>");
    } else {
        snprintf(buf, buflen, "%c", (char)t);
    }
}

const char *data_default_prompt(const data_t *d) {
    switch (d->kind) {
    case DATA_CATS: return "the";
    case DATA_SHARD: return "50256";
    case DATA_TASK: return NULL;
    default: return "\n";
    }
}

int data_is_text(const data_t *d, int token) {
    if (token == d->mask_token) return 0;
    if (d->kind == DATA_TASK) return token != TT_PAD;
    return d->kind != DATA_CATS || token != cats_pad_token();
}
