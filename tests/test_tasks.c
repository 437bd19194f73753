// test_tasks.c — the task generators (data/tasks.c) against answers
// recomputed here from the question as text, the rows they make, the size
// ranges, and the exact-match scoring on hand-made logits.
#include <stdlib.h>
#include <string.h>

#include "../eval/eval.h"
#include "test.h"

enum { PER_TASK = 1000 };

// The instance as text, and its answer tokens as text in order.
static void as_text(const int *tok, const unsigned char *ans, int len, char *text, char *answer) {
    int na = 0;
    for (int t = 0; t < len; t++) {
        text[t] = task_token_char(tok[t]);
        if (ans[t]) answer[na++] = text[t];
    }
    text[len] = answer[na] = 0;
}

// Every instance's answer is what the question implies; its shape is the
// task's (digits where digits go, lengths as task_len says).
static int test_generators_answer_right(void) {
    int fails = 0;
    static int tok[4 * TASK_MAX_SIZE];
    static unsigned char ans[4 * TASK_MAX_SIZE];
    static char text[4 * TASK_MAX_SIZE], got[4 * TASK_MAX_SIZE], want[4 * TASK_MAX_SIZE];
    for (int task = 0; task < task_count(); task++) {
        int bad = 0;
        const char *name = task_name(task);
        rng_t r = {1234 + (unsigned long long)task};
        for (int i = 0; i < PER_TASK && !bad; i++) {
            int n = 1 + i % 16;  // addition's numbers stay within 64 bits
            int len = task_make(task, n, &r, -1, tok, ans);
            as_text(tok, ans, len, text, got);
            task_answer_of(task, text, want);
            int flip = !strcmp(name, "flipflop");
            if (len < 1 || len > task_len(task, n) || strcmp(got, want) || (!flip && (!strchr(text, '|') || text[len - 1] != '.'))) {
                printf("    %s n=%d: '%s' answers '%s', expected '%s' (len %d, at most %d)\n", name, n, text, got,
                       want, len, task_len(task, n));
                bad = 1;
            }
            for (int t = 0; t < len && !bad; t++)
                if (tok[t] <= TT_MASK || tok[t] >= TT_VOCAB) printf("    %s: token %d at %d\n", name, tok[t], t), bad = 1;
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
            task_answer_of(task, text, want);
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

// Every task of the registry is named where a user looks: docs/data.md's
// table of tasks, --help's --data text, and the refusal of an unknown task.
static int test_tasks_named_everywhere(void) {
    int fails = 0;
    static char page[1 << 17], help[1 << 16], refusal[4096];
    FILE *f = fopen("docs/data.md", "rb");
    size_t n = f ? fread(page, 1, sizeof page - 1, f) : 0;
    if (f) fclose(f);
    page[n] = 0;
    f = popen("./train --help 2>&1", "r");
    n = f ? fread(help, 1, sizeof help - 1, f) : 0;
    if (f) pclose(f);
    help[n] = 0;
    f = popen("./train --data task:no-such-task --steps 1 2>&1", "r");
    n = f ? fread(refusal, 1, sizeof refusal - 1, f) : 0;
    if (f) pclose(f);
    refusal[n] = 0;
    for (int task = 0; task < task_count(); task++) {
        char row[64];
        snprintf(row, sizeof row, "| `%s` |", task_name(task));
        EXPECT(strstr(page, row), "docs/data.md's table of tasks has no row %s", row);
        EXPECT(strstr(help, task_name(task)), "--help does not name the task %s", task_name(task));
        EXPECT(strstr(refusal, task_name(task)), "the refusal of an unknown task does not name %s: %.300s", task_name(task),
               refusal);
    }
    return fails;
}

const test_case task_tests[] = {
    {"task/named_everywhere", test_tasks_named_everywhere},
    {"task/generators_answer_right", test_generators_answer_right},
    {"task/density", test_task_density},
    {"task/rows_sizes_and_seeds", test_task_rows_sizes_and_seeds},
    {"task/exact_match_scoring", test_exact_match_scoring},
};
const int n_task_tests = sizeof task_tests / sizeof task_tests[0];
