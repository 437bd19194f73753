// data.c — opening a corpus, training batches, evaluation windows, and
// tokens <-> text (see data.h): the registry of corpus kinds (corpus.h) and
// the parts the file kinds share.
#include "corpus.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TEXT_MASK_RATE 0.15f
#define TEXT_VAL_FRACTION 0.10

// Every kind of corpus, corpus_NAME in NAME.c; a spec goes to the first that
// takes it (so the shard, which knows its magic, comes before bytes, which
// takes any file).
#define CORPUS_LIST(X) X(cats) X(task) X(shard) X(bytes)
#define DECLARE(k) extern const corpus_ops corpus_##k;
CORPUS_LIST(DECLARE)
#define ENTRY(k) &corpus_##k,
static const corpus_ops *const corpora[] = {CORPUS_LIST(ENTRY)};
#define N_CORPORA (int)(sizeof corpora / sizeof corpora[0])

int corpus_count(void) { return N_CORPORA; }
const corpus_ops *corpus_at(int i) { return corpora[i]; }

// A refusal: err filled, and the exit status it calls for (EXIT_USAGE for a
// bad value, EXIT_RUNTIME for a file that cannot be used).
static int refuse(int status, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int refuse(int status, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return status;
}

// The size of the file at path, which must be a regular file: 0, or a status.
static int text_file_size(const char *path, size_t *size, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) != 0)
        return refuse(EXIT_RUNTIME, err, errlen, "cannot open --data '%s': %s (give a text file, or 'cats' for the built-in corpus)",
                      path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return refuse(EXIT_RUNTIME, err, errlen, "--data '%s' is a directory; give a text file", path);
    // a FIFO or a device would block, or never end
    if (!S_ISREG(st.st_mode))
        return refuse(EXIT_RUNTIME, err, errlen, "--data '%s' is not a regular file (a FIFO, device or socket); give a text file", path);
    *size = (size_t)st.st_size;
    return 0;
}

static int read_text_file(data_t *d, const char *path, char *err, size_t errlen) {
    size_t size;
    int rc = text_file_size(path, &size, err, errlen);
    if (rc) return rc;
    FILE *f = fopen(path, "rb");
    if (!f) return refuse(EXIT_RUNTIME, err, errlen, "cannot open --data '%s': %s", path, strerror(errno));
    size_t cap = size > 0 ? size : 4096, n = 0;
    // d->bytes holds the buffer from the start, so that data_close frees it
    // whatever happens below
    unsigned char *buf = d->bytes = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                fclose(f);
                return refuse(EXIT_RUNTIME, err, errlen, "out of memory reading --data '%s'", path);
            }
            buf = d->bytes = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) return refuse(EXIT_RUNTIME, err, errlen, "error reading --data '%s': %s", path, strerror(errno));
    if (n == 0) return refuse(EXIT_RUNTIME, err, errlen, "--data '%s' is empty; give a text file with some content", path);
    d->bytes = buf;
    d->n = n;
    return 0;
}

// The kind that takes a spec that is no file, or NULL.
static const corpus_ops *built_in(const char *spec) {
    for (int i = 0; i < N_CORPORA; i++)
        if (!corpora[i]->file && corpora[i]->takes(spec, NULL, 0)) return corpora[i];
    return NULL;
}

int data_is_path(const char *spec) { return !built_in(spec); }

// The kind spec names, checked, and for a file its size: 0, or a status.
static int find_corpus(const char *spec, const corpus_ops **kind, size_t *bytes, char *err, size_t errlen) {
    *bytes = 0;
    const corpus_ops *k = built_in(spec);
    if (k) {
        if (k->check && !k->check(spec, err, errlen)) return EXIT_USAGE;
        *kind = k;
        return 0;
    }
    if (!spec[0]) return refuse(EXIT_USAGE, err, errlen, "--data is empty; give 'cats', 'task:NAME' or a path to a text file");
    int rc = text_file_size(spec, bytes, err, errlen);
    if (rc) return rc;
    unsigned char head[16] = {0};
    FILE *f = fopen(spec, "rb");
    if (!f) return refuse(EXIT_RUNTIME, err, errlen, "cannot open --data '%s': %s", spec, strerror(errno));
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    for (int i = 0; i < N_CORPORA; i++)
        if (corpora[i]->file && corpora[i]->takes(spec, head, got)) {
            *kind = corpora[i];
            return 0;
        }
    return refuse(EXIT_RUNTIME, err, errlen, "--data '%s': no kind of corpus takes this file", spec);
}

