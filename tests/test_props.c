// test_props.c — properties the papers promise, and the trainer's own
// guarantees (determinism, the AdamW update, the cats corpus).
#include <stdlib.h>
#include <string.h>

#include "../data/data.h"
#include "../model/attn.h"
#include "../model/gemm.h"
#include "../eval/eval.h"
#include "../eval/probe.h"
#include "../model/ops.h"
#include "../eval/viz.h"
#include "../plot/canvas.h"
#include <stb_image.h>
#include <unistd.h>
#include "../model/pe/rope.h"
#include "test.h"

void alibi_slopes(int H, float *out);
int t5_bucket(int n, int bidirectional, int num_buckets, int max_distance);

static float max_abs_diff(const float *a, const float *b, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        m = d > m ? d : m;
    }
    return m;
}

// A causal model's logits at t do not change when tokens after t change.
static int test_causal_future_invariance(void) {
    int fails = 0, B = 1, T = ATTN_CHUNK + 10, t_cut = 40;
    for (int e = 0; e < n_test_encodings; e++) {
        model_config cfg;
        test_tiny_config(&cfg, test_encodings[e], 1);
        model_t m;
        model_create(&m, &cfg);
        test_randomise_weights(&m, 5);
        model_acts a;
        model_acts_alloc(&a, &m, B, T, 0);
        int tok[T], tok2[T], tgt[T], seg[T];
        test_random_batch(B, T, cfg.vocab, 1, 9, tok, tgt, seg);
        memcpy(tok2, tok, sizeof tok);
        for (int t = t_cut + 1; t < T; t++) tok2[t] = (tok[t] + 1 + t) % cfg.vocab;
        size_t n = (size_t)(t_cut + 1) * cfg.vocab;
        float *before = malloc(sizeof(float) * n);
        model_forward(&m, &a, tok, NULL, NULL);
        memcpy(before, a.logits, sizeof(float) * n);
        model_forward(&m, &a, tok2, NULL, NULL);
        float d = max_abs_diff(before, a.logits, n);
        EXPECT(d <= 1e-6f, "pe=%s: logits at t <= %d moved by %g when later tokens changed", test_encodings[e], t_cut, d);
        // and they do change after the cut, or the test would prove nothing
        float *later = malloc(sizeof(float) * cfg.vocab);
        memcpy(later, a.logits + n, sizeof(float) * cfg.vocab);
        model_forward(&m, &a, tok, NULL, NULL);
        float moved = max_abs_diff(later, a.logits + n, cfg.vocab);
        EXPECT(moved > 1e-5f, "pe=%s: logits after the cut should change (moved %g)", test_encodings[e], moved);
        free(later);
        free(before);
        model_acts_free(&a);
        model_free(&m);
    }
    return fails;
}

// The largest gap between the outputs for a permuted input and the permuted
// outputs, for a bidirectional tiny model with encoding pe.
static float permutation_gap(const char *pe, const int *tok, const int *ptok, const int *perm, const int *seg, int T) {
    model_config cfg;
    test_tiny_config(&cfg, pe, 0);
    model_t m;
    model_create(&m, &cfg);
    test_randomise_weights(&m, 6);
    model_acts a;
    model_acts_alloc(&a, &m, 1, T, 0);
    int V = cfg.vocab;
    float *orig = malloc(sizeof(float) * T * V);
    model_forward(&m, &a, tok, NULL, seg);
    memcpy(orig, a.logits, sizeof(float) * T * V);
    model_forward(&m, &a, ptok, NULL, seg);
    float worst = 0.0f;
    for (int t = 0; t < T; t++) {
        float d = max_abs_diff(a.logits + (size_t)t * V, orig + (size_t)perm[t] * V, V);
        worst = d > worst ? d : worst;
    }
    free(orig);
    model_acts_free(&a);
    model_free(&m);
    return worst;
}

// NoPE with bidirectional attention is permutation-equivariant.
static int test_nope_bidir_permutation(void) {
    int fails = 0, T = 37;
    model_config cfg;
    test_tiny_config(&cfg, "none", 0);
    int tok[T], ptok[T], perm[T], tgt[T], seg[T];
    test_random_batch(1, T, cfg.vocab, 1, 10, tok, tgt, seg);
    rng_t r = {77};
    for (int t = 0; t < T; t++) perm[t] = t;
    for (int t = T - 1; t > 0; t--) {
        int k = (int)rng_below(&r, t + 1), x = perm[t];
        perm[t] = perm[k], perm[k] = x;
    }
    for (int t = 0; t < T; t++) ptok[t] = tok[perm[t]];
    float worst = permutation_gap("none", tok, ptok, perm, seg, T);
    EXPECT(worst <= 1e-5f, "permuted outputs differ from the permuted inputs' outputs by %g", worst);
    // with a position encoding the same check must fail, or it tests nothing
    float worst2 = permutation_gap("rope", tok, ptok, perm, seg, T);
    EXPECT(worst2 > 1e-3f, "rope should break permutation equivariance (diff %g)", worst2);
    return fails;
}

// The order probe with NoPE bidir: both orders give the same prediction, for
// any weights.
static int test_nope_bidir_probe_symmetric(void) {
    int fails = 0;
    data_t d;
    test_data_open(&d, "cats", 0, 3);
    model_config cfg;
    test_tiny_config(&cfg, "none", 0);
    cfg.vocab = d.vocab, cfg.d_model = 16;
    model_t m;
    model_create(&m, &cfg);
    test_randomise_weights(&m, 8);
    cats_example probe[CATS_PROBE_MAX];
    int n = cats_probe(&d, probe), preds[CATS_PROBE_MAX];
    EXPECT(n == CATS_PROBE_MAX, "probe has %d items, expected %d", n, CATS_PROBE_MAX);
    eval_probe_predictions(&m, &d, probe, n, preds);
    int same = 0, subj_answers = 0;
    for (int i = 0; i + 1 < n; i += 2) {
        same += preds[i] == preds[i + 1];
        // balanced: the pair's answers are the two different nouns
        EXPECT(probe[i].answer != probe[i + 1].answer, "probe pair %d has equal answers", i);
        subj_answers += probe[i].answer == probe[i].tokens[1];
    }
    EXPECT(same == n / 2, "NoPE bidir gave different predictions for the two orders in %d of %d pairs", n / 2 - same, n / 2);
    EXPECT(subj_answers == n / 4, "half the questions should ask for the subject (%d of %d)", subj_answers, n / 2);
    int nacc;
    double acc = eval_order(&m, &d, &nacc);
    EXPECT(acc <= 0.5 + 1e-9, "NoPE bidir probe accuracy %g exceeds one half", acc);
    model_free(&m);
    data_close(&d);
    return fails;
}

