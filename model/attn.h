// attn.h — multi-head scaled dot-product attention with a pluggable relative
// position encoding, causal or bidirectional, with optional segments.
#ifndef PELAB_ATTN_H
#define PELAB_ATTN_H

#include <stddef.h>

#include "pe/pe.h"

// Rows of the score matrix computed at a time, by default. Evaluation keeps
// only a (chunk, T) block per thread, so its memory is linear in T.
#define ATTN_CHUNK 64

typedef struct {
    int B, T, C, NH;
    int causal;        // mask keys j > i
    const int *seg;    // (B, T) or NULL: query i sees key j only when seg equal
    pe_t *rel;         // relative encoding, or NULL
    const float *params;
    int layer;
    int chunk;         // query rows per block
    const int *pos;    // (B, T) positions for the encoding, or NULL: 0..T-1 (--rand-pos)
    double *stats;     // (NH, ATTN_NSTAT) this layer's weights summed into it (--attn-stats), or NULL
} attn_dims;

// --attn-stats: where the weights go, summed over query rows, per head: the
// weight on key 0 (the window's first token) and its count of rows (rows
// i >= 1), then for each distance D of attn_stat_dist the weight on keys at
// least D away and its count of rows (the rows that have such a key).
#define ATTN_STAT_DISTS 3
#define ATTN_NSTAT (2 + 2 * ATTN_STAT_DISTS)
extern const int attn_stat_dist[ATTN_STAT_DISTS];

// Floats of per-thread scratch attention needs for a context of T in blocks
// of chunk rows (two blocks: the fused backward keeps weights and their
// gradients).
size_t attn_scratch_floats(int T, int chunk);

// y (B, T, C); att (B, NH, T, T) saves the weights for backward, or NULL at
// evaluation; qkv (B, T, 3C) after the q/k transform; scratch: per thread
// attn_scratch_floats(T, chunk) floats.
void attn_forward(float *y, float *att, const float *qkv, const attn_dims *d, float *scratch);
// dqkv (B, T, 3C) +=; grads: the encoding's gradients; dy (B, T, C).
void attn_backward(float *dqkv, float *grads, const float *dy, const float *att,
                   const float *qkv, const attn_dims *d, float *scratch);

// The fused kernel (--attn-kernel fused): the same attention without the
// (T, T) weights. Causal rows are taken 16 at a time, each with only the keys
// up to its last row, so little of the masked half is computed. stats (B,
// NH, T, 2) receives each row's softmax maximum and 1/sum for the backward
// pass (NULL at evaluation), which recomputes the scores and weights from
// them block by block.
void attn_fused_forward(float *y, float *stats, const float *qkv, const attn_dims *d, float *scratch);
void attn_fused_backward(float *dqkv, float *grads, const float *dy, const float *stats, const float *qkv,
                         const attn_dims *d, float *scratch);

#endif
