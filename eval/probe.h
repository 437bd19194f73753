// probe.h — does the model know where a token is? A linear probe of each
// token's index in its window from the model's hidden states, one per layer
// (docs/model.md: --probe-positions).
#ifndef PELAB_PROBE_H
#define PELAB_PROBE_H

#include "../data/data.h"
#include "../model/model.h"

// Least squares y ≈ w·x + b over rows (x of dim floats), with a small ridge
// on w, fitted on one set of rows and scored on another: held-out R².
typedef struct {
    int dim;
    double *fit, *test;  // each: (dim+1)² x·xᵀ sums (x with a trailing 1), then (dim+1) x·y, then Σy, Σy², n
} probe_acc;
void probe_acc_init(probe_acc *p, int dim);
void probe_acc_free(probe_acc *p);
// Adds n rows X (n, dim) with their y to the fitted set (test = 0) or the held-out set.
void probe_acc_add(probe_acc *p, int test, const float *X, const double *y, int n);
// The held-out R² of the probe fitted on the fitted set (1: every y exactly
// predicted; 0: no better than the held-out mean; below 0: worse), or NaN
// when either set is empty. The sums of several processes are added first
// with dist_sum_doubles (probe_acc_sums / probe_acc_size).
double probe_acc_r2(const probe_acc *p);
double *probe_acc_sums(probe_acc *p);
int probe_acc_size(const probe_acc *p);

// The probe at evaluation length L over at most max_tokens of validation:
// windows of even index fit it, odd ones score it; r2 (layers+1): the input
// (token embedding plus any absolute encoding), then each block's output.
// 0, or -1 with err when L cannot be evaluated or has fewer than 2 windows.
int eval_probe_positions(model_t *m, const data_t *d, int L, size_t max_tokens, double *r2, char *err, size_t errlen);

#endif