// The held-out triples never occur in the training stream, in either order.
static int test_cats_held_out(void) {
    int fails = 0;
    for (int causal = 0; causal < 2; causal++) {
        data_t d;
        test_data_open(&d, "cats", causal, 11);
        int B = 32, T = 64, tok[32 * 64], tgt[32 * 64], seg[32 * 64];
        int seen = 0;
        int the = 2, dot = 3;
        for (int it = 0; it < 200; it++) {
            data_next_batch(&d, B, T, tok, tgt, seg);
            for (int b = 0; b < B; b++)
                for (int t = 0; t + 5 < T; t++) {
                    const int *w = tok + b * T + t;
                    if (w[0] != the || w[3] != the || w[5] != dot) continue;
                    int s = w[1] - cats_noun(0), v = w[2] - cats_verb(0), o = w[4] - cats_noun(0);
                    if (s < 0 || s >= CATS_NOUNS || o < 0 || o >= CATS_NOUNS || v < 0 || v >= CATS_VERBS) continue;
                    seen++;
                    EXPECT(!d.held[s][o][v], "held-out triple (%s %s %s) in training", cats_word(w[1]), cats_word(w[2]), cats_word(w[4]));
                    if (fails > 3) return fails;
                }
        }
        EXPECT(seen > 10000, "only %d sentences parsed", seen);
        int held = 0;
        for (int a = 0; a < CATS_NOUNS; a++)
            for (int b = 0; b < CATS_NOUNS; b++)
                for (int v = 0; v < CATS_VERBS; v++) held += d.held[a][b][v];
        EXPECT(held == 2 * CATS_HELD_OUT, "held-out table has %d ordered triples, expected %d", held, 2 * CATS_HELD_OUT);
        data_close(&d);
    }
    return fails;
}

// Bidirectional cats rows: only the [MASK]ed answer slots carry targets.
static int test_cats_bidir_targets(void) {
    int fails = 0;
    data_t d;
    test_data_open(&d, "cats", 0, 12);
    int T = 64, tok[8 * 64], tgt[8 * 64], seg[8 * 64];
    data_next_batch(&d, 8, T, tok, tgt, seg);
    for (int i = 0; i < 8 * T; i++) {
        if (tgt[i] >= 0) EXPECT(tok[i] == d.mask_token, "target at a non-mask position %d", i);
        if (tok[i] == d.mask_token) EXPECT(tgt[i] >= 0, "mask without a target at %d", i);
    }
    data_close(&d);
    return fails;
}

// One AdamW step equals a hand computation in double.
static int test_adamw_step(void) {
    int fails = 0;
    model_config cfg;
    test_tiny_config(&cfg, "learned", 1);
    model_t m;
    model_create(&m, &cfg);
    test_randomise_weights(&m, 13);
    size_t n = m.tab.total;
    rng_t r = {99};
    for (size_t i = 0; i < n; i++) {
        m.grads[i] = 0.01f * rng_normal(&r);
        m.m[i] = 0.001f * rng_normal(&r);
        m.v[i] = 1e-5f * rng_uniform(&r);
    }
    double *p0 = malloc(sizeof(double) * n), *g0 = malloc(sizeof(double) * n), *m0 = malloc(sizeof(double) * n), *v0 = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) p0[i] = m.params[i], g0[i] = m.grads[i], m0[i] = m.m[i], v0[i] = m.v[i];
    double sq = 0.0;
    for (size_t i = 0; i < n; i++) sq += g0[i] * g0[i];
    double norm = sqrt(sq), clip = 0.05, gs = norm > clip ? clip / (norm + 1e-6) : 1.0;
    EXPECT(norm > clip, "the test gradient should be clipped (norm %g)", norm);
    adamw_hparams hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
    long t = 3;
    model_adamw_step(&m, &hp, (float)clip, t);
    double worst = 0.0;
    for (int k = 0; k < m.tab.n; k++) {
        const tensor_info *ti = &m.tab.t[k];
        for (size_t j = 0; j < ti->size; j++) {
            size_t i = ti->offset + j;
            double g = g0[i] * gs;
            double mm = 0.9 * m0[i] + 0.1 * g, vv = 0.95 * v0[i] + 0.05 * g * g;
            double mh = mm / (1 - pow(0.9, t)), vh = vv / (1 - pow(0.95, t));
            double p = p0[i] * (1 - 1e-2 * (ti->decay ? 0.1 : 0.0)) - 1e-2 * mh / (sqrt(vh) + 1e-8);
            double d = fabs(p - m.params[i]) / (1e-3 + fabs(p));
            worst = d > worst ? d : worst;
        }
    }
    EXPECT(worst < 1e-5, "AdamW update differs from the hand computation by %g (relative)", worst);
    // schedule: warmup then cosine to lr/10 at the last step
    EXPECT(fabsf(lr_schedule(1.0f, 10, 0, 100) - 0.1f) < 1e-6f, "warmup step 0");
    EXPECT(fabsf(lr_schedule(1.0f, 10, 9, 100) - 1.0f) < 1e-6f, "end of warmup");
    EXPECT(fabsf(lr_schedule(1.0f, 10, 99, 100) - 0.1f) < 1e-6f, "last step is lr/10");
    EXPECT(fabsf(lr_schedule(1.0f, 10, 55, 101) - 0.55f) < 1e-3f, "cosine midpoint");
    free(p0), free(g0), free(m0), free(v0);
    model_free(&m);
    return fails;
}

