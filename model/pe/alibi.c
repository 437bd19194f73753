// alibi.c — ALiBi (Press et al. 2022, "Train Short, Test Long"): a fixed
// bias b_h(i, j) = −m_h·(i − j) (causal) or −m_h·|i − j| (bidirectional),
// added after the 1/sqrt(hs) scaling. Slopes 2^(−8h/H), h = 1..H, for H a
// power of two; otherwise the slopes of the closest smaller power of two c,
// then every other slope of the 2c sequence until there are H.
#include <math.h>
#include <stdlib.h>

#include "pe.h"

static void pow2_slopes(int n, float *out) {
    for (int h = 1; h <= n; h++) out[h - 1] = powf(2.0f, -8.0f * h / n);
}

void alibi_slopes(int H, float *out) {
    int c = 1;
    while (c * 2 <= H) c *= 2;
    pow2_slopes(c, out);
    if (c == H) return;
    float extra[2 * c];
    pow2_slopes(2 * c, extra);
    for (int i = 0; i < H - c; i++) out[c + i] = extra[2 * i];
}

static void alibi_init(pe_t *pe, param_table *tab) {
    float *slopes = xmalloc(sizeof(float) * pe->cfg->heads);
    alibi_slopes(pe->cfg->heads, slopes);
    pe->state = slopes;
}

static void alibi_free(pe_t *pe) {
    free(pe->state);
    pe->state = NULL;
}

static void alibi_score_forward(pe_t *pe, const float *params, int layer, int h, int b, const float *q, const float *k,
                                int ld, int i0, int nq, int nk, float *s, int lds, const int *pos) {
    float m = ((const float *)pe->state)[h];
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        float *row = s + (size_t)r * lds;
        if (pos)
            for (int j = 0; j < nk; j++) row[j] -= m * (float)abs(pos[i] - pos[j]);
        else
            for (int j = 0; j < nk; j++) row[j] -= m * (float)abs(i - j);  // causal: j ≤ i, so |i−j| = i−j
    }
}

const pe_ops pe_alibi_ops = {
    .name = "alibi",
    .summary = "a fixed linear bias -m_h |i-j| per head (Press et al. 2022)",
    .init = alibi_init,
    .free = alibi_free,
    .score_forward = alibi_score_forward,
    .reads_positions = 1,  // a fixed bias: no backward
};
