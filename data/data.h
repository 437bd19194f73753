// data.h — the corpora of docs/data.md: the built-in word-level `cats`
// corpus, the built-in tasks (task:NAME, data/tasks.c), llm.c's token
// shards and any other file as bytes. Each hands out rows of tokens, targets (-1 = no loss) and segment
// ids, deterministically from --seed.
#ifndef PELAB_DATA_H
#define PELAB_DATA_H

#include <stddef.h>

#include "../core/common.h"
#include "tasks.h"

// What a corpus offers beyond rows of tokens; train.c and eval/ ask for
// these (data_has) instead of naming a kind.
enum {
    CORPUS_ORDER_PROBE = 1 << 0,  // held-out order questions (eval_order, --until-solved, --attn-png)
    CORPUS_TASKS = 1 << 1,        // instances of sizes: --task-len/--test-len, scored by eval_task
    CORPUS_GPT2 = 1 << 2,         // GPT-2 token ids: --tokenizer decodes them
};

typedef struct corpus_ops corpus_ops;  // one kind of corpus (corpus.h)

// llm.c's token shards (dev/data/*.bin): 256 int32 of header (magic,
// version 1, token count), then uint16 GPT-2 tokens. llm.c's tokenizer file
// (gpt2_tokenizer.bin): 256 int32 of header (magic, version 1 or 2, vocab
// size, and in version 2 the end-of-text token), then per token a length
// byte (1–255) and that many bytes.
enum { SHARD_MAGIC = 20240520, SHARD_HEADER_BYTES = 1024, SHARD_VOCAB = 50257, TOKENIZER_MAGIC = 20240328 };

// cats vocabulary layout
#define CATS_NOUNS 24
#define CATS_VERBS 12
#define CATS_HELD_OUT 100       // held-out (pair, verb) combinations
#define CATS_MAX_EXAMPLE 13     // tokens in the longest example
#define CATS_PROBE_MAX (CATS_HELD_OUT * 4)

typedef struct {
    int tokens[CATS_MAX_EXAMPLE];
    int len;
    int answer_pos;  // index of the answer slot
    int answer;      // its token
} cats_example;

typedef struct {
    const corpus_ops *ops;  // the kind
    int causal;
    int vocab;
    int mask_token;   // [MASK] id (bidirectional mode)
    unsigned long long seed;
    rng_t rng;        // the training batch stream; saved in checkpoints
    // text and shards
    char *path;         // --data as given (a copy)
    unsigned char *bytes;  // the file (a shard: header included)
    size_t n, n_train;  // tokens; train = [0, n_train), validation = the rest
    size_t tok_offset;  // token i is tok_bytes little-endian bytes at bytes + tok_offset + tok_bytes * i
    int tok_bytes;
    uint32_t crc;       // CRC-32 of the bytes: the corpus's identity in checkpoints
    // --tokenizer: token t's text is words[word_at[t] .. word_at[t + 1]); NULL: none
    unsigned char *words;
    uint32_t *word_at;
    // task
    int task;
    float task_ignore;  // --task-ignore: the density of flipflop/selective-copy, or -1: the task's own
    task_range train_len, tests[TASK_MAX_TESTS];
    int n_tests;
    // cats
    unsigned char held[CATS_NOUNS][CATS_NOUNS][CATS_VERBS];  // 1: never in training
} data_t;

