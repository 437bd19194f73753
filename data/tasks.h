// tasks.h — the length-generalisation tasks of docs/data.md (--data
// task:NAME): copy, reverse, addition, sort, count, selective-copy,
// flipflop, parity, even-pairs and passkey, generated from a random stream. An instance of size n is a row of
// tokens in which some are answer tokens: the loss and the score are on
// those alone.
#ifndef PELAB_TASKS_H
#define PELAB_TASKS_H

#include <stddef.h>

#include "../core/common.h"

enum { TASK_MAX_SIZE = 1000, TASK_MAX_TESTS = 8 };
// selective copy's largest --task-ignore: twice as many noise tokens as digits
#define SELECTIVE_MAX_IGNORE 0.67

// One character per token. The tasks share this vocabulary, and the model's
// vocabulary is all of it (TT_VOCAB), whatever the task uses: a new token
// changes the embedding's size, so the initial weights of every task's
// model, so every task result (the embedding is drawn first). A new task
// uses these tokens where it can; one that needs another appends it after
// TT_READ (never between: the ids are in checkpoints) and says in its commit
// that the task experiments (results/tasks*) must be run again.
enum {
    TT_PAD = 0, TT_MASK, TT_SEP, TT_END, TT_DIGIT0,  // '_' '#' '|' '.' '0'..'9'
    TT_PLUS = TT_DIGIT0 + 10, TT_QUERY, TT_NOISE, TT_WRITE, TT_IGNORE, TT_READ,  // '+' '?' '*' 'w' 'i' 'r'
    TT_VOCAB
};

typedef struct {
    int lo, hi;  // sizes n, lo..hi inclusive
} task_range;

// The tasks are one registry in tasks.c: an entry per task (its name, the
// length of its instances, its generator, its density if any, and the answer
// worked out from an instance's question as text, which the tests hold every
// generated answer against). Everything below reads it.
int task_count(void);
int task_find(const char *name);      // index, or -1
const char *task_name(int task);
const char *task_names(void);         // "copy, reverse, …"
// Tokens of the longest instance of size n.
int task_len(int task, int n);
// Writes an instance of size n; answer[t] = 1 marks the answer tokens.
// Returns its length (at most task_len_at(task, n, ignore)). ignore: the density of
// flipflop and selective-copy (--task-ignore), or negative for the task's own.
int task_make(int task, int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer);
// The longest instance of size n at density `ignore` (negative: the task's
// own, task_len): only selective copy's length depends on it.
int task_len_at(int task, int n, float ignore);
// Whether the task has a density --task-ignore sets, and whether p is one
// it takes (0 with a message otherwise).
int task_takes_ignore(int task);
int task_check_ignore(int task, double p, char *err, size_t errlen);
// The answer of the instance whose text is `text` (task_token_char of each
// token), worked out from its question alone, as text ("3141." for copy):
// the tests' oracle.
void task_answer_of(int task, const char *text, char *out);
char task_token_char(int token);      // '_', '#', '|', …
int task_token_of_char(char c);       // -1 when c is not a task token
// "A:B" into r (1 ≤ A ≤ B ≤ TASK_MAX_SIZE); 0 with a message otherwise.
int task_parse_range(const char *s, task_range *r, char *err, size_t errlen);

#endif
