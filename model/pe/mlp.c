// mlp.c — see mlp.h.
#include "mlp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { W = PE_MLP_WIDTH };

static float silu(float x) { return x / (1.0f + expf(-x)); }
static float silu_grad(float x) {
    float s = 1.0f / (1.0f + expf(-x));
    return s * (1.0f + x * (1.0f - s));
}

// Rows and columns of layer k (0-based) of the MLP.
static void shape(const pe_mlp *mlp, int k, int *rows, int *cols) {
    *cols = k == 0 ? 1 : W;
    *rows = k == mlp->depth ? mlp->out : W;
}

void pe_mlp_declare(const pe_mlp *mlp, pe_t *pe, param_table *tab, const char *prefix, int copies) {
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

// Pre-activations of each hidden layer (pre[k] has W) and the output.
static void run(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, float x, float pre[2][W],
                float *out) {
    float in[W];
    in[0] = x;
    for (int k = 0; k <= mlp->depth; k++) {
        int rows, cols;
        float *w, *b;
        shape(mlp, k, &rows, &cols);
        layer_ptrs(mlp, pe, params, copy, k, &w, &b);
        float *dst = k == mlp->depth ? out : pre[k];
        for (int r = 0; r < rows; r++) {
            float s = b[r];
            for (int c = 0; c < cols; c++) s += w[r * cols + c] * in[c];
            dst[r] = s;
        }
        if (k < mlp->depth)
            for (int r = 0; r < W; r++) in[r] = silu(pre[k][r]);
    }
}

void pe_mlp_forward(const pe_mlp *mlp, const pe_t *pe, const float *params, int copy, float x, float *out) {
    float pre[2][W];
    run(mlp, pe, params, copy, x, pre, out);
}

float pe_mlp_backward(const pe_mlp *mlp, const pe_t *pe, const float *params, float *grads, int copy, float x,
                      const float *dout) {
    float pre[2][W], out[mlp->out], d[W], din[W];
    run(mlp, pe, params, copy, x, pre, out);
    memcpy(d, dout, sizeof(float) * mlp->out);
    for (int k = mlp->depth; k >= 0; k--) {
        int rows, cols;
        float *w, *b, *dw, *db;
        shape(mlp, k, &rows, &cols);
        layer_ptrs(mlp, pe, params, copy, k, &w, &b);
        layer_ptrs(mlp, pe, grads, copy, k, &dw, &db);
        float in[W];
        if (k == 0) in[0] = x;
        else
            for (int c = 0; c < W; c++) in[c] = silu(pre[k - 1][c]);
        memset(din, 0, sizeof(float) * cols);
        for (int r = 0; r < rows; r++) {
            db[r] += d[r];
            for (int c = 0; c < cols; c++) {
                dw[r * cols + c] += d[r] * in[c];
                din[c] += d[r] * w[r * cols + c];
            }
        }
        if (k == 0) return din[0];
        for (int c = 0; c < W; c++) d[c] = din[c] * silu_grad(pre[k - 1][c]);
    }
    return 0.0f;
}
