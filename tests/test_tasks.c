// test_tasks.c — the task generators (data/tasks.c) against answers
// recomputed here from the question as text, the rows they make, the size
// ranges, and the exact-match scoring on hand-made logits.
#include <stdlib.h>
#include <string.h>

#include "../eval/eval.h"
#include "test.h"

enum { N_TASKS = 10, PER_TASK = 1000 };
static const char *const task_list[N_TASKS] = {"copy", "reverse", "sort", "addition", "count", "selective-copy",
                                               "flipflop", "parity", "even-pairs", "passkey"};

// The instance as text, and its answer tokens as text in order.
static void as_text(const int *tok, const unsigned char *ans, int len, char *text, char *answer) {
    int na = 0;
    for (int t = 0; t < len; t++) {
        text[t] = task_token_char(tok[t]);
        if (ans[t]) answer[na++] = text[t];
    }
    text[len] = answer[na] = 0;
}

// What the answer must be, worked out from the text of the question alone.
static void expected(const char *task, const char *text, char *out) {
    const char *bar = strchr(text, '|');
    size_t q = bar ? (size_t)(bar - text) : 0;
    out[0] = 0;
    if (!strcmp(task, "copy") || !strcmp(task, "reverse") || !strcmp(task, "sort")) {
        for (size_t i = 0; i < q; i++) out[i] = text[!strcmp(task, "reverse") ? q - 1 - i : i];
        out[q] = 0;
        if (!strcmp(task, "sort"))  // counting sort on the characters
            for (size_t i = 0, k = 0; i < 10; i++)
                for (size_t j = 0; j < q; j++)
                    if (text[j] == (char)('0' + i)) out[k++] = text[j];
        strcat(out, ".");
    } else if (!strcmp(task, "addition")) {
        // a and b are written least significant digit first: read them back as numbers
        const char *plus = strchr(text, '+');
        int n = (int)(plus - text);
        unsigned long long a = 0, b = 0, p = 1;
        for (int i = 0; i < n; i++, p *= 10) a += (unsigned long long)(text[i] - '0') * p, b += (unsigned long long)(plus[1 + i] - '0') * p;
        unsigned long long s = a + b;
        for (int i = 0; i <= n; i++, s /= 10) out[i] = (char)('0' + s % 10);
        out[n + 1] = '.', out[n + 2] = 0;
    } else if (!strcmp(task, "count")) {
        const char *qm = strchr(text, '?');
        int c = 0;
        for (const char *p = text; p < qm; p++) c += *p == qm[1];
        sprintf(out, "%d.", c);
    } else if (!strcmp(task, "selective-copy")) {
        size_t k = 0;
        for (size_t i = 0; i < q; i++)
            if (text[i] != '*') out[k++] = text[i];
        out[k++] = '.', out[k] = 0;
    } else if (!strcmp(task, "parity") || !strcmp(task, "even-pairs")) {
        int ones = 0, pairs = 0;
        for (size_t i = 0; i < q; i++) ones += text[i] == '1', pairs += i > 0 && text[i] != text[i - 1];
        sprintf(out, "%d.", !strcmp(task, "parity") ? ones % 2 : pairs % 2 == 0);
    } else if (!strcmp(task, "passkey")) {
        const char *w = strchr(text, 'w');
        sprintf(out, "%.5s.", w ? w + 1 : "");
    } else if (!strcmp(task, "flipflop")) {
        char last = '?';
        size_t k = 0;
        for (const char *p = text; p[0] && p[1]; p += 2) {
            if (p[0] == 'w') last = p[1];
            if (p[0] == 'r') out[k++] = last;
        }
        out[k] = 0;
    }
}

