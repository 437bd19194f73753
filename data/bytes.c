// bytes.c — any file as a corpus of bytes: a token per byte (vocabulary 256,
// plus [MASK] for the masked objective), the last tenth for validation.
#include <string.h>

#include "corpus.h"

static int bytes_takes(const char *spec, const unsigned char *head, size_t got) {
    (void)spec, (void)head, (void)got;
    return 1;  // the last kind asked: any file
}

static int bytes_vocab(int causal) { return 256 + !causal; }

// A file named *.bin is meant as an llm.c shard: one without the magic (the
// shard kind did not take it) is refused rather than read as text.
static int bytes_open(data_t *d, const char *spec, char *err, size_t errlen) {
    size_t len = strlen(spec);
    if (len >= 4 && !strcmp(spec + len - 4, ".bin")) {
        snprintf(err, errlen, "--data '%s' is named .bin but is not an llm.c token shard (its first 4 bytes are not the "
                 "magic %d); give a shard written by llm.c's dev/data scripts, or a text file", spec, SHARD_MAGIC);
        return EXIT_RUNTIME;
    }
    d->tok_offset = 0, d->tok_bytes = 1;
    d->mask_token = 256;
    return 0;
}

static int bytes_encode(const data_t *d, const char *text, int *out, int max, char *err, size_t errlen) {
    (void)d;
    int n = 0;
    for (const char *p = text; *p; p++) {
        if (n == max) return data_prompt_too_long(max, err, errlen);
        out[n++] = (unsigned char)*p;
    }
    return n;
}

static void bytes_decode(const data_t *d, int t, char *buf, size_t buflen) {
    if (t == d->mask_token) snprintf(buf, buflen, "<mask>");
    else snprintf(buf, buflen, "%c", (char)t);
}

// 20,000 bytes of a repeated sentence.
static int bytes_example(const char *dir, char *spec, size_t cap) {
    if (snprintf(spec, cap, "%s/example.txt", dir) >= (int)cap) return 0;
    FILE *f = fopen(spec, "wb");
    if (!f) return 0;
    for (int i = 0; i < 400; i++) fprintf(f, "the quick brown fox %03d jumps over the dog.\n", i);
    return fclose(f) == 0;
}

const corpus_ops corpus_bytes = {
    .name = "bytes",
    .file = 1,
    .takes = bytes_takes,
    .vocab = bytes_vocab,
    .open = bytes_open,
    SEQ_CORPUS_HOOKS,
    .encode = bytes_encode,
    .decode = bytes_decode,
    .default_prompt = "\n",
    .example = bytes_example,
};
