// mlp.c — see mlp.h.
#include "mlp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ops.h"

enum { W = PE_MLP_WIDTH };

// Rows and columns of layer k (0-based) of the MLP.
static void shape(const pe_mlp *mlp, int k, int *rows, int *cols) {
    *cols = k == 0 ? 1 : W;
    *rows = k == mlp->depth ? mlp->out : W;
}

void pe_mlp_declare(const pe_mlp *mlp, pe_t *pe, param_table *tab, const char *prefix, int copies) {
    if (mlp->slot + 2 * (mlp->depth + 1) > PE_MAX_TENSORS)  // the encoding's file fixes depth and slot: a bug there
        die_runtime("internal: an MLP of depth %d from slot %d needs more than the %d tensors an encoding holds",
                    mlp->depth, mlp->slot, PE_MAX_TENSORS);
    for (int k = 0; k <= mlp->depth; k++) {
        int rows, cols;
        shape(mlp, k, &rows, &cols);
        char name[24];
        const char *which = k == mlp->depth ? "o" : k == 0 ? "1" : "2";
        float std = k == mlp->depth ? 0.02f : 1.0f / sqrtf((float)cols);
        snprintf(name, sizeof name, "%s_w%s", prefix, which);
        pe->tensor[mlp->slot + 2 * k] = param_add(tab, name, (size_t)copies * rows * cols, k > 0, INIT_NORMAL, std);
        snprintf(name, sizeof name, "%s_b%s", prefix, which);
        pe->tensor[mlp->slot + 2 * k + 1] = param_add(tab, name, (size_t)copies * rows, 0, INIT_ZERO, 0);
    }
}

// Weights and bias of layer k of copy, in buf (params or grads).
static void layer_ptrs(const pe_mlp *mlp, const pe_t *pe, const float *buf, int copy, int k, float **w, float **b) {
    int rows, cols;
    shape(mlp, k, &rows, &cols);
    *w = (float *)buf + pe->off[mlp->slot + 2 * k] + (size_t)copy * rows * cols;
    *b = (float *)buf + pe->off[mlp->slot + 2 * k + 1] + (size_t)copy * rows;
}

// The same in a compact buffer: w₁, b₁, [w₂, b₂,] w_o, b_o one after the other.
static void local_ptrs(const pe_mlp *mlp, float *local, int k, float **w, float **b) {
    for (int i = 0;; i++) {
        int rows, cols;
        shape(mlp, i, &rows, &cols);
        if (i == k) {
            *w = local, *b = local + (size_t)rows * cols;
            return;
        }
        local += (size_t)rows * cols + rows;
    }
}

size_t pe_mlp_floats(const pe_mlp *mlp) {
    size_t n = 0;
    for (int k = 0; k <= mlp->depth; k++) {
        int rows, cols;
        shape(mlp, k, &rows, &cols);
        n += (size_t)rows * cols + rows;
    }
    return n;
}

// One pass: the pre-activations and activations of each hidden layer, the
// logistic σ(pre) the backward pass reuses, and the output.
typedef struct {
    float pre[2][W], act[2][W], sig[2][W];
} mlp_trace;

// SiLU′ at pre-activation v from σ = σ(v): σ·(1 + v·(1 − σ)), the multiply-add
// fused in so many words, so that the backward pass and the forward pass that
// keeps it for later (where fusing is switched off, LIKE_RUN) agree.
static inline float silu_slope(float sig, float v) { return sig * fmaf(v, 1.0f - sig, 1.0f); }

