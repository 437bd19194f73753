// test_engine.c — the matrix engines (model/gemm.h): each one's products
// against double precision; the whole model's gradients under each engine
// against the first's; and the tests whose numbers pass through the engine
// (the PyTorch reference, bit-identical reruns, the causal mask) again under
// every engine built in that the rest of the suite did not use (the suite
// runs under --gemm auto's pick, as ./train does; --threads under each
// engine: cli/threads_do_not_change_the_bits*).
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../model/gemm.h"
#include "../run/settings.h"
#include "test.h"

static float round_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

static float as_is(float f) { return f; }

// 40 products of random shapes, transpositions, strides, alpha and beta by
// gemm_sgemm (the engine and precision in use) against double precision on
// the inputs as `in` gives them (as_is, or rounded to bf16: then only the
// fp32 accumulation's rounding may differ). `what` names the engine.
static int products_match_double(const char *what, float (*in)(float), unsigned seed) {
    int fails = 0;
    rng_t r = {seed};
    for (int trial = 0; trial < 40; trial++) {
        int M = 1 + (int)rng_below(&r, 150), N = 1 + (int)rng_below(&r, 150), K = 1 + (int)rng_below(&r, 300);
        int ta = (int)rng_below(&r, 2), tb = (int)rng_below(&r, 2), pad = (int)rng_below(&r, 5);
        int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
        float alpha = trial % 3 ? 1.0f : 0.37f, beta = (float)(trial % 2);
        size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
        float *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb), *C = malloc(sizeof(float) * nc);
        test_fill_normal(A, na, 1.0f, 100 * seed + trial), test_fill_normal(B, nb, 1.0f, 100 * seed + 50 + trial);
        test_fill_normal(C, nc, 1.0f, 100 * seed + 99 - trial);
        double worst = 0;
        double *ref = malloc(sizeof(double) * (size_t)M * N);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < K; k++)
                    s += (double)in(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                         in(tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
                ref[(size_t)i * N + j] = alpha * s + beta * C[(size_t)i * ldc + j];
            }
        gemm_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double d = fabs(C[(size_t)i * ldc + j] - ref[(size_t)i * N + j]);
                if (!(d <= worst)) worst = d;
            }
        // a float sum of K products of N(0,1) numbers: error ~ K·2^-24·√K
        double tol = 1e-5 * K * sqrt((double)K) + 1e-5;
        EXPECT(worst <= tol, "%s: M=%d N=%d K=%d trans %d%d ld %d/%d/%d alpha %g beta %g: off by %g (tolerance %g)",
               what, M, N, K, ta, tb, lda, ldb, ldc, alpha, beta, worst, tol);
        free(A), free(B), free(C), free(ref);
    }
    return fails;
}

// Every engine built in, against double precision.
static int test_engines_match_double(void) {
    int fails = 0, tried = 0;
    const char *before = gemm_name();
    for (int e = 0; e < gemm_engine_count; e++) {
        char err[256];
        if (!gemm_use(gemm_engines[e].name, err, sizeof err)) {
            printf("    %s\n", err);
            continue;
        }
        tried++;
        fails += products_match_double(gemm_engines[e].name, as_is, 1);
    }
    char err[256];
    gemm_use(before, err, sizeof err);
    EXPECT(tried >= 1, "no engine could be used");
    return fails;
}

// The OpenBLAS engine clears C itself and asks for beta = 1 where a product
// has beta = 0 (gemm.c): the same bits as cblas_sgemm's own beta = 0, over C
// filled with NaN, for 40 random shapes, transpositions and strides.
static int test_openblas_beta0_same_bits(void) {
    int fails = 0;
    char err[256];
    const char *before = gemm_name();
    EXPECT(gemm_use("openblas", err, sizeof err), "%s", err);
    rng_t r = {7};
    for (int trial = 0; trial < 40 && !fails; trial++) {
        int M = 1 + (int)rng_below(&r, 150), N = 1 + (int)rng_below(&r, 300), K = 1 + (int)rng_below(&r, 300);
        int ta = (int)rng_below(&r, 2), tb = (int)rng_below(&r, 2), pad = (int)rng_below(&r, 5);
        int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
        float alpha = trial % 3 ? 1.0f : 0.37f;
        size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
        float *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb);
        float *mine = malloc(sizeof(float) * nc), *theirs = malloc(sizeof(float) * nc);
        test_fill_normal(A, na, 1.0f, 300 + trial), test_fill_normal(B, nb, 1.0f, 400 + trial);
        for (size_t i = 0; i < nc; i++) mine[i] = theirs[i] = NAN;
        gemm_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, 0.0f, mine, ldc);
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                    lda, B, ldb, 0.0f, theirs, ldc);
        size_t differ = 0;
        for (int i = 0; i < M; i++)
            differ += memcmp(mine + (size_t)i * ldc, theirs + (size_t)i * ldc, sizeof(float) * N) != 0;
        EXPECT(differ == 0, "M=%d N=%d K=%d trans %d%d ld %d/%d/%d alpha %g: %zu rows differ from cblas_sgemm's", M, N,
               K, ta, tb, lda, ldb, ldc, alpha, differ);
        free(A), free(B), free(mine), free(theirs);
    }
    gemm_use(before, err, sizeof err);
    return fails;
}

