// t5.c — T5's relative attention bias (Raffel et al. 2020): b_h(i, j) =
// w[bucket(i − j), h], one learned table shared by all layers, zero init.
// Buckets: distances below half the buckets get one each; the rest are
// log-spaced up to --t5-max-distance, beyond which all share the last
// bucket. Bidirectional attention splits the buckets between past (lower
// half) and future (upper half).
//
// The bias by distance is a distbias table (distbias.h), made again from the
// weights before each layer and added by distbias's hooks, as KERPLE's and
// Sandwich's; the backward pass adds each pair's gradient straight into its
// bucket's weight (summing by distance first, as distbias_accumulate would,
// then by bucket, would change the order of the sums and so the bits of
// every T5 run published).
#include <math.h>
#include <stdlib.h>

#include "distbias.h"
#include "pe.h"

typedef struct {
    distbias db;  // first: distbias's hooks read pe->state as a distbias
    int *bucket;  // (2T − 1): bucket of distance n = i − j, at index n + T − 1
} t5_state;

int t5_bucket(int n, int bidirectional, int num_buckets, int max_distance) {
    // n = i − j: positive for keys in the past
    int ret = 0;
    if (bidirectional) {
        num_buckets /= 2;
        if (n < 0) ret += num_buckets;  // future keys: upper half
        n = abs(n);
    } else if (n < 0) {
        n = 0;
    }
    int max_exact = num_buckets / 2;
    if (n < max_exact) return ret + n;
    int v = max_exact + (int)(logf((float)n / max_exact) / logf((float)max_distance / max_exact) * (num_buckets - max_exact));
    return ret + (v < num_buckets - 1 ? v : num_buckets - 1);
}

enum { T5_BUCKETS, T5_MAX_DISTANCE };

static const pe_option t5_options[] = {
    [T5_BUCKETS] = {.name = "t5-buckets", .type = PE_OPT_INT, .lo = 4, .hi = 1024, .def = 32, .help = "T5 bias buckets"},
    [T5_MAX_DISTANCE] = {.name = "t5-max-distance", .type = PE_OPT_INT, .lo = 2, .hi = 1 << 20, .def = 128,
                         .help = "T5 largest distinguished distance"},
    {0},
};

static int t5_check(const pe_t *pe, char *err, size_t errlen) {
    int buckets = (int)pe->opt[T5_BUCKETS], maxd = (int)pe->opt[T5_MAX_DISTANCE];
    if (maxd > buckets / 2) return 1;
    snprintf(err, errlen, "--t5-max-distance %d: must exceed half of --t5-buckets (%d)", maxd, buckets / 2);
    return 0;
}

static void t5_init(pe_t *pe, param_table *tab) {
    pe->tensor[0] = param_add(tab, "pe_t5", (size_t)pe->opt[T5_BUCKETS] * pe->cfg->heads, 1, INIT_ZERO, 0);
    pe->state = calloc(1, sizeof(t5_state));
    if (!pe->state) die_runtime("out of memory for the T5 table");
}

static void t5_free(pe_t *pe) {
    t5_state *st = pe->state;
    if (st) free(st->bucket);
    distbias_free_state(pe);
}

// Sizes the bucket table for T, and spreads the current weights along the
// distances so that the forward adds a contiguous run (serial; every layer,
// since the weights change between steps).
static void t5_layer_begin(pe_t *pe, const float *params, int layer, const pe_batch *bt) {
    int T = bt->span;
    t5_state *st = pe->state;
    int H = pe->cfg->heads;
    size_t n = 2 * (size_t)T - 1;
    if (distbias_size(&st->db, H, T) || !st->bucket) {
        free(st->bucket);
        st->bucket = xmalloc(sizeof(int) * n);
        for (int d = -(T - 1); d <= T - 1; d++)
            st->bucket[d + T - 1] = t5_bucket(d, !pe->cfg->causal, (int)pe->opt[T5_BUCKETS], (int)pe->opt[T5_MAX_DISTANCE]);
    }
    const float *w = params + pe->off[0];  // (buckets, H)
    for (int h = 0; h < H; h++) {
        float *row = distbias_row(&st->db, h);
        for (size_t d = 0; d < n; d++) row[d] = w[st->bucket[d] * H + h];
    }
}

static size_t t5_table_floats(const pe_t *pe, int T, int chunk) {
    return distbias_table_floats(pe, T, chunk) + (2 * (size_t)T - 1);  // the tables by distance, and the buckets
}

static void t5_score_backward(pe_t *pe, const float *params, float *grads, int layer, int h, int b, const float *q,
                              const float *k, int ld, float *dq, float *dk, int i0, int nq, int nk,
                              const float *ds, int lds, const int *pos) {
    // forward: s_ij += w[bucket(p_i − p_j), h]  →  dw[b, h] += Σ_{bucket(p_i − p_j) = b} ds_ij
    const t5_state *st = pe->state;
    float *dw = grads + pe->off[0];
    int H = pe->cfg->heads, T = st->db.T;
    const int *bk = st->bucket + T - 1;  // bk[n] is bucket(n)
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        const float *row = ds + (size_t)r * lds;
        if (pos)
            for (int j = 0; j < nk; j++) dw[bk[pos[i] - pos[j]] * H + h] += row[j];
        else
            for (int j = 0; j < nk; j++) dw[bk[i - j] * H + h] += row[j];
    }
}

const pe_ops pe_t5_ops = {
    .name = "t5",
    .summary = "a learned bias per head and log-spaced distance bucket (Raffel et al. 2020)",
    .options = t5_options,
    .check = t5_check,
    .init = t5_init,
    .free = t5_free,
    .layer_begin = t5_layer_begin,
    .table_floats = t5_table_floats,
    .score_forward = distbias_score_forward,
    .score_backward = t5_score_backward,
    .reads_positions = 1,
};