static void run(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, float x, mlp_trace *tr,
                float *out) {
    const float *in = &x;
    for (int k = 0; k <= mlp->depth; k++) {
        int rows, cols;
        float *w, *b;
        shape(mlp, k, &rows, &cols);
        layer_ptrs(mlp, pe, params, copy, k, &w, &b);
        float *dst = k == mlp->depth ? out : tr->pre[k];
        for (int r = 0; r < rows; r++) {
            float s = b[r];
            for (int c = 0; c < cols; c++) s += w[r * cols + c] * in[c];
            dst[r] = s;
        }
        if (k == mlp->depth) break;
        float e[W];  // SiLU from e = 1 + exp(−pre): act = pre·σ(pre) = pre/e, σ = 1/e
        ops_one_plus_exp_neg(e, tr->pre[k], W);
        for (int r = 0; r < W; r++) {
            tr->act[k][r] = tr->pre[k][r] / e[r];
            tr->sig[k][r] = 1.0f / e[r];
        }
        in = tr->act[k];
    }
}

size_t pe_mlp_kept_floats(const pe_mlp *mlp) { return 2 * (size_t)mlp->depth * W; }

void pe_mlp_forward(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, float x, float *out) {
    mlp_trace tr;
    run(mlp, pe, params, copy, x, &tr, out);
}

// n inputs at once, PAIRS at a time with the input as the innermost index:
// the same operations in the same order for each input as run() does (so
// the same bits), but over PAIRS inputs side by side, which the compiler
// turns into vector instructions (the exponentials through ops_expf_exact:
// expf's bits, eight at a time).
enum { PAIRS = 16 };

// np ≤ PAIRS floats; a whole group's as one fixed-size copy.
static inline void copy_group(float *dst, const float *src, int np) {
    if (np == PAIRS)
        memcpy(dst, src, sizeof(float) * PAIRS);
    else
        memcpy(dst, src, sizeof(float) * (size_t)np);
}

// Whether a multiply and the add into a running sum become one fused
// multiply-add is the compiler's choice, and it must be the same here as in
// run() (s += w·in), or the last bits differ. GCC fuses them in both, except
// when it tunes for AMD Zen (-march=native on an EPYC), where it keeps scalar
// chains of multiply-adds unfused but still fuses this vector loop: there this
// function must not fuse. Clang fuses within a statement in both.
#if defined(__GNUC__) && !defined(__clang__) && \
    (defined(__tune_znver1__) || defined(__tune_znver2__) || defined(__tune_znver3__) || defined(__tune_znver4__))
#define LIKE_RUN __attribute__((optimize("fp-contract=off")))
#else
#define LIKE_RUN
#endif
LIKE_RUN void pe_mlp_forward_many(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, int n, const float *x,
                         float *out, float *keep) {
    size_t kf = pe_mlp_kept_floats(mlp);
    for (int j0 = 0; j0 < n; j0 += PAIRS) {
        int np = n - j0 < PAIRS ? n - j0 : PAIRS;
        float in[W][PAIRS], pre[W][PAIRS], e[W][PAIRS], o[PAIRS];
        for (int p = 0; p < np; p++) in[0][p] = x[j0 + p];
        for (int k = 0; k <= mlp->depth; k++) {
            int rows, cols;
            float *w, *b;
            shape(mlp, k, &rows, &cols);
            layer_ptrs(mlp, pe, params, copy, k, &w, &b);
            for (int r = 0; r < rows; r++) {
                float *dst = k == mlp->depth ? o : pre[r];
                for (int p = 0; p < PAIRS; p++) dst[p] = b[r];
                for (int c = 0; c < cols; c++) {
                    float wc = w[r * cols + c];
                    for (int p = 0; p < PAIRS; p++) dst[p] += wc * in[c][p];
                }
                if (k == mlp->depth)
                    for (int p = 0; p < np; p++) out[(size_t)(j0 + p) * mlp->out + r] = o[p];
            }
            if (k == mlp->depth) break;
            for (int r = 0; r < W; r++) ops_one_plus_exp_neg(e[r], pre[r], (size_t)np);
            for (int r = 0; r < W; r++)
                for (int p = 0; p < PAIRS; p++) in[r][p] = pre[r][p] / (p < np ? e[r][p] : 1.0f);
            if (keep)  // the activations and SiLU′ as backward() computes them, the group's np inputs innermost
                for (int r = 0; r < W; r++) {
                    float *kg = keep + (size_t)j0 * kf + (size_t)2 * k * W * np, slope[PAIRS];
#pragma omp simd
                    for (int p = 0; p < PAIRS; p++) slope[p] = silu_slope(1.0f / (p < np ? e[r][p] : 1.0f), pre[r][p]);
                    copy_group(kg + (size_t)r * np, in[r], np);
                    copy_group(kg + (size_t)(W + r) * np, slope, np);
                }
        }
    }
}