// 1 when engine e is built in and is not the one named `in_use`.
static int other_engine(int e, const char *in_use) {
    char why[200];
    return strcmp(gemm_engines[e].name, in_use) != 0 && gemm_engines[e].available(why, sizeof why);
}

// The whole model's loss and gradients, every encoding and mode, under the
// engine in use and under each other one: the same to float rounding. With
// grad/model_every_tensor_every_encoding (finite differences under the
// first engine) this checks every engine's gradients without repeating the
// slow finite differences. Tolerances: loss 1e-5 relative; each tensor's
// gradient within 1e-4 of that tensor's largest element (products of 16 to
// 64 terms summed in another order differ in the last few bits).
static int test_gradients_agree_across_engines(void) {
    int fails = 0, compared = 0;
    char before[32], err[256];
    snprintf(before, sizeof before, "%s", gemm_name());
    for (int e = 0; e < gemm_engine_count; e++) {
        if (!other_engine(e, before)) continue;
        for (int i = 0; i < n_test_encodings; i++)
            for (int causal = 0; causal < 2; causal++) {
                if (!test_mode_allowed(test_encodings[i], causal)) continue;
                model_config cfg;
                test_tiny_config(&cfg, test_encodings[i], causal);
                model_t m;
                model_create(&m, &cfg);
                test_randomise_weights(&m, 31);
                int B = 2, T = 40;
                model_acts a;
                model_acts_alloc(&a, &m, B, T, 1);
                int tok[2 * 40], tgt[2 * 40], seg[2 * 40];
                test_random_batch(B, T, cfg.vocab, causal, 4, tok, tgt, seg);
                double loss[2];
                float *g[2];
                for (int k = 0; k < 2; k++) {
                    gemm_use(k ? gemm_engines[e].name : before, err, sizeof err);
                    loss[k] = model_forward(&m, &a, tok, tgt, seg);
                    model_zero_grad(&m);
                    model_backward(&m, &a, tok, tgt, seg);
                    g[k] = malloc(sizeof(float) * m.tab.total);
                    memcpy(g[k], m.grads, sizeof(float) * m.tab.total);
                }
                EXPECT(fabs(loss[0] - loss[1]) <= 1e-5 * fabs(loss[0]), "pe=%s %s: loss %.8f under %s, %.8f under %s",
                       test_encodings[i], causal ? "causal" : "bidir", loss[0], before, loss[1], gemm_engines[e].name);
                for (int t = 0; t < m.tab.n; t++) {
                    const tensor_info *ti = &m.tab.t[t];
                    double big = 0, off = 0;
                    for (size_t j = ti->offset; j < ti->offset + ti->size; j++) {
                        big = fmax(big, fabs(g[0][j]));
                        off = fmax(off, fabs(g[0][j] - g[1][j]));
                    }
                    EXPECT(off <= 1e-4 * big + 1e-7, "pe=%s %s: gradient of %s differs by %g (largest element %g) between "
                           "%s and %s", test_encodings[i], causal ? "causal" : "bidir", ti->name, off, big, before,
                           gemm_engines[e].name);
                }
                compared++;
                free(g[0]), free(g[1]);
                model_acts_free(&a);
                model_free(&m);
            }
    }
    gemm_use(before, err, sizeof err);
    if (!compared) {
        printf("    only %s is built in: nothing to compare\n", before);
        return TEST_SKIPPED;
    }
    return fails;
}

// The tests run again under each other engine.
static const char *const under_each_engine[] = {
    "torch/loss_and_gradients_every_encoding",
    "prop/same_seed_bit_identical",
    "prop/causal_logits_ignore_future_every_encoding",
};

static int test_again_under_other_engines(void) {
    int fails = 0, ran = 0;
    char before[32], err[256];
    snprintf(before, sizeof before, "%s", gemm_name());
    for (int e = 0; e < gemm_engine_count; e++) {
        if (!other_engine(e, before)) continue;
        if (!gemm_use(gemm_engines[e].name, err, sizeof err)) {
            printf("    %s\n", err);
            continue;
        }
        for (size_t i = 0; i < sizeof under_each_engine / sizeof under_each_engine[0]; i++) {
            const test_case *t = test_find(under_each_engine[i]);
            EXPECT(t, "no test named %s", under_each_engine[i]);
            if (!t) continue;
            int f = t->fn();
            printf("    %s under --gemm %s: %s\n", t->name, gemm_engines[e].name,
                   f == TEST_SKIPPED ? "skipped" : f ? "FAILED" : "ok");
            if (f > 0) fails += f;
            ran++;
        }
    }
    gemm_use(before, err, sizeof err);
    if (!ran) {
        printf("    only %s is built in: nothing to run again\n", before);
        return TEST_SKIPPED;
    }
    return fails;
}

