// tasks.c — the task generators of docs/data.md. Each writes one instance
// of size n from the stream rng; answer[t] marks the tokens the model must
// produce (scored under teacher forcing, docs/data.md).
//
//   copy            3141|3141.        the n digits again
//   reverse         3141|1413.        in reverse order
//   sort            3141|1134.        in ascending order
//   addition        123+456|5790.     two n-digit numbers, least significant
//                                     digit first, and their sum (n + 1 digits,
//                                     also least significant first)
//   count           1312?1|2.         how many of the n items (from 0–3) equal
//                                     the query; the count in decimal
//   selective-copy  3*1**4|314.       the n digits among n noise tokens, in order
//   flipflop        w1i0r1w0i1r0      n instructions: write, ignore or read a bit;
//                                     a read's bit is the last written one
//   parity          0110|0.           whether the number of 1s among n bits is odd
//   even-pairs      0110|1.           whether the pairs 01 and 10 among n bits are
//                                     even in number (1: yes; the same as first = last)
//   passkey         **w31415***?|31415.   a 5-digit key after 'w', somewhere in n
//                                     filler tokens; asked for at the end
// --task-ignore P (task_make's ignore) sets the density: flipflop's
// probability of an ignore instruction (writes and reads share the rest
// equally), selective-copy's share of noise among its question's tokens:
// the n digits stay, among n·P/(1 − P) noise tokens (Golovneva et al.
// 2024's blank/non-blank ratio; P = 0.5 is the task's own n, P = 2/3 twice
// as many, the most), so the answer keeps its length and the question
// grows or shrinks (task_len_at).
#include "tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

static const char chars[TT_VOCAB + 1] = "_#|.0123456789+?*wir";

enum { COUNT_ITEMS = 4 };          // count draws its items from the digits 0..3
#define FLIP_WRITE 0.1f            // flipflop: P(write) = P(read) = 0.1, P(ignore) = 0.8
#define FLIP_READ 0.1f             //   (Liu et al. 2023's sparse setting)
enum { PASSKEY_DIGITS = 5 };

static int decimal_digits(int v) {
    int d = 1;
    while (v >= 10) v /= 10, d++;
    return d;
}

// Selective copy's noise tokens beside its n digits at density `ignore`:
// n·P/(1 − P) rounded, at most 2n; n at the task's own density.
static int selective_noise(int n, float ignore) {
    if (ignore < 0) return n;
    long m = lrint((double)n * ignore / (1.0 - ignore));
    return m > 2L * n ? 2 * n : (int)m;
}

static int digit(rng_t *rng, int base) { return TT_DIGIT0 + (int)rng_below(rng, (uint32_t)base); }

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

// The question has been written to tokens[0..q); appends the answer.
static int answer_from(int *tokens, unsigned char *answer, int q, const int *ans, int na) {
    for (int i = 0; i < na; i++) tokens[q + i] = ans[i], answer[q + i] = 1;
    return q + na;
}

// ---- each task: the tokens of its longest instance of size n (at density
// ignore; negative: its own), its generator, and the answer worked out from
// an instance's question as text alone (the tests' oracle: tests/test_tasks.c
// holds every instance's answer against it)

static int len_two_n(int n, float ignore) { return (void)ignore, 2 * n + 2; }

// copy, reverse, sort: n digits, '|', then them again (reversed, sorted)
enum { AS_IS, REVERSED, SORTED };
static int make_digits_again(int how, int n, rng_t *rng, int *tokens, unsigned char *answer) {
    int len = 0, ans[TASK_MAX_SIZE + 1], na = 0;
    for (int i = 0; i < n; i++) tokens[len++] = digit(rng, 10);
    tokens[len++] = TT_SEP;
    for (int i = 0; i < n; i++) ans[na++] = tokens[how == REVERSED ? n - 1 - i : i];
    if (how == SORTED) qsort(ans, (size_t)n, sizeof(int), cmp_int);
    ans[na++] = TT_END;
    return answer_from(tokens, answer, len, ans, na);
}
static void answer_digits_again(int how, const char *text, char *out) {
    size_t q = strcspn(text, "|"), k = 0;
    if (how == SORTED) {  // counting sort on the characters
        for (char c = '0'; c <= '9'; c++)
            for (size_t j = 0; j < q; j++)
                if (text[j] == c) out[k++] = c;
    } else {
        for (size_t i = 0; i < q; i++) out[k++] = text[how == REVERSED ? q - 1 - i : i];
    }
    out[k++] = '.', out[k] = 0;
}
static int copy_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    return (void)ignore, make_digits_again(AS_IS, n, rng, tokens, answer);
}
static int reverse_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    return (void)ignore, make_digits_again(REVERSED, n, rng, tokens, answer);
}
static int sort_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    return (void)ignore, make_digits_again(SORTED, n, rng, tokens, answer);
}
static void copy_answer(const char *text, char *out) { answer_digits_again(AS_IS, text, out); }
static void reverse_answer(const char *text, char *out) { answer_digits_again(REVERSED, text, out); }
static void sort_answer(const char *text, char *out) { answer_digits_again(SORTED, text, out); }