// dw[k], db[k]: where layer k's gradients go.
static float backward(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, float x, const float *dout,
                      float *dw[3], float *db[3]) {
    mlp_trace tr;
    float out[mlp->out], d[W], din[W];
    run(mlp, pe, params, copy, x, &tr, out);
    memcpy(d, dout, sizeof(float) * mlp->out);
    for (int k = mlp->depth; k >= 0; k--) {
        int rows, cols;
        float *w, *b;
        shape(mlp, k, &rows, &cols);
        layer_ptrs(mlp, pe, params, copy, k, &w, &b);
        const float *in = k == 0 ? &x : tr.act[k - 1];
        if (cols == 1) {
            // One input (the first layer, 1 → W): din[0] is one sum over the
            // rows, in row order, a chain of dependent multiply-adds; kept in a
            // register, not added to din[0] in memory row by row (a store and
            // a reload in the chain each time). The compiler fuses each
            // multiply-add of the loop below (its vector body and its scalar
            // tail), so these are fmaf: the same bits.
#pragma omp simd
            for (int r = 0; r < rows; r++) {
                db[k][r] += d[r];
                dw[k][r] = fmaf(d[r], in[0], dw[k][r]);
            }
            float sum = 0.0f;
            for (int r = 0; r < rows; r++) sum = fmaf(d[r], w[r], sum);
            din[0] = sum;
        } else {
            memset(din, 0, sizeof(float) * cols);
            for (int r = 0; r < rows; r++) {
                db[k][r] += d[r];
                // each element its own multiply-add, as in the scalar loop: vectorised, the same bits
#pragma omp simd
                for (int c = 0; c < cols; c++) {
                    dw[k][r * cols + c] += d[r] * in[c];
                    din[c] += d[r] * w[r * cols + c];
                }
            }
        }
        if (k == 0) return din[0];
        for (int c = 0; c < W; c++) d[c] = din[c] * silu_slope(tr.sig[k - 1][c], tr.pre[k - 1][c]);
    }
    return 0.0f;
}

float pe_mlp_backward(const pe_mlp *mlp, const pe_t *pe, const float *params, float *grads, int copy, float x,
                      const float *dout) {
    float *dw[3], *db[3];
    for (int k = 0; k <= mlp->depth; k++) layer_ptrs(mlp, pe, grads, copy, k, &dw[k], &db[k]);
    return backward(mlp, pe, params, copy, x, dout, dw, db);
}

float pe_mlp_backward_local(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, float x,
                            const float *dout, float *local) {
    float *dw[3], *db[3];
    for (int k = 0; k <= mlp->depth; k++) local_ptrs(mlp, local, k, &dw[k], &db[k]);
    return backward(mlp, pe, params, copy, x, dout, dw, db);
}

