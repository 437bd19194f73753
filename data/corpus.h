// corpus.h — what one kind of corpus provides: data.c finds the kind that a
// --data spec names in its registry (CORPUS_LIST) and asks it. One file per
// kind: cats.c (the built-in order corpus), tasks.c (task:NAME), shard.c
// (llm.c's token shards), bytes.c (any other file, a byte per token).
// Adding a corpus is one file and one word in CORPUS_LIST (docs/extending.md "Adding
// a corpus"). Only data/ and the tests include this header.
#ifndef PELAB_CORPUS_H
#define PELAB_CORPUS_H

#include "data.h"

struct corpus_ops {
    const char *name;  // for messages
    unsigned caps;     // CORPUS_* of data.h
    int file;          // the spec is a path: data.c reads the file whole into d->bytes before open
    // 1 when the spec names this kind. A file kind is asked only about a
    // path, with the file's first bytes in head (got of them).
    int (*takes)(const char *spec, const unsigned char *head, size_t got);
    // NULL, or 0 with a message when a spec this kind takes cannot be used
    // (before anything is read: an unknown task)
    int (*check)(const char *spec, char *err, size_t errlen);
    int (*vocab)(int causal);
    // Fills d (kind-specific fields, mask_token; a file kind: n tokens and
    // how to read them). 0, or EXIT_USAGE / EXIT_RUNTIME with err filled.
    int (*open)(data_t *d, const char *spec, char *err, size_t errlen);
    int (*check_ctx)(const data_t *d, int T, char *err, size_t errlen);
    // One training row of length T from rng.
    void (*row)(const data_t *d, rng_t *rng, int T, int *tokens, int *targets, int *seg);
    // Evaluation windows of length L: at most want (>= 1), 0 with a message
    // when there are none.
    size_t (*val_windows)(const data_t *d, int L, size_t want, char *err, size_t errlen);
    // Window w into one row of length L; rng is the window's own stream.
    void (*val_row)(const data_t *d, rng_t *rng, int L, size_t w, int *tokens, int *targets, int *seg);
    int (*encode)(const data_t *d, const char *text, int *out, int max, char *err, size_t errlen);
    void (*decode)(const data_t *d, int t, char *buf, size_t buflen);
    // NULL: every token but [MASK] is text
    int (*is_text)(const data_t *d, int token);
    const char *default_prompt;  // NULL: none
    // For the tests: writes into spec a --data that this kind takes, making
    // any file it needs in the folder dir; 0 on failure.
    int (*example)(const char *dir, char *spec, size_t cap);
};

// The registry, for the tests: corpus_at(i) for i < corpus_count().
int corpus_count(void);
const corpus_ops *corpus_at(int i);

// The parts the file kinds share (data.c): a sequence of d->n tokens, the
// first n_train for training and the rest for validation. Token i of the
// sequence (tok_bytes little-endian bytes at tok_offset + tok_bytes·i):
int seq_token(const data_t *d, size_t i);
int seq_check_ctx(const data_t *d, int T, char *err, size_t errlen);
void seq_row(const data_t *d, rng_t *rng, int T, int *tokens, int *targets, int *seg);
size_t seq_val_windows(const data_t *d, int L, size_t want, char *err, size_t errlen);
void seq_val_row(const data_t *d, rng_t *rng, int L, size_t w, int *tokens, int *targets, int *seg);
// The four hooks of a sequence corpus, for its ops table.
#define SEQ_CORPUS_HOOKS \
    .check_ctx = seq_check_ctx, .row = seq_row, .val_windows = seq_val_windows, .val_row = seq_val_row
// The "--prompt too long" message, shared by every encoder.
int data_prompt_too_long(int max, char *err, size_t errlen);

#endif