// addition: two n-digit numbers, least significant digit first, and their sum
static int addition_len(int n, float ignore) { return (void)ignore, 3 * n + 4; }
static int addition_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    (void)ignore;
    int len, ans[TASK_MAX_SIZE + 2], na = 0, carry = 0;
    for (int i = 0; i < 2 * n; i++) tokens[i + (i >= n)] = digit(rng, 10);
    tokens[n] = TT_PLUS;
    len = 2 * n + 1;
    tokens[len++] = TT_SEP;
    for (int i = 0; i < n; i++) {
        int s = tokens[i] - TT_DIGIT0 + tokens[n + 1 + i] - TT_DIGIT0 + carry;
        ans[na++] = TT_DIGIT0 + s % 10, carry = s / 10;
    }
    ans[na++] = TT_DIGIT0 + carry;
    ans[na++] = TT_END;
    return answer_from(tokens, answer, len, ans, na);
}
static void addition_answer(const char *text, char *out) {  // digit by digit, any length
    const char *plus = strchr(text, '+');
    int n = plus ? (int)(plus - text) : 0, carry = 0;
    for (int i = 0; i < n; i++) {
        int s = text[i] - '0' + plus[1 + i] - '0' + carry;
        out[i] = (char)('0' + s % 10), carry = s / 10;
    }
    out[n] = (char)('0' + carry), out[n + 1] = '.', out[n + 2] = 0;
}

// count: how many of n items (from 0-3) equal the query, in decimal
static int count_len(int n, float ignore) { return (void)ignore, n + 3 + decimal_digits(n) + 1; }
static int count_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    (void)ignore;
    int len = 0, ans[16], na = 0;
    for (int i = 0; i < n; i++) tokens[len++] = digit(rng, COUNT_ITEMS);
    int q = digit(rng, COUNT_ITEMS), c = 0;
    for (int i = 0; i < n; i++) c += tokens[i] == q;
    tokens[len++] = TT_QUERY, tokens[len++] = q, tokens[len++] = TT_SEP;
    char buf[16];
    snprintf(buf, sizeof buf, "%d", c);
    for (const char *p = buf; *p; p++) ans[na++] = TT_DIGIT0 + (*p - '0');
    ans[na++] = TT_END;
    return answer_from(tokens, answer, len, ans, na);
}
static void count_answer(const char *text, char *out) {
    const char *qm = strchr(text, '?');
    int c = 0;
    for (const char *p = text; qm && p < qm; p++) c += *p == qm[1];
    sprintf(out, "%d.", c);
}

// selective-copy: n digits among n noise tokens (--task-ignore P: n·P/(1 − P)
// noise tokens) in a uniformly random arrangement; the digits in order
static int selective_len(int n, float ignore) { return 2 * n + selective_noise(n, ignore) + 2; }
static int selective_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    int len = 0, ans[TASK_MAX_SIZE + 1], na = 0;
    int slots = n + selective_noise(n, ignore);
    unsigned char is_digit[3 * TASK_MAX_SIZE];
    for (int i = 0; i < slots; i++) is_digit[i] = i < n;
    for (int i = slots - 1; i > 0; i--) {
        int j = (int)rng_below(rng, (uint32_t)i + 1);
        unsigned char t = is_digit[i];
        is_digit[i] = is_digit[j], is_digit[j] = t;
    }
    for (int i = 0; i < slots; i++) {
        tokens[len++] = is_digit[i] ? digit(rng, 10) : TT_NOISE;
        if (is_digit[i]) ans[na++] = tokens[len - 1];
    }
    tokens[len++] = TT_SEP;
    ans[na++] = TT_END;
    return answer_from(tokens, answer, len, ans, na);
}
static void selective_answer(const char *text, char *out) {
    size_t q = strcspn(text, "|"), k = 0;
    for (size_t i = 0; i < q; i++)
        if (text[i] != '*') out[k++] = text[i];
    out[k++] = '.', out[k] = 0;
}