int data_describe(const char *spec, int causal, int *vocab, size_t *bytes, char *err, size_t errlen) {
    const corpus_ops *k;
    int rc = find_corpus(spec, &k, bytes, err, errlen);
    if (!rc) *vocab = k->vocab(causal);
    return rc;
}

int data_open(data_t *d, const char *spec, int causal, unsigned long long seed, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    d->causal = causal;
    d->seed = seed;
    d->rng.s = seed * 0x9E3779B97F4A7C15ull + 0x5151;
    size_t bytes;
    int rc = find_corpus(spec, &d->ops, &bytes, err, errlen);
    if (rc) return rc;
    d->vocab = d->ops->vocab(causal);
    if (d->ops->file) {
        d->path = xmalloc(strlen(spec) + 1);
        memcpy(d->path, spec, strlen(spec) + 1);
        if ((rc = read_text_file(d, spec, err, errlen))) return rc;
        d->crc = crc32_update(0, d->bytes, d->n);
    }
    if ((rc = d->ops->open(d, spec, err, errlen))) return rc;
    if (d->ops->file) d->n_train = d->n - (size_t)((double)d->n * TEXT_VAL_FRACTION);
    return 0;
}

void data_close(data_t *d) {
    free(d->bytes);
    free(d->path);
    free(d->words);
    free(d->word_at);
    memset(d, 0, sizeof *d);
}

int data_has(const data_t *d, unsigned cap) { return (d->ops->caps & cap) == cap; }

unsigned data_caps(const data_t *d) { return d->ops->caps; }

void data_identity(const data_t *d, uint64_t *size, uint32_t *crc) {
    *size = d->ops->file ? d->n : 0;
    *crc = d->crc;
}

int data_check_ctx(const data_t *d, int T, char *err, size_t errlen) { return d->ops->check_ctx(d, T, err, errlen); }

void data_next_batch(data_t *d, int B, int T, int *tokens, int *targets, int *seg) {
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * T;
        d->ops->row(d, &d->rng, T, tokens + o, targets + o, seg + o);
    }
}

size_t data_val_windows(const data_t *d, int L, size_t max_tokens, char *err, size_t errlen) {
    size_t want = max_tokens / (size_t)L;
    return d->ops->val_windows(d, L, want < 1 ? 1 : want, err, errlen);
}

void data_val_row(const data_t *d, int L, size_t w, int *tokens, int *targets, int *seg) {
    // Each window draws from its own stream, so the answer does not depend on
    // how windows are batched.
    rng_t r = {d->seed * 0xD1B54A32D192ED03ull + 0x3C6EF372FE94F82Aull + w * 0x9E3779B97F4A7C15ull};
    d->ops->val_row(d, &r, L, w, tokens, targets, seg);
}

int data_prompt_too_long(int max, char *err, size_t errlen) {
    snprintf(err, errlen, "--prompt has more than %d tokens", max);
    return -1;
}

int data_encode(const data_t *d, const char *text, int *out, int max, char *err, size_t errlen) {
    return d->ops->encode(d, text, out, max, err, errlen);
}

void data_decode(const data_t *d, int t, char *buf, size_t buflen) { d->ops->decode(d, t, buf, buflen); }

const char *data_default_prompt(const data_t *d) { return d->ops->default_prompt; }

int data_is_text(const data_t *d, int token) {
    if (token == d->mask_token) return 0;
    return !d->ops->is_text || d->ops->is_text(d, token);
}

int seq_token(const data_t *d, size_t i) {
    const unsigned char *p = d->bytes + d->tok_offset + (size_t)d->tok_bytes * i;
    return d->tok_bytes == 1 ? p[0] : p[0] | p[1] << 8;
}

int seq_check_ctx(const data_t *d, int T, char *err, size_t errlen) {
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
        int masked = rng_uniform(rng) < TEXT_MASK_RATE, x = seq_token(d, start + t);
        tokens[t] = masked ? d->mask_token : x;
        targets[t] = masked ? x : -1;
        any |= masked;
    }
    if (!any) {
        int t = (int)rng_below(rng, (uint32_t)T);
        tokens[t] = d->mask_token;
        targets[t] = seq_token(d, start + t);
    }
}

// The row that starts at token `start`.
static void seq_row_at(const data_t *d, rng_t *rng, size_t start, int T, int *tokens, int *targets, int *seg) {
    if (d->causal) {
        for (int t = 0; t < T; t++) {
            tokens[t] = seq_token(d, start + t);
            targets[t] = seq_token(d, start + t + 1);
        }
    } else {
        mask_row(d, rng, T, start, tokens, targets);
    }
    for (int t = 0; t < T; t++) seg[t] = 0;
}

