// pe.h — the position-encoding interface.
//
// An encoding is one file in model/ that fills a pe_ops table. Each hook is
// optional (NULL = the encoding does not act there):
//   declare           adds the encoding's parameters to the model's table
//   input_*           absolute encodings: x (B, T, C) += P(t)
//   qk_*              transform q and k in place (RoPE)
//   layer_begin       per-layer work before attention's forward (XL: W_R r)
//   table_floats      the size of the tables it keeps for a context of T
//   score_*           add a bias to the scaled scores s_ij of one head
//   value_*           add to the attention output of one head (Shaw's aV)
//   layer_end         per-layer work after attention's backward (reductions)
// Attention runs heads in parallel, one head per thread at a time, so a hook
// may write gradients that belong to its head; anything shared by heads goes
// through per-head scratch that layer_end reduces in head order (this keeps
// runs bit-reproducible).
#ifndef PELAB_PE_H
#define PELAB_PE_H

#include <stddef.h>

#include "params.h"

typedef struct model_config model_config;

// Evaluation-only RoPE context extension (SPEC: --rope-scale).
enum { ROPE_SCALE_NONE = 0, ROPE_SCALE_PI, ROPE_SCALE_NTK, ROPE_SCALE_YARN };

typedef struct pe pe_t;

typedef struct pe_ops {
    const char *name;
    int absolute;  // 1 for encodings that add to the input
    void (*init)(pe_t *pe, param_table *tab);
    void (*free)(pe_t *pe);

    // x (B, T, C) += P(t), positions 0..T-1
    void (*input_forward)(pe_t *pe, const float *params, float *x, int B, int T);
    // dx (B, T, C)
    void (*input_backward)(pe_t *pe, float *grads, const float *dx, int B, int T);

    // qkv (B, T, 3C): rotate the q and k parts in place; backward maps the
    // gradient of the rotated q, k back to the unrotated ones, in place.
    void (*qk_forward)(pe_t *pe, float *qkv, int B, int T);
    void (*qk_backward)(pe_t *pe, float *dqkv, int B, int T);

    void (*layer_begin)(pe_t *pe, const float *params, int layer, int T);
    // Floats of tables and scratch the encoding allocates for a context of T
    // (for the memory estimate before a long evaluation); NULL = negligible.
    size_t (*table_floats)(const pe_t *pe, int T);
    void (*layer_end)(pe_t *pe, const float *params, float *grads, int layer, int T);

    // One head h of one sequence: query rows i0..i0+nq-1, keys 0..nk-1.
    // q (nq, ld) starts at row i0; k (nk, ld); s (nq, lds) += bias.
    void (*score_forward)(pe_t *pe, const float *params, int layer, int h,
                          const float *q, const float *k, int ld,
                          int i0, int nq, int nk, float *s, int lds);
    // ds (nq, lds): gradient of the scaled scores; adds into dq, dk (same
    // layout as q, k) and the encoding's gradients.
    void (*score_backward)(pe_t *pe, const float *params, float *grads, int layer, int h,
                           const float *q, const float *k, int ld, float *dq, float *dk,
                           int i0, int nq, int nk, const float *ds, int lds);
    // p (nq, ldp) attention weights; y (nq, ldy) += Σ_j p_ij a(i, j)
    void (*value_forward)(pe_t *pe, const float *params, int layer, int h,
                          const float *p, int ldp, int i0, int nq, int nk,
                          float *y, int ldy);
    // dp (nq, ldp) += ∂/∂p; the encoding's gradients from dy (nq, ldy)
    void (*value_backward)(pe_t *pe, const float *params, float *grads, int layer, int h,
                           const float *p, int ldp, int i0, int nq, int nk,
                           const float *dy, int ldy, float *dp, int lddp);
} pe_ops;

struct pe {
    const pe_ops *ops;
    const model_config *cfg;
    int tensor[4];   // indices into the param table of the tensors it declared
    size_t off[4];   // their offsets in the parameter buffer
    int rope_scale;  // ROPE_SCALE_*, evaluation only
    float rope_factor;
    void *state;     // the encoding's private data
};

// Looks up an encoding by name; NULL when unknown.
const pe_ops *pe_find(const char *name);
// Names of all encodings, for --help and messages: "none, sinusoidal, ..."
const char *pe_names(void);

extern const pe_ops pe_none_ops, pe_sinusoidal_ops, pe_learned_ops;

#endif
