// distbias.h — shared machinery for encodings whose bias depends on the
// distance n = i − j only (KERPLE, Sandwich, dynamic position bias, T5's
// buckets): one
// table b_h(n) per head for the layer being run, added to the scores, and
// the gradient of the loss with respect to each b_h(n), summed over rows and
// sequences, for the encoding to turn into gradients of its parameters.
// Heads run in parallel; each touches only its own row of both tables.
#ifndef PELAB_DISTBIAS_H
#define PELAB_DISTBIAS_H

#include <stddef.h>

typedef struct {
    int T, H;
    float *bias;  // (H, 2T − 1): b_h(n) at index h·(2T − 1) + n + T − 1
    float *grad;  // (H, 2T − 1): ∂loss/∂b_h(n), same layout
} distbias;

// Sizes both tables for T (contents kept when T is unchanged; the gradient
// is zero after a resize). Returns 1 when the tables were (re)made.
int distbias_size(distbias *db, int H, int T);
// Floats both tables take for a context of T.
size_t distbias_floats(int H, int T);
// b_h(n) for n from −(T−1): index with n + T − 1.
float *distbias_row(const distbias *db, int h);
float *distbias_grad_row(const distbias *db, int h);
// s (nq, lds) += b_h(p_i − p_j) for query rows i0.., keys 0..nk−1; p = pos,
// or the indices themselves when pos is NULL. The table must span the
// positions (distbias_size with T = the largest position + 1).
void distbias_add(const distbias *db, int h, int i0, int nq, int nk, float *s, int lds, const int *pos);
// grad_h(p_i − p_j) += ds_ij.
void distbias_accumulate(distbias *db, int h, int i0, int nq, int nk, const float *ds, int lds, const int *pos);
void distbias_zero_grad(distbias *db);
void distbias_free(distbias *db);

// pe_ops hooks for an encoding whose state is a distbias (xcalloc'ed in its
// init): the scores get the table of the layer being run, the backward
// collects the gradient by distance, free releases the state.
#include "pe.h"
void distbias_score_forward(pe_t *pe, const float *params, int layer, int h, int b, const float *q, const float *k,
                            int ld, int i0, int nq, int nk, float *s, int lds, const int *pos);
void distbias_score_backward(pe_t *pe, const float *params, float *grads, int layer, int h, int b, const float *q,
                             const float *k, int ld, float *dq, float *dk, int i0, int nq, int nk,
                             const float *ds, int lds, const int *pos);
size_t distbias_table_floats(const pe_t *pe, int T, int chunk);
void distbias_free_state(pe_t *pe);

#endif