// Every instance's answer is what the question implies; its shape is the
// task's (digits where digits go, lengths as task_len says).
static int test_generators_answer_right(void) {
    int fails = 0;
    static int tok[4 * TASK_MAX_SIZE];
    static unsigned char ans[4 * TASK_MAX_SIZE];
    static char text[4 * TASK_MAX_SIZE], got[4 * TASK_MAX_SIZE], want[4 * TASK_MAX_SIZE];
    for (int k = 0; k < N_TASKS; k++) {
        int task = task_find(task_list[k]), bad = 0;
        EXPECT(task >= 0, "task %s not found", task_list[k]);
        rng_t r = {1234 + (unsigned long long)k};
        for (int i = 0; i < PER_TASK && !bad; i++) {
            int n = 1 + i % 16;  // addition's numbers stay within 64 bits
            int len = task_make(task, n, &r, -1, tok, ans);
            as_text(tok, ans, len, text, got);
            expected(task_list[k], text, want);
            int flip = !strcmp(task_list[k], "flipflop");
            if (len < 1 || len > task_len(task, n) || strcmp(got, want) || (!flip && (!strchr(text, '|') || text[len - 1] != '.'))) {
                printf("    %s n=%d: '%s' answers '%s', expected '%s' (len %d, at most %d)\n", task_list[k], n, text, got,
                       want, len, task_len(task, n));
                bad = 1;
            }
            for (int t = 0; t < len && !bad; t++)
                if (tok[t] <= TT_MASK || tok[t] >= TT_VOCAB) printf("    %s: token %d at %d\n", task_list[k], tok[t], t), bad = 1;
        }
        fails += bad;
    }
    return fails;
}

// --task-ignore: flipflop's instructions are ignores with about the given
// probability; selective copy keeps its n digits among n·P/(1 − P) noise
// tokens (the paper's blank/non-blank ratio), so the answer keeps its
// length and the question's share of noise is P; P = 0.5 makes the very
// instances of the task's own density; the answers stay right, and the
// tasks without a density refuse it.
static int test_task_density(void) {
    int fails = 0;
    static int tok[4 * TASK_MAX_SIZE], tok2[4 * TASK_MAX_SIZE];
    static unsigned char ans[4 * TASK_MAX_SIZE], ans2[4 * TASK_MAX_SIZE];
    static char text[4 * TASK_MAX_SIZE], got[4 * TASK_MAX_SIZE], want[4 * TASK_MAX_SIZE];
    const struct { const char *task; float p; } cases[] = {
        {"flipflop", 0.98f}, {"flipflop", 0.1f}, {"selective-copy", 0.333f}, {"selective-copy", 0.67f}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int task = task_find(cases[c].task), n = 40, digits_right = 1;
        rng_t r = {99};
        long ignored = 0, all = 0;
        for (int i = 0; i < 200; i++) {
            int len = task_make(task, n, &r, cases[c].p, tok, ans);
            as_text(tok, ans, len, text, got);
            expected(cases[c].task, text, want);
            EXPECT(strcmp(got, want) == 0 && len <= task_len_at(task, n, cases[c].p), "%s at %g: '%s' answers '%s', expected '%s'",
                   cases[c].task, cases[c].p, text, got, want);
            if (task == task_find("flipflop")) {
                for (int t = 2; t < len - 2; t += 2) ignored += text[t] == 'i', all++;
            } else {
                int digits = 0;
                for (int t = 0; text[t] != '|'; t++) ignored += text[t] == '*', all++, digits += text[t] != '*';
                digits_right &= digits == n;
            }
        }
        double share = (double)ignored / (double)all;
        EXPECT(fabs(share - cases[c].p) < 0.02, "%s at %g: a share of %.3f ignored", cases[c].task, cases[c].p, share);
        EXPECT(digits_right, "%s at %g: an instance without its %d digits", cases[c].task, cases[c].p, n);
    }
    int sel = task_find("selective-copy");
    EXPECT(task_len_at(sel, 16, 0.67f) == 66 && task_len_at(sel, 16, -1) == task_len(sel, 16) &&
           task_len_at(sel, 16, 0.333f) == 42, "selective copy's lengths at 2/3, its own and 1/3: %d %d %d",
           task_len_at(sel, 16, 0.67f), task_len_at(sel, 16, -1), task_len_at(sel, 16, 0.333f));
    rng_t a = {5}, b = {5};
    for (int i = 0; i < 50; i++) {
        int n = 1 + i % 16, la = task_make(sel, n, &a, -1, tok, ans), lb = task_make(sel, n, &b, 0.5f, tok2, ans2);
        EXPECT(la == lb && memcmp(tok, tok2, sizeof(int) * (size_t)la) == 0, "size %d: P = 0.5 is not the task's own density", n);
    }
    char err[256];
    EXPECT(!task_check_ignore(task_find("copy"), 0.5, err, sizeof err) && strstr(err, "copy"), "copy took a density");
    EXPECT(!task_check_ignore(sel, 0.7, err, sizeof err), "selective-copy took 0.7 (more than twice as many noise tokens as digits)");
    EXPECT(task_check_ignore(sel, 0.2, err, sizeof err), "selective-copy refused 0.2: %s", err);
    EXPECT(!task_check_ignore(task_find("flipflop"), 1.0, err, sizeof err), "flipflop took 1");
    return fails;
}

