// sandwich.c — Sandwich (Chi et al. 2023, "Dissecting Transformer Length
// Extrapolation via the Lens of Receptive Field Analysis", section 5): the
// inner product of two sinusoidal embeddings of dimension d' is a function
// of the distance only,
//   p_i·p_j = Σ_{k=1}^{d'/2} cos((i − j)/10000^(2k/d')),
// and used as a fixed bias it decays roughly logarithmically with distance.
// pelab subtracts its value at distance 0 (d'/2), so that the bias is 0 on
// the diagonal and negative elsewhere, and compresses the distance per head
// as the paper does to imitate ALiBi's slopes: head h = 1..H sees
// (i − j)/r_h with r_h = 8h/H. No parameters; d' is --sandwich-dim (128).
// The sum of cosines is not strictly monotone: it has ripples of a few
// hundredths (2 heads, head 1: −16.95 at distance 26, −16.93 at 28) on a
// falling trend (tests/ checks both).
#include <math.h>
#include <stdlib.h>

#include "distbias.h"
#include "pe.h"

enum { SANDWICH_DIM };

static const pe_option sandwich_options[] = {
    [SANDWICH_DIM] = {.name = "sandwich-dim", .type = PE_OPT_INT, .lo = 2, .hi = 1 << 16, .def = 128,
                      .help = "Sandwich sinusoid dimension d' (even)"},
    {0},
};

static int sandwich_check(const pe_t *pe, char *err, size_t errlen) {
    int d = (int)pe->opt[SANDWICH_DIM];
    if (d % 2 == 0) return 1;
    snprintf(err, errlen, "--sandwich-dim %d: must be even", d);
    return 0;
}

// The bias of head h (0-based) at distance n.
double sandwich_bias(int n, int h, int H, int dim) {
    double r = 8.0 * (h + 1) / H, sum = 0;
    for (int k = 1; k <= dim / 2; k++) sum += cos(n / r / pow(10000.0, 2.0 * k / dim));
    return sum - dim / 2;
}

static void sandwich_init(pe_t *pe, param_table *tab) { pe->state = xcalloc(1, sizeof(distbias)); }

static void sandwich_layer_begin(pe_t *pe, const float *params, int layer, const pe_batch *bt) {
    int T = bt->span;
    distbias *db = pe->state;
    int H = pe->cfg->heads;
    if (!distbias_size(db, H, T)) return;  // fixed: made once per length
    for (int h = 0; h < H; h++) {
        float *b = distbias_row(db, h) + T - 1;
        for (int n = 0; n <= T - 1; n++) b[n] = b[-n] = (float)sandwich_bias(n, h, H, (int)pe->opt[SANDWICH_DIM]);
    }
}

const pe_ops pe_sandwich_ops = {
    .name = "sandwich",
    .summary = "a fixed bias: the dot product of two sinusoids, log-like decay, per-head compression (Chi et al. 2023)",
    .options = sandwich_options,
    .check = sandwich_check,
    .init = sandwich_init,
    .free = distbias_free_state,
    .layer_begin = sandwich_layer_begin,
    .table_floats = distbias_table_floats,
    .score_forward = distbias_score_forward,
    .reads_positions = 1,  // a fixed bias: no backward
};