// flipflop: n instructions (write, ignore or read a bit); a read's bit is the last written
static int flipflop_len(int n, float ignore) { return (void)ignore, 2 * (n < 2 ? 2 : n); }
static int flipflop_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    if (n < 2) n = 2;  // a write and a read at least
    int len = 0, last = 0;
    float pw = FLIP_WRITE, pr = FLIP_READ;
    if (ignore >= 0) pw = pr = (1.0f - ignore) / 2;
    for (int i = 0; i < n; i++) {
        float u = rng_uniform(rng);
        int op = i == 0 ? TT_WRITE : i == n - 1 ? TT_READ : u < pw ? TT_WRITE : u < pw + pr ? TT_READ : TT_IGNORE;
        int bit = digit(rng, 2);
        if (op == TT_WRITE) last = bit;
        if (op == TT_READ) bit = last, answer[len + 1] = 1;
        tokens[len++] = op, tokens[len++] = bit;
    }
    return len;
}
static void flipflop_answer(const char *text, char *out) {
    char last = '?';
    size_t k = 0;
    for (const char *p = text; p[0] && p[1]; p += 2) {
        if (p[0] == 'w') last = p[1];
        if (p[0] == 'r') out[k++] = last;
    }
    out[k] = 0;
}

// parity and even-pairs (Delétang et al. 2023), over the bits 0 and 1:
// whether the number of 1s is odd; whether the pairs 01 and 10 are even in number
static int bits_len(int n, float ignore) { return (void)ignore, n + 3; }
static int make_bits(int even_pairs, int n, rng_t *rng, int *tokens, unsigned char *answer) {
    int len = 0, ans[2], na = 0, ones = 0, changes = 0;
    for (int i = 0; i < n; i++) {
        tokens[len++] = digit(rng, 2);
        ones += tokens[i] == TT_DIGIT0 + 1;
        changes += i > 0 && tokens[i] != tokens[i - 1];
    }
    tokens[len++] = TT_SEP;
    ans[na++] = TT_DIGIT0 + (even_pairs ? changes % 2 == 0 : ones % 2);
    ans[na++] = TT_END;
    return answer_from(tokens, answer, len, ans, na);
}
static void answer_bits(int even_pairs, const char *text, char *out) {
    size_t q = strcspn(text, "|");
    int ones = 0, pairs = 0;
    for (size_t i = 0; i < q; i++) ones += text[i] == '1', pairs += i > 0 && text[i] != text[i - 1];
    sprintf(out, "%d.", even_pairs ? pairs % 2 == 0 : ones % 2);
}
static int parity_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    return (void)ignore, make_bits(0, n, rng, tokens, answer);
}
static int even_pairs_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    return (void)ignore, make_bits(1, n, rng, tokens, answer);
}
static void parity_answer(const char *text, char *out) { answer_bits(0, text, out); }
static void even_pairs_answer(const char *text, char *out) { answer_bits(1, text, out); }

// passkey (Mohtashami & Jaggi 2023): a key hidden in filler, asked for at the end
static int passkey_len(int n, float ignore) { return (void)ignore, n + 2 * PASSKEY_DIGITS + 4; }
static int passkey_make(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    (void)ignore;
    int len = 0, ans[PASSKEY_DIGITS + 1], na = 0;
    int at = (int)rng_below(rng, (uint32_t)n + 1);  // filler tokens before the key
    for (int i = 0; i < at; i++) tokens[len++] = TT_NOISE;
    tokens[len++] = TT_WRITE;
    for (int i = 0; i < PASSKEY_DIGITS; i++) tokens[len++] = ans[na++] = digit(rng, 10);
    for (int i = at; i < n; i++) tokens[len++] = TT_NOISE;
    tokens[len++] = TT_QUERY, tokens[len++] = TT_SEP;
    ans[na++] = TT_END;
    return answer_from(tokens, answer, len, ans, na);
}
static void passkey_answer(const char *text, char *out) {
    const char *w = strchr(text, 'w');
    sprintf(out, "%.5s.", w ? w + 1 : "");
}

// ---- the registry: one entry per task, in the order of --help (a task's
// index is not stored anywhere: a checkpoint names its task)

typedef struct {
    const char *name;
    int (*len)(int n, float ignore);
    int (*make)(int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer);
    void (*answer)(const char *text, char *out);
    // --task-ignore: the largest density the task takes (0: it has none),
    // whether that bound is excluded, and what the density is
    double ignore_max;
    int ignore_max_excluded;
    const char *ignore_what;
} task_def;