// Trains a small model for `steps` and returns the losses; used twice below.
static void short_run(const char *pe, int causal, int steps, unsigned long long seed, double *losses) {
    data_t d;
    test_data_open(&d, "cats", causal, seed);
    model_config cfg;
    test_tiny_config(&cfg, pe, causal);
    cfg.vocab = d.vocab, cfg.d_model = 32, cfg.heads = 4, cfg.ctx = 32;
    model_t m;
    model_create(&m, &cfg);
    model_init_weights(&m, seed);
    model_acts a;
    int B = 8, T = 32;
    model_acts_alloc(&a, &m, B, T, 1);
    int tok[8 * 32], tgt[8 * 32], seg[8 * 32];
    adamw_hparams hp = {3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    for (int s = 0; s < steps; s++) {
        data_next_batch(&d, B, T, tok, tgt, seg);
        losses[s] = model_forward(&m, &a, tok, tgt, seg);
        model_zero_grad(&m);
        model_backward(&m, &a, tok, tgt, seg);
        hp.lr = lr_schedule(3e-3f, 10, s, steps);
        model_adamw_step(&m, &hp, 1.0f, s + 1);
    }
    model_acts_free(&a);
    model_free(&m);
    data_close(&d);
}

static int test_same_seed_same_losses(void) {
    int fails = 0;
    double a[20], b[20], c[20];
    short_run("shaw", 1, 20, 5, a);
    short_run("shaw", 1, 20, 5, b);
    short_run("shaw", 1, 20, 6, c);
    EXPECT(memcmp(a, b, sizeof a) == 0, "same seed, different losses (%.9g vs %.9g at the end)", a[19], b[19]);
    EXPECT(memcmp(a, c, sizeof a) != 0, "different seeds gave identical losses");
    return fails;
}

static int test_end_to_end_loss_falls(void) {
    int fails = 0;
    double l[150];
    short_run("rope", 1, 150, 2, l);
    EXPECT(l[149] < 0.5 * l[0], "loss went from %.4f to %.4f; expected below half", l[0], l[149]);
    printf("    cats causal rope: loss %.4f -> %.4f in 150 steps\n", l[0], l[149]);
    return fails;
}

// RoPE: q̃_i·k̃_j is unchanged when both positions shift by the same amount.
static int test_rope_relative(void) {
    int fails = 0;
    model_config cfg;
    test_tiny_config(&cfg, "rope", 1);
    model_t m;
    model_create(&m, &cfg);
    int T = 200, C = cfg.d_model, hs = C / cfg.heads;
    float *qkv = calloc((size_t)T * 3 * C, sizeof(float));
    rng_t r = {4};
    float q[8], k[8];
    for (int e = 0; e < C; e++) q[e] = rng_normal(&r), k[e] = rng_normal(&r);
    int pairs[][2] = {{5, 2}, {105, 102}, {190, 187}, {3, 9}, {150, 156}};
    for (int p = 0; p < 5; p++) {
        memcpy(qkv + (size_t)pairs[p][0] * 3 * C, q, sizeof q);
        memcpy(qkv + (size_t)pairs[p][1] * 3 * C + C, k, sizeof k);
    }
    m.pe[PE_REL].ops->qk_forward(&m.pe[PE_REL], qkv, 1, T, NULL, 0);
    double dots[5];
    for (int p = 0; p < 5; p++) {
        const float *qi = qkv + (size_t)pairs[p][0] * 3 * C, *kj = qkv + (size_t)pairs[p][1] * 3 * C + C;
        dots[p] = 0;
        for (int e = 0; e < hs; e++) dots[p] += qi[e] * kj[e];
    }
    EXPECT(fabs(dots[0] - dots[1]) < 1e-4 && fabs(dots[0] - dots[2]) < 1e-4, "i-j=3: %g %g %g", dots[0], dots[1], dots[2]);
    EXPECT(fabs(dots[3] - dots[4]) < 1e-4, "i-j=-6: %g %g", dots[3], dots[4]);
    EXPECT(fabs(dots[0] - dots[3]) > 1e-3, "different distances should give different scores");
    free(qkv);
    model_free(&m);
    return fails;
}

static int test_alibi_slopes(void) {
    int fails = 0;
    float s[16];
    alibi_slopes(8, s);
    for (int h = 0; h < 8; h++) EXPECT(s[h] == 1.0f / (float)(2 << h), "8 heads: slope %d is %g", h, s[h]);
    alibi_slopes(6, s);
    float six[6] = {0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f};
    for (int h = 0; h < 6; h++) EXPECT(fabsf(s[h] - six[h]) < 1e-7f, "6 heads: slope %d is %g, expected %g", h, s[h], six[h]);
    alibi_slopes(12, s);
    for (int h = 0; h < 8; h++) EXPECT(fabsf(s[h] - powf(2.0f, -(h + 1))) < 1e-7f, "12 heads: slope %d", h);
    for (int h = 0; h < 4; h++) EXPECT(fabsf(s[8 + h] - powf(2.0f, -0.5f - h)) < 1e-7f, "12 heads: slope %d is %g", 8 + h, s[8 + h]);
    return fails;
}

static int test_t5_buckets(void) {
    int fails = 0;
    for (int n = 0; n < 16; n++) EXPECT(t5_bucket(n, 0, 32, 128) == n, "causal distance %d", n);
    EXPECT(t5_bucket(112, 0, 32, 128) == 30, "distance 112 -> %d", t5_bucket(112, 0, 32, 128));
    EXPECT(t5_bucket(113, 0, 32, 128) == 31, "the last bucket starts at 113 (got %d)", t5_bucket(113, 0, 32, 128));
    EXPECT(t5_bucket(5000, 0, 32, 128) == 31, "far distances share the last bucket");
    EXPECT(t5_bucket(-5, 0, 32, 128) == 0, "causal future clamps to 0");
    for (int n = 1; n < 300; n++) {
        EXPECT(t5_bucket(-n, 1, 32, 128) >= 16, "bidir future distance %d in bucket %d", n, t5_bucket(-n, 1, 32, 128));
        EXPECT(t5_bucket(n, 1, 32, 128) < 16, "bidir past distance %d in bucket %d", n, t5_bucket(n, 1, 32, 128));
    }
    for (int n = 1; n < 300; n++) EXPECT(t5_bucket(n, 0, 32, 128) >= t5_bucket(n - 1, 0, 32, 128), "monotone at %d", n);
    return fails;
}

// XL: the gathered fast form equals s_ij = (q_i+u)·k_j + (q_i+v)·(W_R r_(i−j)) directly.
static int test_xl_fast_equals_direct(void) {
    int fails = 0;
    for (int clip = 0; clip <= 5; clip += 5) {
        model_config cfg;
        test_tiny_config(&cfg, "xl", 0);
        if (clip) config_set(&cfg, "rel-clip", clip);
        else config_unset(&cfg, "rel-clip");  // xl's default: no clipping
        model_t m;
        model_create(&m, &cfg);
        test_randomise_weights(&m, 17);
        int T = ATTN_CHUNK + 9, C = cfg.d_model, H = cfg.heads, hs = C / H, ld = 3 * C;
        float *qkv = malloc(sizeof(float) * T * 3 * C), *S = malloc(sizeof(float) * T * T);
        rng_t r = {3};
        for (int i = 0; i < T * 3 * C; i++) qkv[i] = rng_normal(&r);
        pe_t *pe = &m.pe[PE_REL];
        const pe_batch bt = {NULL, 1, T, T, ATTN_CHUNK, 0, 0};
        pe->ops->layer_begin(pe, m.params, 1, &bt);
        const float *WR = m.params + pe->off[0] + (size_t)C * C, *u = m.params + pe->off[1] + C, *v = m.params + pe->off[2] + C;
        double worst = 0;
        for (int h = 0; h < H; h++) {
            memset(S, 0, sizeof(float) * T * T);
            for (int i0 = 0; i0 < T; i0 += ATTN_CHUNK) {
                int nq = T - i0 < ATTN_CHUNK ? T - i0 : ATTN_CHUNK;
                pe->ops->score_forward(pe, m.params, 1, h, 0, qkv + (size_t)i0 * ld + h * hs, qkv + C + h * hs, ld, i0, nq, T,
                                       S + (size_t)i0 * T, T, NULL);
            }
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++) {
                    int dlt = i - j;
                    if (clip) dlt = dlt > clip ? clip : dlt < -clip ? -clip : dlt;
                    double rd[8], s = 0;
                    for (int e = 0; e < C / 2; e++) {
                        double ang = dlt / pow(10000.0, 2.0 * e / C);
                        rd[2 * e] = sin(ang), rd[2 * e + 1] = cos(ang);
                    }
                    for (int e = 0; e < hs; e++) {
                        double R = 0;  // (W_R r)_h[e]
                        for (int f = 0; f < C; f++) R += WR[(size_t)(h * hs + e) * C + f] * rd[f];
                        double qi = qkv[(size_t)i * ld + h * hs + e], kj = qkv[(size_t)j * ld + C + h * hs + e];
                        s += (qi + u[h * hs + e]) * kj - qi * kj + (qi + v[h * hs + e]) * R;  // content q·k is attention's own
                    }
                    s /= sqrt((double)hs);
                    double dd = fabs(s - S[(size_t)i * T + j]);
                    worst = dd > worst ? dd : worst;
                }
        }
        EXPECT(worst < 1e-4, "xl (clip %d): fast and direct differ by %g", clip, worst);
        free(qkv), free(S);
        model_free(&m);
    }
    return fails;
}

