// test_main.c — runs every suite; `tests/test_pelab [FILTER]` runs the tests
// whose names contain FILTER. Ends with "N passed, N failed, N skipped" (a
// skipped test is never counted as passed) and exits 1 on any failure.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../model/gemm.h"
#include "../model/ops.h"
#include "../core/startup.h"
#include "test.h"

// Every encoding of the registry, then its composites: the list the suites
// sweep, so that a new encoding is covered with no edit here.
#define MAX_TEST_ENCODINGS 64
const char *test_encodings[MAX_TEST_ENCODINGS];
int n_test_encodings;

static void list_test_encodings(void) {
    static char composites[MAX_TEST_ENCODINGS][64];
    for (int i = 0; i < pe_registry_count && n_test_encodings < MAX_TEST_ENCODINGS; i++)
        test_encodings[n_test_encodings++] = pe_registry[i]->name;
    for (int i = 0; n_test_encodings < MAX_TEST_ENCODINGS && pe_composite(i, composites[i], sizeof composites[i]); i++)
        test_encodings[n_test_encodings++] = composites[i];
}

void test_data_open(data_t *d, const char *spec, int causal, unsigned long long seed) {
    char err[512];
    int rc = data_open(d, spec, causal, seed, err, sizeof err);
    if (rc) die_status(rc, err);
}

void test_tiny_model(model_t *m, const data_t *d, const char *pe, int causal) {
    model_config cfg;
    test_tiny_config(&cfg, pe, causal);
    cfg.vocab = d->vocab;
    model_create(m, &cfg);
}

void test_tiny_config(model_config *c, const char *pe, int causal) {
    memset(c, 0, sizeof *c);
    c->vocab = 13, c->ctx = 80, c->d_model = 8, c->layers = 2, c->heads = 2, c->causal = causal;
    snprintf(c->pe, sizeof c->pe, "%s", pe);
    // Values that exercise the tiny model (distances past the clip, a
    // sinusoid of visible size, few buckets), for the encodings that take them;
    // every other option stays at its encoding's default.
    static const struct {
        const char *name;
        double value;
    } tiny[] = {{"sin-scale", 0.35f}, {"rel-clip", 3}, {"t5-buckets", 8}, {"t5-max-distance", 20}};
    const pe_ops *abs, *rel;
    char err[256];
    if (!pe_parse_spec(pe, &abs, &rel, err, sizeof err)) return;
    for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; i++)
        if (pe_option_find(abs, tiny[i].name, NULL) || pe_option_find(rel, tiny[i].name, NULL))
            config_set(c, tiny[i].name, tiny[i].value);
}

int test_mode_allowed(const char *pe, int causal) {
    model_config c;
    char err[256];
    test_tiny_config(&c, pe, causal);
    return model_config_check(&c, err, sizeof err);
}

int test_reads_positions(const char *pe) {
    model_config c;
    char err[256];
    test_tiny_config(&c, pe, 1);
    c.rand_pos = 4 * c.ctx;
    return model_config_check(&c, err, sizeof err);
}

void test_randomise_weights(model_t *m, unsigned long long seed) {
    rng_t r = {seed};
    for (int k = 0; k < m->tab.n; k++) {
        const tensor_info *t = &m->tab.t[k];
        for (size_t i = 0; i < t->size; i++) {
            float z = rng_normal(&r);
            m->params[t->offset + i] = t->init == INIT_ONE ? 1.0f + 0.1f * z : 0.3f * z;
        }
    }
}

// A whole file into a new buffer (*n bytes), or NULL.
static unsigned char *file_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *p = NULL;
    size_t cap = 0;
    *n = 0;
    for (size_t got = 1; got > 0; *n += got) {
        if (*n == cap) p = realloc(p, cap = cap ? 2 * cap : 1 << 16);
        got = fread(p + *n, 1, cap - *n, f);
    }
    fclose(f);
    return p;
}

int test_ckpt_same_run(const char *a, const char *b) {
    size_t n[2];
    unsigned char *f[2] = {file_bytes(a, &n[0]), file_bytes(b, &n[1])};
    const size_t fixed = 28;  // magic, version, flags, parameters, text length
    int same = f[0] && f[1] && n[0] > fixed + 4 && n[1] > fixed + 4 && memcmp(f[0], f[1], 24) == 0;
    const unsigned char *text[2], *rest[2];
    size_t tn[2], rn[2];
    for (int i = 0; same && i < 2; i++) {
        size_t len = f[i][24] | f[i][25] << 8 | (size_t)f[i][26] << 16 | (size_t)f[i][27] << 24;
        same = fixed + len + 4 <= n[i];
        if (!same) break;
        text[i] = f[i] + fixed, tn[i] = len;
        rest[i] = text[i] + len, rn[i] = n[i] - fixed - len - 4;
        const unsigned char *s = NULL;  // the line "seconds=…" (never the first)
        for (size_t k = 0; !s && k + 9 <= len; k++)
            if (memcmp(text[i] + k, "\nseconds=", 9) == 0) s = text[i] + k;
        if (s) {  // the line left out: the text before it, then after it
            const unsigned char *e = memchr(s + 1, '\n', (size_t)(text[i] + len - s - 1));
            size_t cut = e ? (size_t)(e - s) : 0;
            memmove((unsigned char *)s, s + cut, (size_t)(text[i] + len - s - cut));
            tn[i] -= cut;
        }
    }
    same = same && tn[0] == tn[1] && memcmp(text[0], text[1], tn[0]) == 0 && rn[0] == rn[1] &&
           memcmp(rest[0], rest[1], rn[0]) == 0;
    free(f[0]);
    free(f[1]);
    return same;
}