static const task_def tasks[] = {
    {"copy", len_two_n, copy_make, copy_answer, 0, 0, NULL},
    {"reverse", len_two_n, reverse_make, reverse_answer, 0, 0, NULL},
    {"sort", len_two_n, sort_make, sort_answer, 0, 0, NULL},
    {"addition", addition_len, addition_make, addition_answer, 0, 0, NULL},
    {"count", count_len, count_make, count_answer, 0, 0, NULL},
    {"selective-copy", selective_len, selective_make, selective_answer, SELECTIVE_MAX_IGNORE, 0,
     "selective-copy's share of noise tokens is at least 0 and at most 0.67 (twice as many noise tokens as digits)"},
    {"flipflop", flipflop_len, flipflop_make, flipflop_answer, 1.0, 1,
     "flipflop's probability of an ignore instruction is at least 0 and below 1"},
    {"parity", bits_len, parity_make, parity_answer, 0, 0, NULL},
    {"even-pairs", bits_len, even_pairs_make, even_pairs_answer, 0, 0, NULL},
    {"passkey", passkey_len, passkey_make, passkey_answer, 0, 0, NULL},
};
#define N_TASKS (int)(sizeof tasks / sizeof tasks[0])

static const task_def *task_at(int task) { return task >= 0 && task < N_TASKS ? &tasks[task] : NULL; }

int task_count(void) { return N_TASKS; }

int task_find(const char *name) {
    for (int i = 0; i < N_TASKS; i++)
        if (strcmp(name, tasks[i].name) == 0) return i;
    return -1;
}

const char *task_name(int task) { return task_at(task) ? tasks[task].name : "?"; }

const char *task_names(void) {
    static char buf[256];
    if (!buf[0])
        for (int i = 0; i < N_TASKS; i++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? ", " : "", tasks[i].name);
    return buf;
}

int task_takes_ignore(int task) { return task_at(task) && tasks[task].ignore_max > 0; }

int task_check_ignore(int task, double p, char *err, size_t errlen) {
    if (!task_takes_ignore(task)) {
        char which[128] = "";
        for (int i = 0; i < N_TASKS; i++)
            if (tasks[i].ignore_max > 0)
                snprintf(which + strlen(which), sizeof which - strlen(which), "%s%s", which[0] ? " and " : "", tasks[i].name);
        snprintf(err, errlen, "--task-ignore sets the density of %s; task %s has no ignored tokens", which, task_name(task));
        return 0;
    }
    const task_def *t = &tasks[task];
    if (p >= 0 && (t->ignore_max_excluded ? p < t->ignore_max : p <= t->ignore_max)) return 1;
    snprintf(err, errlen, "--task-ignore %g: %s", p, t->ignore_what);
    return 0;
}

int task_len_at(int task, int n, float ignore) { return tasks[task].len(n, ignore); }

int task_len(int task, int n) { return tasks[task].len(n, -1.0f); }

void task_answer_of(int task, const char *text, char *out) { tasks[task].answer(text, out); }

char task_token_char(int token) { return token >= 0 && token < TT_VOCAB ? chars[token] : '?'; }

int task_token_of_char(char c) {
    const char *p = c ? strchr(chars, c) : NULL;
    return p ? (int)(p - chars) : -1;
}

int task_make(int task, int n, rng_t *rng, float ignore, int *tokens, unsigned char *answer) {
    memset(answer, 0, (size_t)task_len_at(task, n, ignore));
    return tasks[task].make(n, rng, ignore, tokens, answer);
}

int task_parse_range(const char *s, task_range *r, char *err, size_t errlen) {
    char *end;
    long lo = strtol(s, &end, 10), hi;
    if (end == s || *end != ':') goto bad;
    const char *p = end + 1;
    hi = strtol(p, &end, 10);
    if (end == p || *end) goto bad;
    if (lo < 1 || hi < lo || hi > TASK_MAX_SIZE) {
        snprintf(err, errlen, "'%s': sizes must satisfy 1 <= A <= B <= %d", s, TASK_MAX_SIZE);
        return 0;
    }
    r->lo = (int)lo, r->hi = (int)hi;
    return 1;
bad:
    snprintf(err, errlen, "'%s': expected a range of sizes A:B, e.g. 1:16", s);
    return 0;
}

// The tasks as a corpus (--data task:NAME): training rows of the training
// sizes, evaluation rows likewise from each window's own stream.
// A task run's identity in checkpoints: the CRC-32 of "task:NAME A:B".
static uint32_t task_identity(int task, int lo, int hi) {
    char buf[96];
    snprintf(buf, sizeof buf, "task:%s %d:%d", task_name(task), lo, hi);
    return crc32_update(0, buf, strlen(buf));
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
    d->crc = task_identity(d->task, d->train_len.lo, d->train_len.hi);
    return 1;
}