// The row of rope_scalings called name (the table is --rope-scale's choices).
static int scaling(const char *name) {
    for (int k = 0; k < rope_scaling_count; k++)
        if (strcmp(rope_scalings[k].name, name) == 0) return k;
    return -1;
}

// Every context extension of the table: identity at factor 1, and each one's
// formula on a hand case (PI, NTK, YaRN, Llama 3, LongRoPE).
static int test_rope_scaling_formulas(void) {
    int fails = 0;
    const int hs = 8, ctx = 64;  // θ_m = 10000^(−m/4)
    const float lam[4] = {1.0f, 1.5f, 3.0f, 7.0f};
    rope_ext e = {.hs = hs, .ctx = ctx, .base = 10000.0, .s = 1.0f, .low = 1, .high = 4, .factors = lam, .n_factors = 4};
    float th0[4], th[4], pm, ms;
    rope_frequencies(&e, 0, th0, &pm, &ms);
    EXPECT(rope_scaling_count >= 6 && strcmp(rope_scalings[0].name, "none") == 0, "the table starts with none");
    for (int k = 0; k < rope_scaling_count; k++) {
        rope_frequencies(&e, k, th, &pm, &ms);
        for (int i = 0; i < 4; i++) EXPECT(th[i] == th0[i], "%s at factor 1 moved θ_%d", rope_scalings[k].name, i);
        EXPECT(pm == 1.0f && ms == 1.0f, "%s at factor 1: pos %g mscale %g", rope_scalings[k].name, pm, ms);
    }
    e.s = 4.0f;
    rope_frequencies(&e, scaling("pi"), th, &pm, &ms);
    EXPECT(pm == 0.25f && ms == 1.0f, "PI divides positions by s");
    rope_frequencies(&e, scaling("ntk"), th, &pm, &ms);
    double base = 10000.0 * pow(4.0, 8.0 / 6.0);
    for (int i = 0; i < 4; i++) EXPECT(fabs(th[i] - pow(base, -2.0 * i / 8)) < 1e-6 * pow(base, -2.0 * i / 8), "NTK θ_%d", i);
    // YaRN (α 1, β 32) and Llama 3 (α 1, β 4 here): the same ramp by the
    // turns r = ctx/λ_m of each pair in the trained length
    for (int llama = 0; llama < 2; llama++) {
        rope_frequencies(&e, scaling(llama ? "llama3" : "yarn"), th, &pm, &ms);
        double beta = llama ? 4 : 32;
        for (int i = 0; i < 4; i++) {
            double t = pow(10000.0, -2.0 * i / 8), r = 64 * t / (2 * M_PI), g = (r - 1) / (beta - 1);
            g = g < 0 ? 0 : g > 1 ? 1 : g;
            double want = (1 - g) * t / 4 + g * t;
            EXPECT(fabs(th[i] - want) < 1e-6 * want, "%s θ_%d = %g, expected %g", llama ? "llama3" : "YaRN", i, th[i], want);
        }
        double k = 0.1 * log(4.0) + 1;
        EXPECT(fabs(ms - (llama ? 1 : k * k)) < 1e-6, "%s logit scale %g", llama ? "llama3" : "YaRN", ms);
    }
    // Llama 3's released setting (s 8, α 1, β 4, 8192 tokens, base 500000, head size 128): pair 0 kept, the last
    // divided by 8, and pair 31 (λ ≈ 3,617, between 8192/4 and 8192) on the ramp
    rope_ext l3 = {.hs = 128, .ctx = 8192, .base = 500000.0, .s = 8.0f, .low = 1, .high = 4};
    float t3[64];
    rope_frequencies(&l3, scaling("llama3"), t3, &pm, &ms);
    double t31 = pow(500000.0, -62.0 / 128), g31 = (8192 * t31 / (2 * M_PI) - 1) / 3;
    EXPECT(t3[0] == 1.0f && fabs(t3[63] - pow(500000.0, -126.0 / 128) / 8) < 1e-6 * t3[63] && g31 > 0 && g31 < 1 &&
               fabs(t3[31] - ((1 - g31) * t31 / 8 + g31 * t31)) < 1e-6 * t31,
           "llama3 at its released setting: θ_0 %g, θ_63 %g, θ_31 %g", t3[0], t3[63], t3[31]);
    rope_frequencies(&e, scaling("longrope"), th, &pm, &ms);
    for (int i = 0; i < 4; i++) EXPECT(fabs(th[i] - th0[i] / lam[i]) < 1e-6 * th[i], "LongRoPE θ_%d = θ/λ", i);
    EXPECT(fabs(ms - (1 + log(4.0) / log(64.0))) < 1e-6 && pm == 1.0f, "LongRoPE logit scale %g", ms);
    return fails;
}

// learned: lengths past the training ctx are refused one by one.
// The bias an encoding adds to head h's scores (T, T) with q = k = 0, layer 0.
static void bias_matrix(model_t *m, int h, int T, float *s) {
    pe_t *pe = &m->pe[PE_REL];
    int C = m->cfg.d_model;
    float *zero = calloc((size_t)T * C, sizeof(float));
    memset(s, 0, sizeof(float) * T * T);
    const pe_batch bt = {NULL, 1, T, T, T, 0, 0};  // one block of all T rows
    if (pe->ops->layer_begin) pe->ops->layer_begin(pe, m->params, 0, &bt);
    pe->ops->score_forward(pe, m->params, 0, h, 0, zero, zero, C, 0, T, T, s, T, NULL);
    free(zero);
}

