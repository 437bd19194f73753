// tasks.c — the task generators of README "Tasks". Each writes one instance
// of size n from the stream rng; answer[t] marks the tokens the model must
// produce (scored under teacher forcing, README "Tasks").
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
#include "tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_COPY, T_REVERSE, T_SORT, T_ADDITION, T_COUNT, T_SELECTIVE, T_FLIPFLOP, T_N };
static const char *const names[T_N] = {"copy", "reverse", "sort", "addition", "count", "selective-copy", "flipflop"};
static const char chars[TT_VOCAB + 1] = "_#|.0123456789+?*wir";

enum { COUNT_ITEMS = 4 };          // count draws its items from the digits 0..3
#define FLIP_WRITE 0.1f            // flipflop: P(write) = P(read) = 0.1, P(ignore) = 0.8
#define FLIP_READ 0.1f             //   (Liu et al. 2023's sparse setting)

int task_find(const char *name) {
    for (int i = 0; i < T_N; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

const char *task_name(int task) { return task >= 0 && task < T_N ? names[task] : "?"; }

const char *task_names(void) { return "copy, reverse, sort, addition, count, selective-copy, flipflop"; }

static int decimal_digits(int v) {
    int d = 1;
    while (v >= 10) v /= 10, d++;
    return d;
}

int task_len(int task, int n) {
    switch (task) {
    case T_ADDITION: return 3 * n + 4;
    case T_COUNT: return n + 3 + decimal_digits(n) + 1;
    case T_SELECTIVE: return 3 * n + 2;
    case T_FLIPFLOP: return 2 * (n < 2 ? 2 : n);
    default: return 2 * n + 2;
    }
}

char task_token_char(int token) { return token >= 0 && token < TT_VOCAB ? chars[token] : '?'; }

int task_token_of_char(char c) {
    const char *p = c ? strchr(chars, c) : NULL;
    return p ? (int)(p - chars) : -1;
}

static int digit(rng_t *rng, int base) { return TT_DIGIT0 + (int)rng_below(rng, (uint32_t)base); }

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

// The question has been written to tokens[0..q); appends the answer.
static int answer_from(int *tokens, unsigned char *answer, int q, const int *ans, int na) {
    for (int i = 0; i < na; i++) tokens[q + i] = ans[i], answer[q + i] = 1;
    return q + na;
}

int task_make(int task, int n, rng_t *rng, int *tokens, unsigned char *answer) {
    memset(answer, 0, (size_t)task_len(task, n));
    int len = 0, ans[2 * TASK_MAX_SIZE + 8], na = 0;
    switch (task) {
    case T_COPY:
    case T_REVERSE:
    case T_SORT:
        for (int i = 0; i < n; i++) tokens[len++] = digit(rng, 10);
        tokens[len++] = TT_SEP;
        for (int i = 0; i < n; i++) ans[na++] = tokens[task == T_REVERSE ? n - 1 - i : i];
        if (task == T_SORT) qsort(ans, (size_t)n, sizeof(int), cmp_int);
        ans[na++] = TT_END;
        return answer_from(tokens, answer, len, ans, na);
    case T_ADDITION: {
        int carry = 0;
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
    case T_COUNT: {
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
    case T_SELECTIVE: {
        // n digits and n noise tokens in a uniformly random arrangement
        unsigned char is_digit[2 * TASK_MAX_SIZE];
        for (int i = 0; i < 2 * n; i++) is_digit[i] = i < n;
        for (int i = 2 * n - 1; i > 0; i--) {
            int j = (int)rng_below(rng, (uint32_t)i + 1);
            unsigned char t = is_digit[i];
            is_digit[i] = is_digit[j], is_digit[j] = t;
        }
        for (int i = 0; i < 2 * n; i++) {
            tokens[len++] = is_digit[i] ? digit(rng, 10) : TT_NOISE;
            if (is_digit[i]) ans[na++] = tokens[len - 1];
        }
        tokens[len++] = TT_SEP;
        ans[na++] = TT_END;
        return answer_from(tokens, answer, len, ans, na);
    }
    case T_FLIPFLOP: {
        if (n < 2) n = 2;  // a write and a read at least
        int last = 0;
        for (int i = 0; i < n; i++) {
            float u = rng_uniform(rng);
            int op = i == 0 ? TT_WRITE : i == n - 1 ? TT_READ : u < FLIP_WRITE ? TT_WRITE : u < FLIP_WRITE + FLIP_READ ? TT_READ : TT_IGNORE;
            int bit = digit(rng, 2);
            if (op == TT_WRITE) last = bit;
            if (op == TT_READ) bit = last, answer[len + 1] = 1;
            tokens[len++] = op, tokens[len++] = bit;
        }
        return len;
    }
    }
    return 0;
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