// The backward passes of n inputs from what pe_mlp_forward_many kept of
// them (keep, the same n): dx[p] = ∂/∂x[p] and the weights' gradients added
// to local input after input, for the inputs whose active[p] is set (the
// others are skipped: dx[p] is left alone). PAIRS side by side, each input's
// operations in the order backward() does them: the same bits as
// pe_mlp_backward_local of each active input in turn, without backward()'s
// chain of dependent multiply-adds per input (the first layer's ∂/∂x)
// waiting on itself.
void pe_mlp_backward_kept(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, int n, const float *x,
                          const float *dout, const unsigned char *active, const float *keep, float *local, float *dx) {
    size_t kf = pe_mlp_kept_floats(mlp);
    for (int j0 = 0; j0 < n; j0 += PAIRS) {
        int np = n - j0 < PAIRS ? n - j0 : PAIRS;
        const unsigned char *on = active + j0;
        // Hidden layer k's activations (input by input; only the np read) and
        // SiLU′ (inputs innermost; past np zeros, whose lanes are never added
        // anywhere: zeroed only in a row's last, partial group).
        float act[2][PAIRS][W], slope[2][W][PAIRS], d[W][PAIRS], din[W][PAIRS];
        if (np < PAIRS) memset(slope, 0, sizeof slope);
        for (int k = 0; k < mlp->depth; k++) {
            const float *kg = keep + (size_t)j0 * kf + (size_t)2 * k * W * np;
            for (int p = 0; p < np; p++)
#pragma omp simd
                for (int c = 0; c < W; c++) act[k][p][c] = kg[(size_t)c * np + p];
            for (int c = 0; c < W; c++) copy_group(slope[k][c], kg + (size_t)(W + c) * np, np);
        }
        for (int r = 0; r < mlp->out; r++)
            for (int p = 0; p < PAIRS; p++) d[r][p] = p < np && on[p] ? dout[(size_t)(j0 + p) * mlp->out + r] : 0.0f;
        for (int k = mlp->depth; k >= 0; k--) {
            int rows, cols;
            float *w, *b, *dw, *db;
            shape(mlp, k, &rows, &cols);
            layer_ptrs(mlp, pe, params, copy, k, &w, &b);
            local_ptrs(mlp, local, k, &dw, &db);
            if (k == 0) {  // one input: the weights' gradients input after input, ∂/∂x's chains side by side
                float gw[W], gb[W];  // summed over the group where they stay
                memcpy(gw, dw, sizeof gw), memcpy(gb, db, sizeof gb);
                for (int p = 0; p < np; p++) {
                    if (!on[p]) continue;
                    float xp = x[j0 + p];
#pragma omp simd
                    for (int r = 0; r < W; r++) {
                        gb[r] += d[r][p];
                        gw[r] = fmaf(d[r][p], xp, gw[r]);
                    }
                }
                memcpy(dw, gw, sizeof gw), memcpy(db, gb, sizeof gb);
                float sum[PAIRS] = {0};
                for (int r = 0; r < rows; r++)
#pragma omp simd
                    for (int p = 0; p < PAIRS; p++) sum[p] = fmaf(d[r][p], w[r], sum[p]);
                for (int p = 0; p < np; p++)
                    if (on[p]) dx[j0 + p] = sum[p];
                break;
            }
            for (int r = 0; r < rows; r++) {  // row r's gradients summed over the group where they stay
                float acc[W], bias = db[r];
                memcpy(acc, dw + (size_t)r * cols, sizeof acc);
                for (int p = 0; p < np; p++) {
                    if (!on[p]) continue;
                    float dr = d[r][p];
                    bias += dr;
#pragma omp simd
                    for (int c = 0; c < W; c++) acc[c] += dr * act[k - 1][p][c];
                }
                memcpy(dw + (size_t)r * cols, acc, sizeof acc);
                db[r] = bias;
            }
            memset(din, 0, sizeof din);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++) {
                    float wc = w[r * cols + c];
#pragma omp simd
                    for (int p = 0; p < PAIRS; p++) din[c][p] += d[r][p] * wc;
                }
            for (int c = 0; c < W; c++)
#pragma omp simd
                for (int p = 0; p < PAIRS; p++) d[c][p] = din[c][p] * slope[k - 1][c][p];
        }
    }
}

void pe_mlp_add(const pe_mlp *mlp, const pe_t *pe, float *grads, int copy, const float *local) {
    for (int k = 0; k <= mlp->depth; k++) {
        int rows, cols;
        float *w, *b, *lw, *lb;
        shape(mlp, k, &rows, &cols);
        layer_ptrs(mlp, pe, grads, copy, k, &w, &b);
        local_ptrs(mlp, (float *)local, k, &lw, &lb);
        for (int i = 0; i < rows * cols; i++) w[i] += lw[i];
        for (int i = 0; i < rows; i++) b[i] += lb[i];
    }
}