// KERPLE (both kernels) and Sandwich: the bias depends on i − j only, is 0 at
// distance 0 and falls with |i − j| (Sandwich: b(2n) < b(n), and rises by
// less than 0.05 from one distance to the next); the same in both directions
// when bidirectional. Also: every other bias encoding depends on i − j only.
static int test_distance_biases(void) {
    int fails = 0, T = 40;
    const char *names[] = {"kerple", "kerple", "sandwich", "alibi", "t5", "dpb"};
    float *s = malloc(sizeof(float) * T * T);
    for (int e = 0; e < 6; e++)
        for (int causal = 0; causal < 2; causal++) {
            model_config cfg;
            test_tiny_config(&cfg, names[e], causal);
            if (e == 1) config_set(&cfg, "kerple-kind", 1);  // power
            model_t m;
            model_create(&m, &cfg);
            test_randomise_weights(&m, 90 + e);
            for (int h = 0; h < cfg.heads; h++) {
                bias_matrix(&m, h, T, s);
                int bad = 0, rising = 0;
                for (int i = 0; i < T; i++)
                    for (int j = 0; j < T; j++) {
                        if (causal && j > i) continue;
                        int d = i - j;
                        int i2 = d >= 0 ? d : 0, j2 = i2 - d;  // the same distance from the first row or column
                        if (s[i * T + j] != s[i2 * T + j2]) bad++;
                        // j+1 is nearer; Sandwich's sum of cosines has ripples of a few hundredths
                        // (e.g. 2 heads, head 1 near distance 27), its trend falls
                        if (e < 3 && j < i && s[i * T + j] > s[i * T + j + 1] + (e == 2 ? 0.05f : 0.0f)) rising++;
                        if (e < 3 && j < i && 2 * d < T && s[2 * d * T] >= s[d * T]) rising++;
                        if (e < 3 && !causal && s[i * T + j] != s[j * T + i]) bad++;
                    }
                EXPECT(!bad, "%s%s %s head %d: the bias is not a function of i - j (%d entries)", names[e],
                       e == 1 ? " power" : "", causal ? "causal" : "bidir", h, bad);
                if (e < 3) {
                    EXPECT(!rising, "%s%s head %d: the bias rises with distance at %d entries", names[e],
                           e == 1 ? " power" : "", h, rising);
                    EXPECT(fabsf(s[5 * T + 5]) < 1e-6f && s[5 * T + 0] < s[5 * T + 4],
                           "%s head %d: b(0) = %g, b(5) = %g, b(1) = %g", names[e], h, s[5 * T + 5], s[5 * T], s[5 * T + 4]);
                }
            }
            model_free(&m);
        }
    free(s);
    return fails;
}

// CoPE with every gate 1 (q·k = 50, σ = 1 in float) counts p_ij = i − j + 1:
// the bias is q·e[i − j + 1]/sqrt(hs), a function of i − j like a relative
// encoding's.
static int test_cope_counts(void) {
    int fails = 0, T = 30;
    model_config cfg;
    test_tiny_config(&cfg, "cope", 1);
    model_t m;
    model_create(&m, &cfg);
    test_randomise_weights(&m, 12);
    int C = cfg.d_model, hs = C / cfg.heads, P = 64;
    float *q = calloc((size_t)T * C, sizeof(float)), *k = calloc((size_t)T * C, sizeof(float));
    float *s = calloc((size_t)T * T, sizeof(float));
    for (int t = 0; t < T; t++)
        for (int e = 0; e < hs; e++) q[(size_t)t * C + e] = (e % 2 ? -1.0f : 1.0f), k[(size_t)t * C + e] = (e % 2 ? -1.0f : 1.0f) * 50.0f / hs;
    pe_t *pe = &m.pe[PE_REL];
    const pe_batch bt = {NULL, 1, T, T, T, 0, 0};  // one block of all T rows
    pe->ops->layer_begin(pe, m.params, 0, &bt);
    pe->ops->score_forward(pe, m.params, 0, 0, 0, q, k, C, 0, T, T, s, T, NULL);
    const float *E = m.params + pe->off[0];  // layer 0: (P + 1, hs)
    int bad = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double want = 0;
            for (int e = 0; e < hs; e++) want += q[e] * E[(size_t)(i - j + 1) * hs + e];
            want /= sqrt(hs);
            if (fabs(s[i * T + j] - want) > 1e-5) bad++;
        }
    EXPECT(!bad, "CoPE with gates 1: %d biases differ from q.e[i-j+1]/sqrt(hs)", bad);
    EXPECT(P == (int)pe->opt[0], "the default --cope-max-pos is %g", pe->opt[0]);
    free(q), free(k), free(s);
    model_free(&m);
    return fails;
}

// An encoding's raw-scores hook (score_forward_raw, what the blocks kernel
// calls when there is one: CoPE's gates read attention's own q·kᵀ) against
// its score_forward on the scaled product, on a whole block and on a block
// of rows past the first: under OpenBLAS, which applies alpha to the
// finished sum, the same bits; under another engine within 1e-6 of the
// largest score (a product with alpha and alpha times the product differ
// in the last bit).
static int test_raw_score_hook(void) {
    int fails = 0, T = 40;
    for (int e = 0; e < pe_registry_count; e++) {
        if (!pe_registry[e]->score_forward_raw) continue;
        model_config cfg;
        test_tiny_config(&cfg, pe_registry[e]->name, 1);
        model_t m;
        model_create(&m, &cfg);
        test_randomise_weights(&m, 21);
        int C = cfg.d_model, hs = C / cfg.heads;
        float scale = 1.0f / sqrtf((float)hs);
        rng_t r = {77};
        float *q = malloc(sizeof(float) * T * C), *k = malloc(sizeof(float) * T * C);
        float *s1 = calloc((size_t)T * T, sizeof(float)), *s2 = calloc((size_t)T * T, sizeof(float));
        for (int x = 0; x < T * C; x++) q[x] = rng_normal(&r), k[x] = rng_normal(&r);
        pe_t *pe = &m.pe[PE_REL];
        const pe_batch bt = {NULL, 1, T, T, T, 0, 0};  // blocks of up to T rows
        pe->ops->layer_begin(pe, m.params, 0, &bt);
        char before[32], err[256];
        snprintf(before, sizeof before, "%s", gemm_name());
        for (int eng = 0; eng < gemm_engine_count; eng++) {
            if (!gemm_use(gemm_engines[eng].name, err, sizeof err)) continue;
            int exact = !strcmp(gemm_engines[eng].name, "openblas");
            const int blocks[2][3] = {{0, T, T}, {16, 16, 32}};  // i0, rows, keys
            for (int bl = 0; bl < 2; bl++) {
                int i0 = blocks[bl][0], nq = blocks[bl][1], nk = blocks[bl][2];
                const float *qb = q + (size_t)i0 * C;
                gemm_sgemm(0, 1, nq, nk, hs, scale, qb, C, k, C, 0.0f, s1, T);
                pe->ops->score_forward(pe, m.params, 0, 0, 0, qb, k, C, i0, nq, nk, s1, T, NULL);
                gemm_sgemm(0, 1, nq, nk, hs, 1.0f, qb, C, k, C, 0.0f, s2, T);
                pe->ops->score_forward_raw(pe, m.params, 0, 0, 0, qb, k, C, i0, nq, nk, s2, T, NULL, scale);
                double worst = 0, big = 0;
                int differ = 0;
                for (int i = 0; i < nq; i++)
                    for (int j = 0; j < nk; j++) {
                        float a = s1[i * T + j], b = s2[i * T + j];
                        differ += memcmp(&a, &b, sizeof a) != 0;
                        worst = fmax(worst, fabs((double)a - b)), big = fmax(big, fabs((double)a));
                    }
                if (exact)
                    EXPECT(!differ, "%s under %s, rows %d..%d: %d scores differ from score_forward's",
                           pe_registry[e]->name, gemm_engines[eng].name, i0, i0 + nq - 1, differ);
                else
                    EXPECT(worst <= 1e-6 * big, "%s under %s, rows %d..%d: off by %g (largest score %g)",
                           pe_registry[e]->name, gemm_engines[eng].name, i0, i0 + nq - 1, worst, big);
            }
        }
        gemm_use(before, err, sizeof err);
        free(q), free(k), free(s1), free(s2);
        model_free(&m);
    }
    return fails;
}