int data_task_sizes_of(const data_t *d, uint32_t crc, task_range *r) {
    for (int lo = 1; lo <= TASK_MAX_SIZE; lo++)
        for (int hi = lo; hi <= TASK_MAX_SIZE; hi++)
            if (task_identity(d->task, lo, hi) == crc) return *r = (task_range){lo, hi}, 1;
    return 0;
}

void data_task_row(const data_t *d, rng_t *rng, task_range r, int T, int *tokens, int *targets, int *seg) {
    int inst[4 * TASK_MAX_SIZE + 8];
    unsigned char answer[4 * TASK_MAX_SIZE + 8];
    int n = r.lo + (int)rng_below(rng, (uint32_t)(r.hi - r.lo + 1));
    int len = task_make(d->task, n, rng, d->task_ignore, inst, answer);
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

static int task_takes(const char *spec, const unsigned char *head, size_t got) {
    (void)head, (void)got;
    return strncmp(spec, "task:", 5) == 0;
}

static int task_check(const char *spec, char *err, size_t errlen) {
    if (task_find(spec + 5) >= 0) return 1;
    nearest_name near = NEAREST_INIT;
    for (int i = 0; i < N_TASKS; i++) nearest_offer(&near, spec + 5, tasks[i].name);
    snprintf(err, errlen, "--data '%s': no such task%s%s%s; the tasks are %s", spec, near.best ? " (did you mean task:" : "",
             near.best ? near.best : "", near.best ? "?)" : "", task_names());
    return 0;
}

static int task_vocab(int causal) {
    (void)causal;  // [MASK] is in the vocabulary in both modes
    return TT_VOCAB;
}

static int task_open(data_t *d, const char *spec, char *err, size_t errlen) {
    d->task = task_find(spec + 5);
    d->task_ignore = -1;  // the task's own density
    d->mask_token = TT_MASK;
    return data_task_sizes(d, "1:16", NULL, err, errlen) ? 0 : EXIT_USAGE;
}

static int task_check_ctx(const data_t *d, int T, char *err, size_t errlen) {
    int need = task_len_at(d->task, d->train_len.hi, d->task_ignore);
    if (T < need) {
        snprintf(err, errlen, "--ctx %d is shorter than a %s instance of size %d (%d tokens); use --ctx %d or more, or "
                 "leave --ctx out (it then fits the longest training instance)", T, task_name(d->task), d->train_len.hi, need, need);
        return 0;
    }
    return 1;
}

static void task_row(const data_t *d, rng_t *rng, int T, int *tokens, int *targets, int *seg) {
    data_task_row(d, rng, d->train_len, T, tokens, targets, seg);
}

static size_t task_val_windows(const data_t *d, int L, size_t want, char *err, size_t errlen) {
    int need = task_len_at(d->task, d->train_len.hi, d->task_ignore);
    if (L < need) {
        snprintf(err, errlen, "ctx=%d is shorter than the longest training instance (%d tokens); the task's loss is "
                 "measured on training-size instances", L, need);
        return 0;
    }
    return want;
}

static void task_val_row(const data_t *d, rng_t *rng, int L, size_t w, int *tokens, int *targets, int *seg) {
    (void)w;
    data_task_row(d, rng, d->train_len, L, tokens, targets, seg);
}

static int task_encode(const data_t *d, const char *text, int *out, int max, char *err, size_t errlen) {
    (void)d;
    int n = 0;
    for (const char *p = text; *p; p++) {
        if (*p == ' ') continue;
        int t = task_token_of_char(*p);
        if (t < 0 || t == TT_MASK) return snprintf(err, errlen, "--prompt '%c' is not a task token (0-9 | . + ? * w i r _)", *p), -1;
        if (n == max) return data_prompt_too_long(max, err, errlen);
        out[n++] = t;
    }
    return n;
}

static void task_decode(const data_t *d, int t, char *buf, size_t buflen) {
    (void)d;
    snprintf(buf, buflen, "%c", task_token_char(t));
}

static int task_is_text(const data_t *d, int token) {
    (void)d;
    return token != TT_PAD;
}

static int task_example(const char *dir, char *spec, size_t cap) {
    (void)dir;
    return snprintf(spec, cap, "task:addition") > 0;
}

const corpus_ops corpus_task = {
    .name = "task",
    .caps = CORPUS_TASKS,
    .takes = task_takes,
    .check = task_check,
    .vocab = task_vocab,
    .open = task_open,
    .check_ctx = task_check_ctx,
    .row = task_row,
    .val_windows = task_val_windows,
    .val_row = task_val_row,
    .encode = task_encode,
    .decode = task_decode,
    .is_text = task_is_text,
    .default_prompt = NULL,  // no default question
    .example = task_example,
};
