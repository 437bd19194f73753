// dpb.c — dynamic position bias (Wang et al. 2021, CrossFormer, section
// 3.3; the form x-transformers offers as dynamic_pos_bias): a small MLP
// maps the log distance to one bias per head,
//   b_h(i, j) = MLP(sign(n)·log(1 + |n|))_h,  n = i − j,
// with two hidden layers of 32 units and SiLU (mlp.c), shared by all layers
// (as in x-transformers). Output layer init N(0, 0.02²): the bias starts near 0.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "distbias.h"
#include "mlp.h"
#include "pe.h"

static const pe_mlp dpb_mlp = {.slot = 0, .depth = 2, .out = 0};

static pe_mlp dpb_shape(const pe_t *pe) {
    pe_mlp m = dpb_mlp;
    m.out = pe->cfg->heads;
    return m;
}

static void dpb_init(pe_t *pe, param_table *tab) {
    pe_mlp m = dpb_shape(pe);
    pe_mlp_declare(&m, pe, tab, "pe_dpb", 1);
    pe->state = xcalloc(1, sizeof(distbias));
}

static float dpb_input(int n) { return (n < 0 ? -1.0f : 1.0f) * log1pf((float)abs(n)); }

// Shared by the layers: made at layer 0, when the step's weights are fixed.
static void dpb_layer_begin(pe_t *pe, const float *params, int layer, const pe_batch *bt) {
    int T = bt->span;
    distbias *db = pe->state;
    int H = pe->cfg->heads;
    if (!distbias_size(db, H, T) && layer > 0) return;
    pe_mlp m = dpb_shape(pe);
    float out[H];
    for (int n = -(T - 1); n <= T - 1; n++) {
        pe_mlp_forward(&m, pe, params, 0, dpb_input(n), out);
        for (int h = 0; h < H; h++) distbias_row(db, h)[n + T - 1] = out[h];
    }
}

// The gradient by distance has collected every layer's share when the
// backward pass reaches layer 0; then it goes through the MLP once.
static void dpb_layer_end(pe_t *pe, const float *params, float *grads, int layer, const pe_batch *bt) {
    int T = bt->span;
    if (layer > 0) return;
    distbias *db = pe->state;
    int H = pe->cfg->heads;
    pe_mlp m = dpb_shape(pe);
    float dout[H];
    for (int n = -(T - 1); n <= T - 1; n++) {
        int any = 0;
        for (int h = 0; h < H; h++) dout[h] = distbias_grad_row(db, h)[n + T - 1], any |= dout[h] != 0.0f;
        if (any) pe_mlp_backward(&m, pe, params, grads, 0, dpb_input(n), dout);
    }
    distbias_zero_grad(db);
}

const pe_ops pe_dpb_ops = {
    .name = "dpb",
    .summary = "dynamic position bias: an MLP of the log distance gives each head's bias (Wang et al. 2021)",
    .init = dpb_init,
    .free = distbias_free_state,
    .layer_begin = dpb_layer_begin,
    .table_floats = distbias_table_floats,
    .layer_end = dpb_layer_end,
    .score_forward = distbias_score_forward,
    .reads_positions = 1,
    .score_backward = distbias_score_backward,
};