// --rand-pos: the positions reach every encoding that reads them. Explicit
// positions 0..T-1 give bit for bit the logits of no positions (so MAX = ctx,
// whose only subset is the identity, is the plain run); a relative
// encoding's logits do not move when every position shifts by the same
// amount; spread-out positions change them.
static int test_rand_pos_positions(void) {
    int fails = 0, T = 50;
    for (int e = 0; e < n_test_encodings; e++) {
        const char *pe = test_encodings[e];
        if (!test_reads_positions(pe)) continue;
        model_config cfg;
        test_tiny_config(&cfg, pe, 1);
        cfg.rand_pos = 4 * cfg.ctx;
        model_t m;
        model_create(&m, &cfg);
        test_randomise_weights(&m, 13);
        int tok[50], tgt[50], seg[50];
        test_random_batch(1, T, cfg.vocab, 1, 14, tok, tgt, seg);
        size_t n = (size_t)T * cfg.vocab;
        float *ref = malloc(sizeof(float) * n), *out = malloc(sizeof(float) * n);
        model_acts a;
        model_acts_alloc(&a, &m, 1, T, 0);
        model_forward(&m, &a, tok, NULL, seg);
        memcpy(ref, a.logits, sizeof(float) * n);
        a.pos = malloc(sizeof(int) * T);
        for (int t = 0; t < T; t++) a.pos[t] = t;
        model_forward(&m, &a, tok, NULL, seg);
        float d_id = max_abs_diff(ref, a.logits, n);
        EXPECT(d_id == 0.0f, "pe=%s: positions 0..T-1 differ from none by %g", pe, d_id);
        for (int t = 0; t < T; t++) a.pos[t] = t + 100;
        model_forward(&m, &a, tok, NULL, seg);
        float d_shift = max_abs_diff(ref, a.logits, n);
        for (int t = 0; t < T; t++) a.pos[t] = 3 * t;
        model_forward(&m, &a, tok, NULL, seg);
        memcpy(out, a.logits, sizeof(float) * n);
        float d_spread = max_abs_diff(ref, out, n);
        const pe_ops *abs, *rel;
        char err[128];
        pe_parse_spec(pe, &abs, &rel, err, sizeof err);
        int sees_shift = abs || rel->query_position;  // FIRE divides by ψ(max(L, i))
        if (!sees_shift) EXPECT(d_shift < 2e-4f, "pe=%s: shifting every position by 100 moves the logits by %g", pe, d_shift);
        else EXPECT(d_shift > 1e-4f, "pe=%s: an encoding of absolute positions should see the shift (%g)", pe, d_shift);
        EXPECT(d_spread > 1e-4f, "pe=%s: positions 0, 3, 6, … should change the logits (%g)", pe, d_spread);
        free(ref), free(out);
        model_acts_free(&a);
        model_free(&m);
    }
    return fails;
}

// FIRE's backward pass from what its forward pass kept gives bit for bit the
// gradient of the backward pass that computes the MLP again (the path past
// pe_fire_keep_bytes): T = 50 rows of 1 to 50 pairs, groups of 16 and their
// remainders.
static int test_fire_kept_pass(void) {
    int fails = 0, T = 50;
    model_config cfg;
    test_tiny_config(&cfg, "fire", 1);
    model_t m;
    model_create(&m, &cfg);
    test_randomise_weights(&m, 31);
    int tok[50], tgt[50], seg[50];
    test_random_batch(1, T, cfg.vocab, 1, 32, tok, tgt, seg);
    size_t n = m.tab.total, saved = pe_fire_keep_bytes;
    float *grads[2];
    for (int run = 0; run < 2; run++) {
        pe_fire_keep_bytes = run ? 0 : saved;
        model_acts a;
        model_acts_alloc(&a, &m, 1, T, 1);
        model_zero_grad(&m);
        model_forward(&m, &a, tok, tgt, seg);
        model_backward(&m, &a, tok, tgt, seg);
        grads[run] = malloc(sizeof(float) * n);
        memcpy(grads[run], m.grads, sizeof(float) * n);
        model_acts_free(&a);
    }
    pe_fire_keep_bytes = saved;
    int differ = 0, nonzero = 0;
    for (size_t x = 0; x < n; x++) differ += memcmp(&grads[0][x], &grads[1][x], sizeof(float)) != 0, nonzero += grads[0][x] != 0;
    EXPECT(!differ, "%d of %zu gradients differ between the kept and the recomputed MLP passes", differ, n);
    EXPECT(nonzero > 0, "no gradient at all");
    free(grads[0]), free(grads[1]);
    model_free(&m);
    return fails;
}

// Logits of two models with the same weights on the same tokens.
static float logits_diff(const char *pe_a, const char *opt_a, double val_a, const char *pe_b, const char *opt_b,
                         double val_b) {
    model_config ca, cb;
    test_tiny_config(&ca, pe_a, 1);
    test_tiny_config(&cb, pe_b, 1);
    if (opt_a) config_set(&ca, opt_a, val_a);
    if (opt_b) config_set(&cb, opt_b, val_b);
    model_t a, b;
    model_create(&a, &ca);
    model_create(&b, &cb);
    test_randomise_weights(&a, 7);
    if (a.tab.total != b.tab.total) return INFINITY;
    memcpy(b.params, a.params, sizeof(float) * a.tab.total);
    int T = 70, tok[70], tgt[70], seg[70];
    test_random_batch(1, T, ca.vocab, 1, 8, tok, tgt, seg);
    model_acts xa, xb;
    model_acts_alloc(&xa, &a, 1, T, 0);
    model_acts_alloc(&xb, &b, 1, T, 0);
    model_forward(&a, &xa, tok, NULL, seg);
    model_forward(&b, &xb, tok, NULL, seg);
    float d = max_abs_diff(xa.logits, xb.logits, (size_t)T * ca.vocab);
    model_acts_free(&xa), model_acts_free(&xb);
    model_free(&a), model_free(&b);
    return d;
}

// p-RoPE: p = 1 is RoPE, p = 0 is NoPE, p = 0.5 is neither. xPos with
// ζ^(n/γ) → 1 (γ = 1e30) is RoPE.
static int test_rope_variants_limits(void) {
    int fails = 0;
    float d1 = logits_diff("rope", "rope-fraction", 1.0, "rope", NULL, 0);
    float d0 = logits_diff("rope", "rope-fraction", 0.0, "none", NULL, 0);
    float dh = logits_diff("rope", "rope-fraction", 0.5, "none", NULL, 0);
    float dr = logits_diff("rope", "rope-fraction", 0.5, "rope", NULL, 0);
    EXPECT(d1 == 0.0f, "p-RoPE p = 1 differs from RoPE by %g", d1);
    EXPECT(d0 == 0.0f, "p-RoPE p = 0 differs from NoPE by %g", d0);
    EXPECT(dh > 1e-4f && dr > 1e-4f, "p = 0.5 should differ from both (%g from NoPE, %g from RoPE)", dh, dr);
    float dx = logits_diff("xpos", "xpos-scale-base", 1e30, "rope", NULL, 0);
    float dxs = logits_diff("xpos", NULL, 0, "rope", NULL, 0);
    EXPECT(dx < 1e-5f, "xPos with zeta^(n/gamma) = 1 differs from RoPE by %g", dx);
    EXPECT(dxs > 1e-4f, "xPos with gamma 512 should differ from RoPE (%g)", dxs);
    return fails;
}

