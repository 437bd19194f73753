// shard.c — llm.c's token shards (dev/data/*.bin) as a corpus: 256 int32 of
// header (magic, version 1, token count), then uint16 GPT-2 tokens; the last
// tenth for validation. A prompt is token ids; samples print as ids, or as
// text with llm.c's tokenizer file (--tokenizer, data_load_tokenizer).
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

static uint32_t le32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static int shard_takes(const char *spec, const unsigned char *head, size_t got) {
    (void)spec;
    return got >= 4 && le32(head) == SHARD_MAGIC;
}

static int shard_vocab(int causal) { return SHARD_VOCAB + !causal; }

// The header must say version 1 and a token count that the file holds
// exactly, and every token must be a GPT-2 token.
static int shard_open(data_t *d, const char *path, char *err, size_t errlen) {
    size_t size = d->n;
    if (size < SHARD_HEADER_BYTES)
        return snprintf(err, errlen, "--data '%s': an llm.c shard truncated inside its %d-byte header (%zu bytes)", path,
                        SHARD_HEADER_BYTES, size), EXIT_RUNTIME;
    uint32_t version = le32(d->bytes + 4), count = le32(d->bytes + 8);
    if (version != 1)
        return snprintf(err, errlen, "--data '%s': llm.c shard version %u; pelab reads version 1 (uint16 GPT-2 tokens)", path,
                        (unsigned)version), EXIT_RUNTIME;
    if (size != SHARD_HEADER_BYTES + 2 * (size_t)count)
        return snprintf(err, errlen, "--data '%s': the header says %u tokens (%zu bytes in all) but the file has %zu bytes; it is %s",
                        path, (unsigned)count, SHARD_HEADER_BYTES + 2 * (size_t)count, size,
                        size < SHARD_HEADER_BYTES + 2 * (size_t)count ? "truncated" : "longer than its header says"), EXIT_RUNTIME;
    if (count == 0) return snprintf(err, errlen, "--data '%s': the shard holds no tokens", path), EXIT_RUNTIME;
    d->n = count;
    d->tok_offset = SHARD_HEADER_BYTES, d->tok_bytes = 2;
    d->mask_token = SHARD_VOCAB;
    for (size_t i = 0; i < d->n; i++)
        if (seq_token(d, i) >= SHARD_VOCAB)
            return snprintf(err, errlen, "--data '%s': token %d at position %zu is not a GPT-2 token (vocabulary %d)", path,
                            seq_token(d, i), i, SHARD_VOCAB), EXIT_RUNTIME;
    return 0;
}

// Token ids separated by spaces.
static int shard_encode(const data_t *d, const char *text, int *out, int max, char *err, size_t errlen) {
    (void)d;
    int n = 0;
    for (const char *p = text;;) {
        p += strspn(p, " \t\n,");
        if (!*p) return n;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= SHARD_VOCAB || (*end && !strchr(" \t\n,", *end)))
            return snprintf(err, errlen, "--prompt on a token shard is GPT-2 token ids separated by spaces (0 to %d), not '%.20s'",
                            SHARD_VOCAB - 1, p), -1;
        if (n == max) return data_prompt_too_long(max, err, errlen);
        out[n++] = (int)v;
        p = end;
    }
}

// The token's text with --tokenizer, else its id and a space.
static void shard_decode(const data_t *d, int t, char *buf, size_t buflen) {
    if (d->words && t >= 0 && t < SHARD_VOCAB) {
        size_t len = d->word_at[t + 1] - d->word_at[t];
        if (len > buflen - 1) len = buflen - 1;
        memcpy(buf, d->words + d->word_at[t], len);
        buf[len] = '\0';
        return;
    }
    snprintf(buf, buflen, "%d ", t);
}

// A shard of 10,000 tokens from a small generator, some of them large ids.
static int shard_example(const char *dir, char *spec, size_t cap) {
    if (snprintf(spec, cap, "%s/example.bin", dir) >= (int)cap) return 0;
    FILE *f = fopen(spec, "wb");
    if (!f) return 0;
    enum { COUNT = 10000 };
    unsigned char head[SHARD_HEADER_BYTES] = {0}, tok[2];
    const uint32_t fields[3] = {SHARD_MAGIC, 1, COUNT};
    for (int k = 0; k < 3; k++)
        for (int b = 0; b < 4; b++) head[4 * k + b] = (unsigned char)(fields[k] >> (8 * b));
    fwrite(head, 1, sizeof head, f);
    uint32_t x = 12345;
    for (int i = 0; i < COUNT; i++) {
        x = x * 1103515245u + 12345u;
        int t = (int)((x >> 8) % (i % 7 ? 500 : SHARD_VOCAB));
        tok[0] = (unsigned char)t, tok[1] = (unsigned char)(t >> 8);
        fwrite(tok, 1, 2, f);
    }
    return fclose(f) == 0;
}

const corpus_ops corpus_shard = {
    .name = "shard",
    .caps = CORPUS_GPT2,
    .file = 1,
    .takes = shard_takes,
    .vocab = shard_vocab,
    .open = shard_open,
    SEQ_CORPUS_HOOKS,
    .encode = shard_encode,
    .decode = shard_decode,
    .default_prompt = "50256",  // GPT-2's <|endoftext|>
    .example = shard_example,
};