// Training rows come from the training sizes, test sizes never overlap them,
// and the same seed gives the same rows (a different one, other rows).
static int test_task_rows_sizes_and_seeds(void) {
    int fails = 0;
    char err[256];
    data_t d, e, f;
    test_data_open(&d, "task:copy", 1, 7);
    EXPECT(data_task_sizes(&d, "3:9", NULL, err, sizeof err), "3:9: %s", err);
    EXPECT(d.n_tests == 2 && d.tests[0].lo == 10 && d.tests[0].hi == 18 && d.tests[1].lo == 19 && d.tests[1].hi == 36,
           "default test sizes of 3:9: %d ranges, %d:%d", d.n_tests, d.tests[0].lo, d.tests[0].hi);
    EXPECT(!data_task_sizes(&d, "3:9", "5:12", err, sizeof err) && strstr(err, "overlaps"), "5:12 overlaps 3:9: '%s'", err);
    EXPECT(!data_task_sizes(&d, "9:3", NULL, err, sizeof err), "9:3 should be refused");
    EXPECT(!data_task_sizes(&d, "1:4", "6:8,", err, sizeof err), "a trailing comma should be refused");
    EXPECT(!data_task_sizes(&d, "1:4", "", err, sizeof err), "no test range should be refused");
    EXPECT(data_task_sizes(&d, "3:9", "10:12,40:50", err, sizeof err) && d.n_tests == 2, "10:12,40:50: %s", err);
    test_data_open(&e, "task:copy", 1, 7);
    test_data_open(&f, "task:copy", 1, 8);
    data_task_sizes(&e, "3:9", NULL, err, sizeof err);
    data_task_sizes(&f, "3:9", NULL, err, sizeof err);
    enum { B = 64, T = 20 };
    static int t1[B * T], g1[B * T], s1[B * T], t2[B * T], g2[B * T], s2[B * T], t3[B * T], g3[B * T], s3[B * T];
    data_next_batch(&d, B, T, t1, g1, s1);
    data_next_batch(&e, B, T, t2, g2, s2);
    data_next_batch(&f, B, T, t3, g3, s3);
    EXPECT(!memcmp(t1, t2, sizeof t1) && !memcmp(g1, g2, sizeof g1), "the same seed gave other rows");
    EXPECT(memcmp(t1, t3, sizeof t1) != 0, "seeds 7 and 8 gave the same rows");
    for (int b = 0; b < B; b++) {
        int len = 0, targets = 0;
        while (len < T && t1[b * T + len] != TT_PAD) len++;
        for (int t = 0; t < T; t++) targets += g1[b * T + t] >= 0;
        int n = (len - 2) / 2;  // copy: 2n + 2 tokens, n + 1 answer tokens predicted
        EXPECT(n >= 3 && n <= 9 && targets == n + 1, "row %d: size %d (tokens %d), %d targets", b, n, len, targets);
    }
    data_close(&d), data_close(&e), data_close(&f);
    return fails;
}

// The scoring counts a row right only when every target is the argmax.
static int test_exact_match_scoring(void) {
    int fails = 0;
    enum { B = 4, T = 3, V = 5 };
    float z[B * T * V];
    memset(z, 0, sizeof z);
    int tgt[B * T] = {2, 3, -1,   // row 0: both right
                      1, 4, -1,   // row 1: the second wrong
                      -1, -1, -1, // row 2: nothing to score
                      0, -1, 2};  // row 3: the first wrong
    int best[B * T] = {2, 3, 0, 1, 0, 0, 0, 0, 0, 1, 0, 2};
    for (int i = 0; i < B * T; i++) z[i * V + best[i]] = 1.0f;
    int scored, right = eval_rows_all_right(z, tgt, B, T, V, &scored);
    EXPECT(right == 1 && scored == 3, "right %d of %d scored (expected 1 of 3)", right, scored);
    return fails;
}

const test_case task_tests[] = {
    {"task/generators_answer_right", test_generators_answer_right},
    {"task/density", test_task_density},
    {"task/rows_sizes_and_seeds", test_task_rows_sizes_and_seeds},
    {"task/exact_match_scoring", test_exact_match_scoring},
};
const int n_task_tests = sizeof task_tests / sizeof task_tests[0];