static int test_learned_refuses_long_eval(void) {
    int fails = 0;
    data_t d;
    test_data_open(&d, "cats", 1, 1);
    model_config cfg;
    test_tiny_config(&cfg, "learned", 1);
    cfg.vocab = d.vocab, cfg.ctx = 32;
    model_t m;
    model_create(&m, &cfg);
    model_init_weights(&m, 1);
    eval_result r;
    eval_perplexity(&m, &d, 64, 256, &r);
    EXPECT(!r.ok && strstr(r.err, "learned"), "ctx 64 > 32 should be refused (ok=%d, '%s')", r.ok, r.err);
    eval_perplexity(&m, &d, 32, 256, &r);
    EXPECT(r.ok && r.ppl > 1.0, "ctx 32 should evaluate (ok=%d)", r.ok);
    model_free(&m);
    data_close(&d);
    return fails;
}

// --eval-window W: with W < 8 the sub-windows start every token, so each
// target is scored with exactly the W tokens before it (fewer at the start
// of a window) — checked against one forward pass per target over exactly
// those tokens. W = 0 and W >= L are the full-window evaluation, bit for bit.
// A text corpus of 20000 random letters (of 9) in a temporary file, opened
// as data; 0 when the file could not be written. The caller unlinks path.
static int random_text(char *path, data_t *d, int causal) {
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    rng_t g = {7};
    char text[20000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('a' + rng_next(&g) % 9);
    int ok = write(fd, text, sizeof text) == (ssize_t)sizeof text;
    close(fd);
    if (ok) test_data_open(d, path, causal, 1);
    return ok;
}

static int test_eval_window(void) {
    int fails = 0;
    char path[] = "/tmp/pelab-window-XXXXXX";
    data_t d;
    if (!random_text(path, &d, 1)) return 1;
    model_t m;
    test_tiny_model(&m, &d, "rope", 1);
    test_randomise_weights(&m, 3);
    const int L = 16, W = 4;
    eval_result full, w0, wl, win;
    eval_perplexity(&m, &d, L, 256, &full);
    eval_perplexity_window(&m, &d, L, 0, 256, NULL, &w0);
    eval_perplexity_window(&m, &d, L, L, 256, NULL, &wl);
    eval_perplexity_window(&m, &d, L, W, 256, NULL, &win);
    EXPECT(full.ok && w0.ok && wl.ok && win.ok, "an evaluation failed: %s %s", full.err, win.err);
    EXPECT(w0.loss == full.loss && wl.loss == full.loss && wl.window == 0, "W = 0 or L should be the full evaluation");
    EXPECT(win.tokens == full.tokens && win.window == W, "the window scores %zu targets, the full %zu", win.tokens, full.tokens);
    char err[256];
    size_t windows = eval_scorable_windows(&m, &d, L, 256, err, sizeof err);
    model_acts a[W];
    for (int n = 1; n <= W; n++) model_acts_alloc(&a[n - 1], &m, 1, n, 0);
    int tok[L], tgt[L], seg[L], sub_tgt[W];
    double sum = 0;
    size_t count = 0;
    for (size_t w = 0; w < windows; w++) {
        data_val_row(&d, L, w, tok, tgt, seg);
        for (int t = 0; t < L; t++) {
            if (tgt[t] < 0) continue;
            int s = t - W + 1 > 0 ? t - W + 1 : 0, n = t - s + 1;
            for (int k = 0; k < n; k++) sub_tgt[k] = k == n - 1 ? tgt[t] : -1;
            a[n - 1].eval_len = L;
            sum += model_forward(&m, &a[n - 1], tok + s, sub_tgt, seg + s);
            count++;
        }
    }
    for (int n = 1; n <= W; n++) model_acts_free(&a[n - 1]);
    double ref = sum / (double)count;
    EXPECT(count == win.tokens && fabs(ref - win.loss) < 1e-5, "windowed loss %.7f, one pass per target %.7f (%zu/%zu targets)",
           win.loss, ref, win.tokens, count);
    EXPECT(fabs(win.loss - full.loss) > 1e-4, "a window of %d should change RoPE's loss (%.6f, %.6f)", W, win.loss, full.loss);
    model_free(&m);
    data_close(&d);
    unlink(path);
    return fails;
}

// The position probe's least squares: an exact linear relation is read back
// on held-out rows (R² = 1), noise is not (R² ≈ 0 or below). On a model: with
// bidirectional NoPE nothing in any layer tells a token's place in a window
// of random letters (permutation equivariance), while sinusoidal positions
// added to the input tell it at the input (R² 0.83 with the tiny model's 8
// dimensions; the test asks for more than 0.5).
static int test_position_probe(void) {
    int fails = 0;
    enum { N = 400, DIM = 5 };
    float X[N * DIM];
    double y[N], noise[N];
    rng_t g = {5};
    for (int i = 0; i < N; i++) {
        double s = 3.0;
        for (int k = 0; k < DIM; k++) X[i * DIM + k] = (float)rng_normal(&g), s += (k + 1) * X[i * DIM + k];
        y[i] = s, noise[i] = rng_normal(&g);
    }
    probe_acc p, q;
    probe_acc_init(&p, DIM), probe_acc_init(&q, DIM);
    probe_acc_add(&p, 0, X, y, N / 2), probe_acc_add(&p, 1, X + N / 2 * DIM, y + N / 2, N / 2);
    probe_acc_add(&q, 0, X, noise, N / 2), probe_acc_add(&q, 1, X + N / 2 * DIM, noise + N / 2, N / 2);
    double exact = probe_acc_r2(&p), none = probe_acc_r2(&q);
    EXPECT(exact > 1 - 1e-9, "an exact linear relation gives held-out R² %.12f", exact);
    EXPECT(none < 0.05, "noise gives held-out R² %.4f", none);
    probe_acc_free(&p), probe_acc_free(&q);
    for (int k = 0; k < 2; k++) {
        const char *pe = k ? "sinusoidal" : "none";
        char path[] = "/tmp/pelab-probe-XXXXXX";
        data_t d;
        if (!random_text(path, &d, 0)) return fails + 1;
        model_t m;
        test_tiny_model(&m, &d, pe, 0);
        test_randomise_weights(&m, 4);
        double r2[8];
        char err[256];
        EXPECT(eval_probe_positions(&m, &d, 32, 4096, r2, err, sizeof err) == 0, "%s", err);
        for (int l = 0; l <= m.cfg.layers; l++) {
            if (!k) EXPECT(r2[l] < 0.05, "bidirectional NoPE: layer %d tells positions, R² %.4f", l, r2[l]);
        }
        if (k) EXPECT(r2[0] > 0.5, "sinusoidal positions at the input give R² %.4f", r2[0]);
        model_free(&m);
        data_close(&d);
        unlink(path);
    }
    return fails;
}

// The PNG writer: a canvas decodes back to the same pixels, and the attention
// picture decodes to the size its layout promises.
static int test_png_roundtrip(void) {
    int fails = 0;
    char path[] = "/tmp/pelab-png-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    canvas c;
    canvas_init(&c, 37, 23, (rgb){10, 20, 30});
    canvas_rect(&c, 5, 6, 7, 8, (rgb){200, 100, 50});
    canvas_text(&c, 1, 1, "ab", 1, (rgb){0, 0, 0});
    char err[512];
    EXPECT(canvas_save_png(&c, path, "the test picture", err, sizeof err) == 0, "save failed: %s", err);
    int w, h, ch;
    unsigned char *px = stbi_load(path, &w, &h, &ch, 3);
    EXPECT(px && w == 37 && h == 23, "decoded %dx%d", w, h);
    if (px) EXPECT(memcmp(px, c.px, 37 * 23 * 3) == 0, "decoded pixels differ");
    free(px);
    canvas_free(&c);
    data_t d;
    test_data_open(&d, "cats", 0, 1);
    model_t m;
    test_tiny_model(&m, &d, "rope", 0);
    model_init_weights(&m, 1);
    EXPECT(viz_attention_png(&m, &d, path, err, sizeof err) == 0, "%s", err);
    int ew, eh;
    viz_attention_size(&m, &d, &ew, &eh);
    px = stbi_load(path, &w, &h, &ch, 3);
    EXPECT(px && w == ew && h == eh && w > 200 && h > 200, "attention picture %dx%d, expected %dx%d", w, h, ew, eh);
    free(px);
    EXPECT(viz_attention_png(&m, &d, "/nonexistent-dir/x.png", err, sizeof err) != 0 && strstr(err, "x.png"), "bad path accepted");
    unlink(path);
    model_free(&m);
    data_close(&d);
    return fails;
}

// Streaming evaluation (score rows in blocks of attn_chunk, no T×T matrix)
// equals the plain full-matrix computation (one block of all T rows), for
// every encoding, at a length of several blocks.
static int test_streaming_equals_full_matrix(void) {
    int fails = 0, T = 300;
    for (int e = 0; e < n_test_encodings; e++)
        for (int causal = 0; causal < 2; causal++) {
            if (!test_mode_allowed(test_encodings[e], causal)) continue;
            model_config cfg;
            test_tiny_config(&cfg, test_encodings[e], causal);
            cfg.ctx = T;
            model_t m;
            model_create(&m, &cfg);
            test_randomise_weights(&m, 60 + e);
            int tok[300], tgt[300], seg[300];
            test_random_batch(1, T, cfg.vocab, causal, 70 + e, tok, tgt, seg);
            size_t n = (size_t)T * cfg.vocab;
            float *full = malloc(sizeof(float) * n);
            model_acts a;
            m.attn_chunk = T;
            model_acts_alloc(&a, &m, 1, T, 0);
            model_forward(&m, &a, tok, NULL, seg);
            memcpy(full, a.logits, sizeof(float) * n);
            model_acts_free(&a);
            m.attn_chunk = 16;
            model_acts_alloc(&a, &m, 1, T, 0);
            model_forward(&m, &a, tok, NULL, seg);
            float d = max_abs_diff(full, a.logits, n);
            EXPECT(d <= 2e-5f, "pe=%s %s: streaming and full-matrix logits differ by %g", test_encodings[e], causal ? "causal" : "bidir", d);
            model_acts_free(&a);
            free(full);
            model_free(&m);
        }
    return fails;
}

// The composites are named, not derived from list positions: every relative
// encoding appears in exactly one, each pairs an absolute encoding with a
// relative one, and each is a model the trainer builds.
static int test_composites_cover_each_relative_once(void) {
    int fails = 0;
    char buf[64];
    for (int k = 0; k < pe_registry_count; k++) {
        const pe_ops *o = pe_registry[k];
        if (o->absolute || strcmp(o->name, "none") == 0) continue;
        int seen = 0;
        for (int i = 0; pe_composite(i, buf, sizeof buf); i++) {
            const pe_ops *a, *r;
            char err[256];
            EXPECT(pe_parse_spec(buf, &a, &r, err, sizeof err) && a && r && a->absolute && !r->absolute,
                   "composite %d '%s' is not absolute+relative: %s", i, buf, err);
            if (pe_parse_spec(buf, &a, &r, err, sizeof err) && r == o) seen++;
        }
        EXPECT(seen == 1, "relative encoding %s is in %d composites (want 1)", o->name, seen);
    }
    return fails;
}

const test_case prop_tests[] = {
    {"prop/composites_cover_each_relative_once", test_composites_cover_each_relative_once},
    {"prop/streaming_eval_equals_full_matrix", test_streaming_equals_full_matrix},
    {"prop/png_roundtrip_and_attention_picture", test_png_roundtrip},
    {"prop/causal_logits_ignore_future_every_encoding", test_causal_future_invariance},
    {"prop/nope_bidir_permutation_equivariant", test_nope_bidir_permutation},
    {"prop/nope_bidir_probe_orders_identical", test_nope_bidir_probe_symmetric},
    {"prop/cats_held_out_never_trained", test_cats_held_out},
    {"prop/cats_bidir_targets_only_at_masks", test_cats_bidir_targets},
    {"prop/adamw_matches_hand_computation", test_adamw_step},
    {"prop/same_seed_bit_identical", test_same_seed_same_losses},
    {"prop/end_to_end_loss_falls", test_end_to_end_loss_falls},
    {"prop/rope_scores_depend_on_i_minus_j", test_rope_relative},
    {"prop/alibi_slopes", test_alibi_slopes},
    {"prop/t5_buckets", test_t5_buckets},
    {"prop/xl_fast_equals_direct", test_xl_fast_equals_direct},
    {"prop/rope_scaling_formulas", test_rope_scaling_formulas},
    {"prop/learned_refuses_long_eval", test_learned_refuses_long_eval},
    {"prop/eval_window", test_eval_window},
    {"prop/position_probe", test_position_probe},
    {"prop/distance_biases_kerple_sandwich", test_distance_biases},
    {"prop/rope_variants_limits_prope_xpos", test_rope_variants_limits},
    {"prop/cope_all_gates_open_counts_distance", test_cope_counts},
    {"prop/raw_score_hook_is_score_forward", test_raw_score_hook},
    {"prop/rand_pos_positions_reach_the_encodings", test_rand_pos_positions},
    {"prop/fire_kept_pass_is_the_recomputed_pass", test_fire_kept_pass},
};
const int n_prop_tests = sizeof prop_tests / sizeof prop_tests[0];
