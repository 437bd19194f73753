// test.h — a small test harness: each test is a function that returns the
// number of failed checks, or TEST_SKIPPED when what it needs is absent (it
// prints why); the runner prints "N passed, N failed, N skipped". A suite is
// one file with a table `const test_case NAME_tests[]` and its count
// `n_NAME_tests`, registered by one word in test_main.c's SUITES.
#ifndef PELAB_TEST_H
#define PELAB_TEST_H

#include <math.h>
#include <stdio.h>

#include "../data/data.h"
#include "../model/model.h"

#define EXPECT(cond, ...)                                          \
    do {                                                           \
        if (!(cond)) {                                             \
            printf("    check failed at %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                                   \
            printf("\n");                                          \
            fails++;                                               \
        }                                                          \
    } while (0)

#define TEST_SKIPPED (-1)

typedef int (*test_fn)(void);
typedef struct {
    const char *name;
    test_fn fn;
} test_case;

// The test named `name` in any suite, or NULL.
const test_case *test_find(const char *name);

// Every encoding and composite the tests sweep.
extern const char *test_encodings[];
extern int n_test_encodings;

// data_open for a test, which names a corpus that must open: a refusal is
// a bug in the test, so it ends the run with the message.
void test_data_open(data_t *d, const char *spec, int causal, unsigned long long seed);

// A tiny model with weights large enough that every path carries gradient.
void test_tiny_config(model_config *c, const char *pe, int causal);
// That model, created for data d's vocabulary (weights not yet set).
void test_tiny_model(model_t *m, const data_t *d, const char *pe, int causal);
// 0 when the encoding refuses the mode (xPos and FIRE are causal only).
int test_mode_allowed(const char *pe, int causal);
// 1 when every part of the encoding reads positions (--rand-pos is allowed).
int test_reads_positions(const char *pe);
void test_randomise_weights(model_t *m, unsigned long long seed);
// Random tokens (B, T) in [0, V), targets with some -1, segments (bidir: 3
// per row) — or seg all 0 when causal.
void test_random_batch(int B, int T, int V, int causal, unsigned long long seed, int *tok, int *tgt, int *seg);

// 1 when two checkpoint files hold the same run: every byte the same but
// the settings line "seconds=" (wall time), its text length and the checksum.
int test_ckpt_same_run(const char *a, const char *b);

// x (n) ~ N(0, std²), from its own seeded stream.
void test_fill_normal(float *x, size_t n, float std, unsigned long long seed);


#endif
