// ops.h — the position-independent layers, forward and backward side by side.
// Backward functions add (+=) into their gradient outputs.
#ifndef PELAB_OPS_H
#define PELAB_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

// e^x for the elementwise loops (GELU, softmax), written as straight-line
// float arithmetic so that the compiler can vectorise the loops that call it
// (glibc's expf is a scalar call). x = n ln2 + r with |r| <= ln2/2;
// e^r by its Taylor series to r^7 (truncation < 6e-9), 2^n built in the
// exponent bits. Within 2 ulp of expf over [-87, 88] (tests/test_kernels.c
// checks it); saturates at e^-87 and e^88 outside, passes NaN through.
static inline float ops_expf(float x) {
    x = x > 88.0f ? 88.0f : x;
    x = x < -87.0f ? -87.0f : x;
    // 1.5·2^23 pushes x/ln2 rounded to an integer into t's low mantissa bits
    float t = x * 1.44269504f + 12582912.0f;
    float n = t - 12582912.0f;
    float r = x - n * 0.693359375f;  // ln2 in two parts: 0.693359375 is exact
    r = r + n * 2.12194440e-4f;      // ln2 = 0.693359375 - 2.12194440e-4
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t bits;  // unsigned: the shift of a NaN's bits is then defined
    memcpy(&bits, &t, sizeof bits);
    bits = (bits - 0x4B400000u + 127u) << 23;  // 2^n
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// y[i] = expf(x[i]) for n floats, bit for bit what glibc's expf returns
// (the algorithm every glibc since 2.27 uses, in its fused multiply-add
// form; x86-64 glibc picks that form on every CPU with FMA), eight at a
// time in AVX-512 or AVX2 with FMA where the build has it, by calling expf
// elsewhere. For the
// exponentials whose bits results already depend on (CoPE's gates, FIRE's
// SiLU): those loops keep their bits and lose the call per element.
// tests/test_kernels.c compares it with expf over a sweep of every float
// exponent. y may be x.
void ops_expf_exact(float *y, const float *x, size_t n);
// y[i] = 1 + expf(-x[i]), the same way (the logistic's denominator). y may be x.
void ops_one_plus_exp_neg(float *y, const float *x, size_t n);

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
// dinp (N, IC) (may be NULL) is written; dw (OC, IC) and dbias (OC) (or
// NULL) are added to.
void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                     const float *inp, const float *w, size_t N, int IC, int OC);

// GELU, tanh approximation. out, inp (n)
void gelu_forward(float *out, const float *inp, size_t n);
// dinp (n) = GELU'(inp) · dout, written.
void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);

// x (n) = 0, threaded.
void ops_zero(float *x, size_t n);
// Σ x², in double, threaded; bit-identical for any thread count.
double ops_sum_squares(const float *x, size_t n);

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