// bf16 (--precision bf16): products against double precision on the same
// bf16-rounded inputs (only the fp32 accumulation's rounding may differ),
// then the tests whose numbers pass through the products again, the PyTorch
// comparison with its bf16 tolerance (tests/test_torch.c says why).
static int test_bf16(void) {
    int fails = 0;
    char before[32], err[256];
    snprintf(before, sizeof before, "%s", gemm_name());
    if (!gemm_use("onednn", err, sizeof err) || !gemm_set_precision("bf16", err, sizeof err)) {
        printf("    %s\n", err);
        gemm_use(before, err, sizeof err);
        return TEST_SKIPPED;
    }
    fails += products_match_double("onednn, bf16", round_bf16, 2);
    for (size_t i = 0; i < sizeof under_each_engine / sizeof under_each_engine[0]; i++) {
        const test_case *t = test_find(under_each_engine[i]);
        EXPECT(t, "no test named %s", under_each_engine[i]);
        if (!t) continue;
        int f = t->fn();
        printf("    %s under --precision bf16: %s\n", t->name, f == TEST_SKIPPED ? "skipped" : f ? "FAILED" : "ok");
        if (f > 0) fails += f;
    }
    gemm_release();
    gemm_use(before, err, sizeof err);
    return fails;
}

// --gemm's choices, its --help text and docs/options.md follow model/gemm.h's
// engine list: "auto" first, then every engine in the list's order.
static int test_choices_follow_the_engine_list(void) {
    int fails = 0;
    const char *const *ch = settings_find("gemm")->choices;
    int n = 0;
    while (ch[n]) n++;
    EXPECT(n == gemm_engine_count + 1, "--gemm has %d choices for %d engines and auto", n, gemm_engine_count);
    EXPECT(!strcmp(ch[0], "auto"), "--gemm's first choice is '%s', not auto", ch[0]);
    for (int i = 0; i < gemm_engine_count && i + 1 < n; i++)
        EXPECT(!strcmp(ch[i + 1], gemm_engines[i].name), "--gemm's choice %d is '%s', the engine list's '%s'", i + 1,
               ch[i + 1], gemm_engines[i].name);
    const char *help = settings_find("gemm")->help;
    static char doc[1 << 18];
    FILE *f = fopen("docs/options.md", "r");
    size_t got = f ? fread(doc, 1, sizeof doc - 1, f) : 0;
    if (f) fclose(f);
    doc[got] = '\0';
    const char *row = strstr(doc, "| `--gemm");
    const char *eol = row ? strchr(row, '\n') : NULL;
    for (int i = 0; i < gemm_engine_count; i++) {
        EXPECT(strstr(help, gemm_engines[i].name), "--gemm's help does not name the engine %s", gemm_engines[i].name);
        char word[64];
        snprintf(word, sizeof word, "%s", gemm_engines[i].name);
        int in_row = 0;
        for (const char *p = row; p && eol && (p = strstr(p, word)) && p < eol; p++) in_row = 1;
        EXPECT(in_row, "docs/options.md's --gemm row does not name the engine %s", gemm_engines[i].name);
    }
    // ./train --list-gemm (what the lab reads): a line per engine, in the list's order
    static char listed[4096];
    f = popen("./train --list-gemm 2>&1", "r");
    got = f ? fread(listed, 1, sizeof listed - 1, f) : 0;
    int rc = f ? pclose(f) : -1;
    listed[got] = '\0';
    EXPECT(rc == 0, "./train --list-gemm: exit %d: %s", rc, listed);
    const char *line = listed;
    for (int i = 0; i < gemm_engine_count; i++) {
        EXPECT(line && !strncmp(line, gemm_engines[i].name, strlen(gemm_engines[i].name)),
               "--list-gemm's line %d is not the engine %s: %s", i + 1, gemm_engines[i].name, listed);
        line = line ? strchr(line, '\n') : NULL;
        if (line) line++;
    }
    return fails;
}

const test_case engine_tests[] = {
    {"engine/choices_follow_the_engine_list", test_choices_follow_the_engine_list},
    {"engine/bf16_products_and_tests_again", test_bf16},
    {"engine/every_engine_matches_double", test_engines_match_double},
    {"engine/openblas_beta0_same_bits_as_cblas", test_openblas_beta0_same_bits},
    {"engine/gradients_agree_across_engines", test_gradients_agree_across_engines},
    {"engine/tests_again_under_each_other_engine", test_again_under_other_engines},
};
const int n_engine_tests = sizeof engine_tests / sizeof engine_tests[0];