void test_fill_normal(float *x, size_t n, float std, unsigned long long seed) {
    rng_t r = {seed};
    for (size_t i = 0; i < n; i++) x[i] = std * rng_normal(&r);
}

void test_random_batch(int B, int T, int V, int causal, unsigned long long seed, int *tok, int *tgt, int *seg) {
    rng_t r = {seed};
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int i = b * T + t;
            tok[i] = (int)rng_below(&r, V);
            tgt[i] = rng_below(&r, 4) == 0 ? -1 : (int)rng_below(&r, V);
            seg[i] = causal ? 0 : (t * 3) / T;
        }
}

// The suites, in the order they run: a new suite (a file defining
// NAME_tests[] and n_NAME_tests) is one more word here.
#define SUITES(X) X(kernel) X(grad) X(prop) X(data) X(task) X(cli) X(torch) X(mpi) X(engine)
#define DECLARE(s) extern const test_case s##_tests[]; extern const int n_##s##_tests;
SUITES(DECLARE)
#define ENTRY(s) {s##_tests, &n_##s##_tests},
static const struct {
    const test_case *tests;
    const int *n;
} suites[] = {SUITES(ENTRY)};

const test_case *test_find(const char *name) {
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
        for (int k = 0; k < *suites[i].n; k++)
            if (!strcmp(suites[i].tests[k].name, name)) return &suites[i].tests[k];
    return NULL;
}

typedef struct {
    int passed, failed, skipped;
} tally;

static void run_suite(const test_case *tests, int n, tally *t, const char *filter) {
    for (int i = 0; i < n; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        double t0 = now_seconds();
        fflush(stdout);
        int f = tests[i].fn();
        printf("%s %s (%.2fs)\n", f == TEST_SKIPPED ? "skip" : f ? "FAIL" : "ok  ", tests[i].name, now_seconds() - t0);
        fflush(stdout);
        if (f == TEST_SKIPPED) t->skipped++;
        else if (f) t->failed++;
        else t->passed++;
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: tests/test_pelab [FILTER]\n"
               "Runs every test (kernel/, grad/, prop/, task/, cli/, torch/, mpi/ …), or those whose name contains\n"
               "FILTER (e.g. 'grad/' or 'resume'). One line per test (ok, FAIL or skip, with its time), then\n"
               "\"N passed, N failed, N skipped\"; exit 1 on any failure. A test that needs what the machine lacks\n"
               "(PyTorch, MPI) says so and counts as skipped.\n");
        return 0;
    }
    startup_environment(argv);
    // The tests send SIGINT and SIGHUP to the runs they start and expect the
    // trainer's handling of them; a trainer keeps a signal its parent ignores
    // (nohup, a script's background job), so the suite must not hand such a
    // disposition down, however it was itself started.
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    const char *filter = argc > 1 ? argv[1] : NULL;
    // the run folders of the trainings the tests start go to a temporary
    // place (a test of the folders themselves names its own)
    static char runs[] = "/tmp/pelab-runs-XXXXXX";
    int own_runs = !getenv("PELAB_RUNS") && mkdtemp(runs);
    if (own_runs) setenv("PELAB_RUNS", runs, 1), chmod(runs, 01777);  // the runs as another user make theirs too
    list_test_encodings();
    startup_threads(2);
    // the engine ./train picks by default; engine/ runs the tests that pass
    // through it again under the others
    char err[256];
    if (!gemm_use("auto", err, sizeof err)) printf("%s\n", err);
    printf("matrix engine: %s\n", gemm_name());
    tally t = {0, 0, 0};
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) run_suite(suites[i].tests, *suites[i].n, &t, filter);
    if (own_runs) {
        char rm[64];
        snprintf(rm, sizeof rm, "rm -rf %s", runs);
        if (system(rm) != 0) printf("could not remove %s\n", runs);
    }
    printf("%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
    return t.failed ? 1 : 0;
}
