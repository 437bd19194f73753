// mlp.h — the small scalar-input MLP of the learned-function encodings
// (dynamic position bias, FIRE): x → SiLU(W₁x + b₁) [→ SiLU(W₂h + b₂)] → W_o h + b_o,
// PE_MLP_WIDTH hidden units per hidden layer, `out` outputs (one per head),
// `copies` independent copies (one per layer, or one shared).
#ifndef PELAB_PE_MLP_H
#define PELAB_PE_MLP_H

#include "pe.h"

enum { PE_MLP_WIDTH = 32 };

typedef struct {
    int slot;    // first of the encoding's tensor slots it uses (2 per layer of the MLP)
    int depth;   // hidden layers: 1 or 2
    int out;     // outputs
} pe_mlp;

// Declares the tensors "PREFIX_w1", "PREFIX_b1", … in slots slot.. of pe.
// Initial weights: hidden N(0, 1/fan_in), output N(0, 0.02²), biases 0.
void pe_mlp_declare(const pe_mlp *mlp, pe_t *pe, param_table *tab, const char *prefix, int copies);
// out[0..out) = MLP_copy(x).
void pe_mlp_forward(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, float x, float *out);
// Adds the gradients of copy from dout (out) and returns ∂/∂x.
float pe_mlp_backward(const pe_mlp *mlp, const pe_t *pe, const float *params, float *grads, int copy, float x,
                      const float *dout);

// What a forward pass keeps for the backward pass (each hidden unit's
// activation and SiLU′), per input.
size_t pe_mlp_kept_floats(const pe_mlp *mlp);
// The forward pass of n inputs x[0..n): out (n × out) and, when keep is not
// NULL, what the backward pass needs of them (n·pe_mlp_kept_floats floats,
// laid out as pe_mlp_backward_kept reads them).
// The same bits as pe_mlp_forward of each.
void pe_mlp_forward_many(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, int n, const float *x,
                         float *out, float *keep);

// The same into a compact buffer of pe_mlp_floats(mlp) floats (the gradient
// of one copy), so that threads can each sum their own share; pe_mlp_add
// then adds such a buffer to the gradient of copy.
size_t pe_mlp_floats(const pe_mlp *mlp);
float pe_mlp_backward_local(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, float x,
                            const float *dout, float *local);
// The same for n inputs at once from what pe_mlp_forward_many kept of them
// (its keep for the same n inputs; dout n × out), the inputs whose active[p]
// is set one after the other (dx[p] = ∂/∂x[p]; the others are skipped): the
// same bits as pe_mlp_backward_local of each in turn.
void pe_mlp_backward_kept(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, int n, const float *x,
                          const float *dout, const unsigned char *active, const float *keep, float *local, float *dx);
void pe_mlp_add(const pe_mlp *mlp, const pe_t *pe, float *grads, int copy, const float *local);

#endif