void seq_row(const data_t *d, rng_t *rng, int T, int *tokens, int *targets, int *seg) {
    size_t span = d->n_train - (size_t)T;  // start offsets 0..span-1 leave room for T+1
    size_t start = (size_t)(rng_next(rng) % (span ? span : 1));
    seq_row_at(d, rng, start, T, tokens, targets, seg);
}

size_t seq_val_windows(const data_t *d, int L, size_t want, char *err, size_t errlen) {
    size_t nval = d->n - d->n_train;
    size_t have = nval > 0 ? (nval - 1) / (size_t)L : 0;
    if (have == 0) {
        snprintf(err, errlen, "the validation split of '%s' has %zu tokens, too short for one window of %d",
                 d->path, nval, L);
        return 0;
    }
    return want < have ? want : have;
}

void seq_val_row(const data_t *d, rng_t *rng, int L, size_t w, int *tokens, int *targets, int *seg) {
    seq_row_at(d, rng, d->n_train + w * (size_t)L, L, tokens, targets, seg);
}

static uint32_t tok_le32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

int data_load_tokenizer(data_t *d, const char *path, char *err, size_t errlen) {
    if (!data_has(d, CORPUS_GPT2))
        return refuse(EXIT_USAGE, err, errlen, "--tokenizer decodes GPT-2 token ids; --data %s is not an llm.c token shard",
                      d->path ? d->path : "(built in)");
    struct stat st;
    if (stat(path, &st) != 0) return refuse(EXIT_RUNTIME, err, errlen, "cannot open --tokenizer '%s': %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return refuse(EXIT_RUNTIME, err, errlen, "--tokenizer '%s' is not a regular file", path);
    size_t size = (size_t)st.st_size;
    FILE *f = fopen(path, "rb");
    if (!f) return refuse(EXIT_RUNTIME, err, errlen, "cannot open --tokenizer '%s': %s", path, strerror(errno));
    // The header is checked before the file is read whole, and the file's
    // size against the largest a GPT-2 tokenizer can be (each token at most
    // 255 bytes after its length byte): a large file of anything else is
    // refused without reading it.
    unsigned char head[12];
    size_t got = fread(head, 1, sizeof head, f);
    const char *bad = size < SHARD_HEADER_BYTES || got != sizeof head ? "is shorter than its header"
                      : tok_le32(head) != TOKENIZER_MAGIC ? "does not start with llm.c's tokenizer magic (20240328)"
                      : tok_le32(head + 4) != 1 && tok_le32(head + 4) != 2 ? "has a version other than 1 or 2"
                      : tok_le32(head + 8) != SHARD_VOCAB ? "is not for GPT-2's vocabulary of 50257 tokens"
                      : size > SHARD_HEADER_BYTES + (size_t)SHARD_VOCAB * 256 ? "is larger than a GPT-2 tokenizer can be"
                      : NULL;
    unsigned char *buf = NULL;
    if (!bad) {
        buf = xmalloc(size);
        memcpy(buf, head, sizeof head);
        if (fread(buf + sizeof head, 1, size - sizeof head, f) != size - sizeof head) bad = "could not be read whole";
    }
    fclose(f);
    uint32_t *at = NULL;
    size_t pos = SHARD_HEADER_BYTES, out = 0;
    if (!bad) {  // the entries, packed into buf's front (each is no longer than its length byte)
        at = xmalloc(sizeof(uint32_t) * (SHARD_VOCAB + 1));
        for (int t = 0; t < SHARD_VOCAB && !bad; t++) {
            size_t len = pos < size ? buf[pos] : 0;
            if (pos >= size || pos + 1 + len > size) bad = "is truncated inside its token list";
            else if (len == 0) bad = "has a token of length 0";
            else {
                at[t] = (uint32_t)out;
                memmove(buf + out, buf + pos + 1, len);
                out += len, pos += 1 + len;
            }
        }
        if (!bad && pos != size) bad = "has bytes after its last token";
        if (!bad) at[SHARD_VOCAB] = (uint32_t)out;
    }
    if (bad) {
        free(buf), free(at);
        return refuse(EXIT_RUNTIME, err, errlen, "--tokenizer '%s' %s; give the gpt2_tokenizer.bin llm.c writes", path, bad);
    }
    d->words = buf, d->word_at = at;
    return 0;
}

