// probe.c — see probe.h.
#include "probe.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/dist.h"
#include "eval.h"

#define PROBE_RIDGE 1e-6  // times the mean diagonal of x·xᵀ: keeps collinear features solvable

static size_t block(int dim) { return (size_t)(dim + 1) * (dim + 1) + (dim + 1) + 3; }

void probe_acc_init(probe_acc *p, int dim) {
    p->dim = dim;
    p->fit = xcalloc(2 * block(dim), sizeof(double));
    p->test = p->fit + block(dim);
}

void probe_acc_free(probe_acc *p) {
    free(p->fit);
    memset(p, 0, sizeof *p);
}

double *probe_acc_sums(probe_acc *p) { return p->fit; }
int probe_acc_size(const probe_acc *p) { return (int)(2 * block(p->dim)); }

void probe_acc_add(probe_acc *p, int test, const float *X, const double *y, int n) {
    const int D = p->dim + 1;
    double *s = test ? p->test : p->fit, *xy = s + (size_t)D * D, *tail = xy + D;
    double *Z = xmalloc(sizeof(double) * (size_t)n * D);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < p->dim; k++) Z[(size_t)i * D + k] = X[(size_t)i * p->dim + k];
        Z[(size_t)i * D + p->dim] = 1.0;
        tail[0] += y[i], tail[1] += y[i] * y[i];
    }
    tail[2] += n;
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, D, n, 1.0, Z, D, 1.0, s, D);
    cblas_dgemv(CblasRowMajor, CblasTrans, n, D, 1.0, Z, D, y, 1, 1.0, xy, 1);
    free(Z);
}

// Solves A w = b for symmetric positive definite A (upper triangle given), in
// place by Cholesky; 0 when A is not positive definite.
static int cholesky_solve(double *A, double *b, int D) {
    for (int j = 0; j < D; j++) {
        double s = A[(size_t)j * D + j];
        for (int k = 0; k < j; k++) s -= A[(size_t)k * D + j] * A[(size_t)k * D + j];
        if (!(s > 0)) return 0;
        A[(size_t)j * D + j] = sqrt(s);
        for (int i = j + 1; i < D; i++) {  // R (upper): Rᵀ R = A
            double t = A[(size_t)j * D + i];
            for (int k = 0; k < j; k++) t -= A[(size_t)k * D + j] * A[(size_t)k * D + i];
            A[(size_t)j * D + i] = t / A[(size_t)j * D + j];
        }
    }
    for (int i = 0; i < D; i++) {  // Rᵀ z = b
        double t = b[i];
        for (int k = 0; k < i; k++) t -= A[(size_t)k * D + i] * b[k];
        b[i] = t / A[(size_t)i * D + i];
    }
    for (int i = D - 1; i >= 0; i--) {  // R w = z
        double t = b[i];
        for (int k = i + 1; k < D; k++) t -= A[(size_t)i * D + k] * b[k];
        b[i] = t / A[(size_t)i * D + i];
    }
    return 1;
}

double probe_acc_r2(const probe_acc *p) {
    const int D = p->dim + 1;
    const double *f = p->fit, *t = p->test, *txy = t + (size_t)D * D, *tt = txy + D;
    if (f[(size_t)D * D + D + 2] < 1 || tt[2] < 2) return NAN;
    double *A = xmalloc(sizeof(double) * (size_t)D * D), *w = xmalloc(sizeof(double) * D);
    memcpy(A, f, sizeof(double) * (size_t)D * D);
    memcpy(w, f + (size_t)D * D, sizeof(double) * D);
    double diag = 0;
    for (int k = 0; k < p->dim; k++) diag += A[(size_t)k * D + k];
    for (int k = 0; k < p->dim; k++) A[(size_t)k * D + k] += PROBE_RIDGE * (diag / p->dim + 1e-30);
    double r2 = NAN;
    if (cholesky_solve(A, w, D)) {
        // held-out SSE = Σy² − 2 wᵀΣxy + wᵀ(Σxxᵀ)w, from the upper triangle
        double quad = 0;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) quad += w[i] * w[j] * (i <= j ? t[(size_t)i * D + j] : t[(size_t)j * D + i]);
        double lin = 0;
        for (int i = 0; i < D; i++) lin += w[i] * txy[i];
        double sse = tt[1] - 2 * lin + quad, sst = tt[1] - tt[0] * tt[0] / tt[2];
        r2 = sst > 0 ? 1 - sse / sst : NAN;
    }
    free(A);
    free(w);
    return r2;
}

int eval_probe_positions(model_t *m, const data_t *d, int L, size_t max_tokens, double *r2, char *err, size_t errlen) {
    size_t windows = eval_scorable_windows(m, d, L, max_tokens, err, errlen);
    if (!windows) return -1;
    if (windows < 2) {
        snprintf(err, errlen, "the position probe at ctx=%d needs two validation windows (one to fit, one to score); "
                 "there is one", L);
        return -1;
    }
    const int C = m->cfg.d_model, NL = m->cfg.layers + 1;
    int B = 4096 / L;
    if (B < 1) B = 1;
    if ((size_t)B > windows) B = (int)windows;
    if (!model_fits_in_memory(m, B, L, 0, err, errlen)) return -1;
    model_acts a;
    model_acts_alloc(&a, m, B, L, 0);
    a.eval_len = L;
    size_t BT = (size_t)B * L;
    a.hidden = xmalloc(sizeof(float) * BT * C * NL);
    int *tok = xmalloc(sizeof(int) * BT), *tgt = xmalloc(sizeof(int) * BT), *seg = xmalloc(sizeof(int) * BT);
    double *y = xmalloc(sizeof(double) * L);
    for (int t = 0; t < L; t++) y[t] = t;
    probe_acc *acc = xmalloc(sizeof(probe_acc) * NL);
    for (int l = 0; l < NL; l++) probe_acc_init(&acc[l], C);
    size_t R = (size_t)dist_size();
    for (size_t w0 = (size_t)dist_rank() * B; w0 < windows; w0 += (size_t)B * R) {
        int nb = (int)(windows - w0 < (size_t)B ? windows - w0 : (size_t)B);
        for (int b = 0; b < B; b++) {
            size_t o = (size_t)b * L;
            if (b < nb) data_val_row(d, L, w0 + b, tok + o, tgt + o, seg + o);
            else memcpy(tok + o, tok, sizeof(int) * L), memcpy(seg + o, seg, sizeof(int) * L);  // unread rows
        }
        model_draw_positions(m, &a, EVAL_POSITIONS_SEED, w0 + 1);  // as eval_perplexity draws them
        model_forward(m, &a, tok, NULL, seg);
        for (int l = 0; l < NL; l++)
            for (int b = 0; b < nb; b++)
                probe_acc_add(&acc[l], (int)((w0 + b) % 2), a.hidden + ((size_t)l * B + b) * L * C, y, L);
    }
    for (int l = 0; l < NL; l++) {
        dist_sum_doubles(probe_acc_sums(&acc[l]), probe_acc_size(&acc[l]));
        r2[l] = probe_acc_r2(&acc[l]);
        probe_acc_free(&acc[l]);
    }
    free(acc);
    free(y);
    free(tok);
    free(tgt);
    free(seg);
    free(a.hidden);
    a.hidden = NULL;
    model_acts_free(&a);
    return 0;
}
