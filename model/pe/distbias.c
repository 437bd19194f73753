// distbias.c — see distbias.h.
#include "distbias.h"

#include <stdlib.h>
#include <string.h>

#include "../../core/common.h"

int distbias_size(distbias *db, int H, int T) {
    if (db->bias && db->T == T && db->H == H) return 0;
    size_t n = size_mul((size_t)H, 2 * (size_t)T - 1, "distance bias table");
    free(db->bias), free(db->grad);
    db->bias = xcalloc(n, sizeof(float));
    db->grad = xcalloc(n, sizeof(float));
    db->T = T, db->H = H;
    return 1;
}

size_t distbias_floats(int H, int T) { return 2 * (size_t)H * (2 * (size_t)T - 1); }

float *distbias_row(const distbias *db, int h) { return db->bias + (size_t)h * (2 * db->T - 1); }
float *distbias_grad_row(const distbias *db, int h) { return db->grad + (size_t)h * (2 * db->T - 1); }

void distbias_add(const distbias *db, int h, int i0, int nq, int nk, float *s, int lds, const int *pos) {
    const float *bias = distbias_row(db, h) + db->T - 1;  // bias[n] is b_h(n)
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        float *row = s + (size_t)r * lds;
        if (pos)
            for (int j = 0; j < nk; j++) row[j] += bias[pos[i] - pos[j]];
        else
            for (int j = 0; j < nk; j++) row[j] += bias[i - j];
    }
}

void distbias_accumulate(distbias *db, int h, int i0, int nq, int nk, const float *ds, int lds, const int *pos) {
    float *grad = distbias_grad_row(db, h) + db->T - 1;
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        const float *row = ds + (size_t)r * lds;
        if (pos)
            for (int j = 0; j < nk; j++) grad[pos[i] - pos[j]] += row[j];
        else
            for (int j = 0; j < nk; j++) grad[i - j] += row[j];
    }
}

void distbias_zero_grad(distbias *db) {
    if (db->grad) memset(db->grad, 0, sizeof(float) * (size_t)db->H * (2 * db->T - 1));
}

void distbias_free(distbias *db) {
    free(db->bias), free(db->grad);
    memset(db, 0, sizeof *db);
}

void distbias_score_forward(pe_t *pe, const float *params, int layer, int h, int b, const float *q, const float *k,
                            int ld, int i0, int nq, int nk, float *s, int lds, const int *pos) {
    distbias_add(pe->state, h, i0, nq, nk, s, lds, pos);
}

void distbias_score_backward(pe_t *pe, const float *params, float *grads, int layer, int h, int b, const float *q,
                             const float *k, int ld, float *dq, float *dk, int i0, int nq, int nk,
                             const float *ds, int lds, const int *pos) {
    distbias_accumulate(pe->state, h, i0, nq, nk, ds, lds, pos);
}

size_t distbias_table_floats(const pe_t *pe, int T, int chunk) { return distbias_floats(pe->cfg->heads, T); }

void distbias_free_state(pe_t *pe) {
    if (pe->state) distbias_free(pe->state);
    free(pe->state);
    pe->state = NULL;
}
