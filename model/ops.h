// ops.h — the position-independent layers, forward and backward side by side.
// Backward functions add (+=) into their gradient outputs.
#ifndef PELAB_OPS_H
#define PELAB_OPS_H

#include <stddef.h>

// When OpenBLAS fell back to its slowest kernels on a CPU it does not know,
// restarts the program (execv of argv) with OPENBLAS_CORETYPE set to the
// best kernel the CPU supports. Call first thing in main.
int ops_select_blas_kernel(char **argv);

// Sets the OpenMP thread count and holds OpenBLAS to one thread: every
// parallel loop in pelab is OpenMP's.
void ops_init_threads(int threads);

// LayerNorm over the last dim, eps 1e-5.
// out (N, C), mean (N), rstd (N), inp (N, C), w (C), b (C)
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *w, const float *b, size_t N, int C);
// dinp (N, C), dw (C), db (C), dout (N, C)
void layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                        const float *inp, const float *w, const float *mean,
                        const float *rstd, size_t N, int C);

// out (N, OC) = inp (N, IC) · wᵀ + bias;  w (OC, IC), bias (OC) or NULL.
void matmul_forward(float *out, const float *inp, const float *w,
                    const float *bias, size_t N, int IC, int OC);
// dinp (N, IC) (may be NULL), dw (OC, IC), dbias (OC) or NULL
void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                     const float *inp, const float *w, size_t N, int IC, int OC);

// GELU, tanh approximation. out, inp (n)
void gelu_forward(float *out, const float *inp, size_t n);
void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);

// out = a + b, elementwise (n)
void residual_forward(float *out, const float *a, const float *b, size_t n);

// Softmax cross-entropy over V classes per row, only on rows whose target is
// >= 0. Returns the mean loss over those rows and their count in *count.
// probs (N, V) receives the softmax of logits (N, V).
double crossentropy_forward(float *probs, const float *logits, const int *targets,
                            size_t N, int V, size_t *count);
// dlogits (N, V) = (probs - onehot) * dloss / count on rows with a target; 0 elsewhere.
// Overwrites (the logits' only consumer) rather than adds.
void crossentropy_backward(float *dlogits, const float *probs, const int *targets,
                           size_t N, int V, size_t count, float dloss);

#endif