// Opens `spec` ("cats", "task:NAME" or a path: an llm.c shard when it
// starts with the shard magic, else text). Returns 0; or, with err filled,
// EXIT_USAGE for a bad value and EXIT_RUNTIME for a file that cannot be used;
// what it allocated before a refusal is in *d, for data_close.
int data_open(data_t *d, const char *spec, int causal, unsigned long long seed, char *err, size_t errlen);
// Reads llm.c's GPT-2 tokenizer file at path for a corpus of GPT-2 tokens
// (CORPUS_GPT2): data_decode then gives each token's text, not its id.
// Returns 0, or EXIT_RUNTIME with err filled (a file that is not one, is
// truncated, or is for another vocabulary).
int data_load_tokenizer(data_t *d, const char *path, char *err, size_t errlen);
// What opening `spec` will take, known before it is read: the vocabulary and
// the bytes the corpus holds in memory (a file's size; 0 for the built-in
// corpora). Returns 0, or a status with err as data_open does.
int data_describe(const char *spec, int causal, int *vocab, size_t *bytes, char *err, size_t errlen);
void data_close(data_t *d);
// 1 when the corpus offers cap (CORPUS_*).
int data_has(const data_t *d, unsigned cap);
// Every capability the corpus offers (CORPUS_* bits).
unsigned data_caps(const data_t *d);
// 1 when spec names a file (no built-in corpus takes it).
int data_is_path(const char *spec);
// A task's training sizes ("A:B") and test sizes ("A:B,C:D…"; NULL: twice and
// four times the longest training size). 0 with a message when they are bad
// or overlap.
int data_task_sizes(data_t *d, const char *train, const char *tests, char *err, size_t errlen);
// The training sizes of a task run whose identity (data_identity) is crc,
// for --resume's message: 1 and *r, or 0 when none gives it.
int data_task_sizes_of(const data_t *d, uint32_t crc, task_range *r);
// One task row of length T with an instance of a size in r from rng (T must
// hold it: task_len_at(d->task, r.hi, d->task_ignore) tokens).
void data_task_row(const data_t *d, rng_t *rng, task_range r, int T, int *tokens, int *targets, int *seg);
// What a checkpoint records of the corpus: text, its size and CRC-32; a
// task, 0 and the CRC-32 of its name and training sizes; cats, 0 and 0.
void data_identity(const data_t *d, uint64_t *size, uint32_t *crc);
// Checks that a context of T fits this corpus; returns 0 with a message otherwise.
int data_check_ctx(const data_t *d, int T, char *err, size_t errlen);

// One training batch: tokens, targets, seg all (B, T).
void data_next_batch(data_t *d, int B, int T, int *tokens, int *targets, int *seg);

// Evaluation windows of length L: how many (capped by max_tokens), 0 when the
// validation split is too short (then *err says so).
size_t data_val_windows(const data_t *d, int L, size_t max_tokens, char *err, size_t errlen);
// Window w (of data_val_windows) into one row of length L.
void data_val_row(const data_t *d, int L, size_t w, int *tokens, int *targets, int *seg);

// --prompt's default: "the" on cats, a newline on text, 50256 (GPT-2's
// <|endoftext|>) on a shard; NULL on a task (no default question).
const char *data_default_prompt(const data_t *d);

// Tokens <-> text, for --prompt and --sample.
// Returns the number of tokens (at most max), or -1 with err filled.
int data_encode(const data_t *d, const char *text, int *out, int max, char *err, size_t errlen);
// 0 for the tokens that are not text: [MASK] and cats' padding (a sampler
// must never emit them), 1 for the others.
int data_is_text(const data_t *d, int token);
// Appends the text of token t to buf (cats: a word and a space; text: the byte).
void data_decode(const data_t *d, int t, char *buf, size_t buflen);

// cats internals that train.c, the order probe and the tests use
const char *cats_word(int token);
int cats_noun(int i);                // token of noun i
int cats_verb(int i);                // token of verb i (3rd person)
void cats_make_example(int subj, int verb, int obj, int ask_subject, cats_example *ex);
// Fills probe with every held-out triple in both orders and both questions;
// returns the count.
int cats_probe(const data_t *d, cats_example *probe);
// Fills one row of length T with whole or cut examples from rng (see cats.c).
void cats_fill_row(const data_t *d, rng_t *rng, int T, int *tokens, int *targets, int *seg);
int cats_vocab_size(void);
int cats_pad_token(void);

#endif
