// test_kernels.c — the optimised kernels against plain reference versions
// written here in double precision, the obvious way: the vectorisable exp,
// GELU, the threaded LayerNorm and matrix products, the softmax's fast path
// for a visible run of keys, the threaded reductions — and the fused
// attention kernel against the blocks one, through the whole model.
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../model/attn.h"
#include "../model/ops.h"
#include "test.h"

// max(err, e) that lets a NaN through (fmax would drop it).
static double worse(double err, double e) { return e > err || isnan(e) ? e : err; }

// n threads for the kernels under test, with every parallel region run in
// parallel however small (the threaded paths are what is tested);
// suite_threads() goes back to the suite's setting.
static double suite_par_min = -1.0;

static void set_threads(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
    if (suite_par_min < 0.0) suite_par_min = par_min_ns;
    par_min_ns = 0.0;
}

static void suite_threads(void) {
    set_threads(2);
    par_min_ns = suite_par_min;
}

// ops_expf within 2 ulp of e^x on [-87, 88] (10⁶ points and every integer);
// saturates outside, keeps NaN.
static int test_expf(void) {
    int fails = 0;
    double worst = 0.0, at = 0.0;
    for (int k = 0; k <= 1000000; k++) {
        float x = -87.0f + 175.0f * (float)k / 1000000.0f;
        if (k % 5000 == 0) x = (float)(-87 + k / 5000 * 175 / 200);  // integers too
        double want = exp((double)x), got = ops_expf(x);
        double ulp = ldexp(1.0, ilogb(want) - 23);
        double err = fabs(got - want) / ulp;
        if (err > worst) worst = err, at = x;
    }
    printf("    largest error %.2f ulp at x = %.6g\n", worst, at);
    EXPECT(worst <= 2.0, "ops_expf is %.2f ulp from e^x at x = %g", worst, at);
    EXPECT(ops_expf(0.0f) == 1.0f, "e^0 = %.9g", ops_expf(0.0f));
    EXPECT(ops_expf(-1000.0f) >= 0.0f && ops_expf(-1000.0f) < 1e-37f, "e^-1000 = %g", ops_expf(-1000.0f));
    EXPECT(isfinite(ops_expf(1000.0f)) && ops_expf(1000.0f) > 1e38f, "e^1000 = %g", ops_expf(1000.0f));
    EXPECT(isnan(ops_expf(NAN)), "e^NaN = %g", ops_expf(NAN));
    return fails;
}

// How many of y[0..n) are not expf(x[i]) bit for bit (any NaN matches a
// NaN); the first one's index into first (when not NULL).
static size_t unlike_expf(const float *x, const float *y, size_t n, size_t *first) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = expf(x[i]);
        if (!memcmp(&want, &y[i], sizeof want) || (isnan(want) && isnan(y[i]))) continue;
        if (first && !bad) *first = i;
        bad++;
    }
    return bad;
}

// ops_expf_exact against this machine's expf, bit for bit: every 509th
// float bit pattern (both signs, every exponent, NaNs and infinities), the
// floats in [-1, 1] that step 389 bit patterns apart, and the edges of
// glibc's special cases; in place and out of place, with tails of every
// length below eight. Skipped in a build without AVX-512, where
// ops_expf_exact is expf itself.
static int test_expf_exact(void) {
#if !defined(__AVX512F__) && !(defined(__AVX2__) && defined(__FMA__))
    printf("    skipped: this build has neither AVX-512 nor AVX2 with FMA, and ops_expf_exact calls expf\n");
    return TEST_SKIPPED;
#endif
    int fails = 0;
    size_t n = 0, cap = (1u << 24);
    float *x = malloc(sizeof(float) * cap), *y = malloc(sizeof(float) * cap);
    for (uint64_t b = 0; b < (1ull << 32) && n < cap; b += 509) {
        uint32_t u = (uint32_t)b;
        memcpy(&x[n++], &u, sizeof u);
    }
    for (uint32_t u = 0; u <= 0x3f800000u && n + 2 <= cap; u += 389) {
        float f;
        memcpy(&f, &u, sizeof f);
        x[n++] = f, x[n++] = -f;
    }
    const float edges[] = {88.0f, -88.0f, 0x1.62e42ep6f, 0x1.62e430p6f, -0x1.9fe368p6f, -0x1.9fe36ap6f, -0x1.9d1d9ep6f,
                           -0x1.9d1da0p6f, -87.5f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0] && n < cap; k++) x[n++] = edges[k];
    size_t bad = 0, first = 0;
    for (size_t tail = 0; tail < 8; tail++) {
        ops_expf_exact(y, x, n - tail);
        bad += unlike_expf(x, y, n - tail, bad ? NULL : &first);
    }
    memcpy(y, x, sizeof(float) * n);
    ops_expf_exact(y, y, n);
    bad += unlike_expf(x, y, n, bad ? NULL : &first);
    printf("    %zu inputs, %zu results differ from expf\n", n, bad);
    EXPECT(bad == 0, "%zu results differ from expf, the first at x = %a", bad, bad ? x[first] : 0.0f);
    free(x), free(y);
    return fails;
}

// GELU forward and backward against tanh() in double over [-30, 30],
// saturated tails included.
static int test_gelu(void) {
    int fails = 0;
    size_t n = 20011;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    float *dy = malloc(sizeof(float) * n), *dx = calloc(n, sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = -30.0f + 60.0f * (float)i / (float)(n - 1);
    test_fill_normal(dy, n, 1.0f, 3);
    gelu_forward(y, x, n);
    gelu_backward(dx, x, dy, n);
    double worst_y = 0, worst_d = 0;
    const double k = sqrt(2.0 / M_PI);
    for (size_t i = 0; i < n; i++) {
        double v = x[i], u = k * (v + 0.044715 * v * v * v), t = tanh(u);
        double want_y = 0.5 * v * (1.0 + t);
        double want_d = dy[i] * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * k * (1.0 + 3 * 0.044715 * v * v));
        // absolute, scaled by 1 + |x|: in the negative tail 1 + tanh cancels
        // (in float as in any tanh-form GELU), leaving ~1e-7 |x| of noise
        double ey = fabs(y[i] - want_y) / (1 + fabs(v)), ed = fabs(dx[i] - want_d) / (1 + fabs(v));
        if (ey > worst_y) worst_y = ey;
        if (ed > worst_d) worst_d = ed;
    }
    printf("    largest error / (1 + |x|): forward %.2g, backward %.2g\n", worst_y, worst_d);
    EXPECT(worst_y <= 2e-6, "GELU forward: error / (1 + |x|) = %g", worst_y);
    EXPECT(worst_d <= 2e-6, "GELU backward: error / (1 + |x|) = %g", worst_d);
    free(x), free(y), free(dy), free(dx);
    return fails;
}

// matmul forward and backward (row blocks per thread, bias gradient read
// row by row) against triple loops, at odd shapes and 1 or 2 threads.
static int test_matmul(void) {
    int fails = 0;
    const int shapes[][3] = {{37, 13, 29}, {1, 5, 300}, {300, 7, 3}, {64, 64, 257}};
    for (int sh = 0; sh < 4; sh++)
        for (int threads = 1; threads <= 2; threads++) {
            set_threads(threads);
            int N = shapes[sh][0], IC = shapes[sh][1], OC = shapes[sh][2];
            float *x = malloc(sizeof(float) * N * IC), *w = malloc(sizeof(float) * OC * IC), *b = malloc(sizeof(float) * OC);
            float *y = malloc(sizeof(float) * N * OC), *dy = malloc(sizeof(float) * N * OC);
            float *dx = malloc(sizeof(float) * N * IC), *dw = malloc(sizeof(float) * OC * IC), *db = malloc(sizeof(float) * OC);
            test_fill_normal(x, (size_t)N * IC, 1, 1), test_fill_normal(w, (size_t)OC * IC, 1, 2), test_fill_normal(b, OC, 1, 3), test_fill_normal(dy, (size_t)N * OC, 1, 4);
            // dw and db are added to: start them from known values; dx is
            // written: start it from garbage
            for (int i = 0; i < N * IC; i++) dx[i] = NAN;
            for (int i = 0; i < OC * IC; i++) dw[i] = -0.25f;
            for (int i = 0; i < OC; i++) db[i] = 1.0f;
            matmul_forward(y, x, w, b, N, IC, OC);
            matmul_backward(dx, dw, db, dy, x, w, N, IC, OC);
            double err = 0;
            for (int i = 0; i < N; i++)
                for (int o = 0; o < OC; o++) {
                    double s = b[o];
                    for (int c = 0; c < IC; c++) s += (double)x[i * IC + c] * w[o * IC + c];
                    err = worse(err, fabs(y[i * OC + o] - s) / (1 + fabs(s)));
                }
            for (int i = 0; i < N; i++)
                for (int c = 0; c < IC; c++) {
                    double s = 0.0;
                    for (int o = 0; o < OC; o++) s += (double)dy[i * OC + o] * w[o * IC + c];
                    err = worse(err, fabs(dx[i * IC + c] - s) / (1 + fabs(s)));
                }
            for (int o = 0; o < OC; o++) {
                double sb = 1.0;
                for (int i = 0; i < N; i++) sb += dy[i * OC + o];
                err = worse(err, fabs(db[o] - sb) / (1 + fabs(sb)));
                for (int c = 0; c < IC; c++) {
                    double s = -0.25;
                    for (int i = 0; i < N; i++) s += (double)dy[i * OC + o] * x[i * IC + c];
                    err = worse(err, fabs(dw[o * IC + c] - s) / (1 + fabs(s)));
                }
            }
            EXPECT(err <= 2e-5, "matmul %dx%dx%d, %d thread(s): relative error %g", N, IC, OC, threads, err);
            free(x), free(w), free(b), free(y), free(dy), free(dx), free(dw), free(db);
        }
    suite_threads();
    return fails;
}

// LayerNorm forward and backward (weight gradients split into channel
// strips per thread) against the textbook formulas in double.
static int test_layernorm(void) {
    int fails = 0;
    const int N = 45, C = 67;
    for (int threads = 1; threads <= 2; threads++) {
        set_threads(threads);
        float *x = malloc(sizeof(float) * N * C), *w = malloc(sizeof(float) * C), *b = malloc(sizeof(float) * C);
        float *y = malloc(sizeof(float) * N * C), *dy = malloc(sizeof(float) * N * C), *mean = malloc(sizeof(float) * N);
        float *rstd = malloc(sizeof(float) * N), *dx = calloc((size_t)N * C, sizeof(float));
        float *dw = calloc(C, sizeof(float)), *db = calloc(C, sizeof(float));
        test_fill_normal(x, (size_t)N * C, 2, 5), test_fill_normal(w, C, 1, 6), test_fill_normal(b, C, 1, 7), test_fill_normal(dy, (size_t)N * C, 1, 8);
        for (int i = 0; i < N * C; i++) x[i] += 3.0f;  // an offset the mean must remove
        layernorm_forward(y, mean, rstd, x, w, b, N, C);
        layernorm_backward(dx, dw, db, dy, x, w, mean, rstd, N, C);
        double err = 0, *rdw = calloc(C, sizeof(double)), *rdb = calloc(C, sizeof(double));
        for (int i = 0; i < N; i++) {
            const float *xi = x + i * C, *gi = dy + i * C;
            double m = 0, v = 0;
            for (int c = 0; c < C; c++) m += xi[c];
            m /= C;
            for (int c = 0; c < C; c++) v += (xi[c] - m) * (xi[c] - m);
            double s = 1.0 / sqrt(v / C + 1e-5), a = 0, bsum = 0;
            for (int c = 0; c < C; c++) {
                double nrm = (xi[c] - m) * s, want = nrm * w[c] + b[c];
                err = worse(err, fabs(y[i * C + c] - want) / (1 + fabs(want)));
                a += gi[c] * w[c], bsum += gi[c] * w[c] * nrm;
                rdw[c] += gi[c] * nrm, rdb[c] += gi[c];
            }
            for (int c = 0; c < C; c++) {
                double nrm = (xi[c] - m) * s, want = s * (gi[c] * w[c] - a / C - nrm * bsum / C);
                err = worse(err, fabs(dx[i * C + c] - want) / (1 + fabs(want)));
            }
        }
        for (int c = 0; c < C; c++) {
            err = worse(err, fabs(dw[c] - rdw[c]) / (1 + fabs(rdw[c])));
            err = worse(err, fabs(db[c] - rdb[c]) / (1 + fabs(rdb[c])));
        }
        EXPECT(err <= 2e-5, "LayerNorm, %d thread(s): relative error %g", threads, err);
        free(x), free(w), free(b), free(y), free(dy), free(mean), free(rstd), free(dx), free(dw), free(db), free(rdw), free(rdb);
    }
    suite_threads();
    return fails;
}

// Attention output against a plain double-precision softmax(QKᵀ/√hs + mask)·V,
// for masks the fast path takes (causal prefix, contiguous segments) and one
// it must leave to the general loop (segments that interleave).
static int test_attention_softmax_paths(void) {
    int fails = 0;
    const int B = 2, T = 70, C = 12, NH = 3, hs = C / NH;
    float *qkv = malloc(sizeof(float) * B * T * 3 * C), *y = malloc(sizeof(float) * B * T * C);
    float *scratch = malloc(sizeof(float) * 2 * attn_scratch_floats(T, ATTN_CHUNK));
    int *seg = malloc(sizeof(int) * B * T);
    test_fill_normal(qkv, (size_t)B * T * 3 * C, 1.5f, 9);
    const char *names[] = {"no segments", "contiguous segments", "interleaved segments"};
    for (int kind = 0; kind < 3; kind++)
        for (int causal = 0; causal < 2; causal++) {
            for (int i = 0; i < B * T; i++) {
                int t = i % T;
                seg[i] = kind == 1 ? t / 23 : kind == 2 ? (t % 3 == 0) + (t > 50) * 2 : 0;
            }
            attn_dims d = {B, T, C, NH, causal, kind ? seg : NULL, NULL, NULL, 0, ATTN_CHUNK, NULL, NULL};
            attn_forward(y, NULL, qkv, &d, scratch);
            double err = 0;
            for (int b = 0; b < B; b++)
                for (int h = 0; h < NH; h++)
                    for (int i = 0; i < T; i++) {
                        const float *q = qkv + ((size_t)b * T + i) * 3 * C + h * hs;
                        double s[70], mx = -1e300, sum = 0;
                        for (int j = 0; j < T; j++) {
                            int ok = (!causal || j <= i) && (!kind || seg[b * T + j] == seg[b * T + i]);
                            const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
                            double dot = 0;
                            for (int c = 0; c < hs; c++) dot += (double)q[c] * k[c];
                            s[j] = ok ? dot / sqrt((double)hs) : -INFINITY;
                            mx = fmax(mx, s[j]);
                        }
                        for (int j = 0; j < T; j++) sum += s[j] = exp(s[j] - mx);
                        for (int c = 0; c < hs; c++) {
                            double want = 0;
                            for (int j = 0; j < T; j++) want += s[j] / sum * qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * hs + c];
                            err = worse(err, fabs(y[((size_t)b * T + i) * C + h * hs + c] - want));
                        }
                    }
            EXPECT(err <= 2e-5, "%s, %s: attention output differs from the reference by %g", names[kind],
                   causal ? "causal" : "bidir", err);
        }
    free(qkv), free(y), free(scratch), free(seg);
    return fails;
}

// The threaded reductions: zeroing, and the gradient norm's sum of squares,
// which must give the same bits for any thread count.
static int test_reductions(void) {
    int fails = 0;
    size_t n = 300007;
    float *x = malloc(sizeof(float) * n);
    test_fill_normal(x, n, 1, 11);
    double want = 0;
    for (size_t i = 0; i < n; i++) want += (double)x[i] * x[i];
    set_threads(1);
    double one = ops_sum_squares(x, n);
    set_threads(2);
    double two = ops_sum_squares(x, n);
    EXPECT(one == two, "sum of squares: %.17g with 1 thread, %.17g with 2", one, two);
    EXPECT(fabs(two - want) <= 1e-12 * want, "sum of squares %.17g, want %.17g", two, want);
    EXPECT(ops_sum_squares(x, 0) == 0.0, "empty sum of squares");
    ops_zero(x, n);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += x[i] != 0.0f;
    EXPECT(nonzero == 0, "%zu elements left after ops_zero", nonzero);
    free(x);
    suite_threads();
    return fails;
}

// One forward and backward pass of a tiny model: the loss, and a copy of the
// gradients (the caller frees it).
static float *model_pass(model_t *m, int fused, int chunk, int threads, int B, int T, const int *tok,
                         const int *tgt, const int *seg, double *loss) {
    set_threads(threads);
    m->attn_fused = fused, m->attn_chunk = chunk;
    model_acts a;
    model_acts_alloc(&a, m, B, T, 1);
    model_draw_positions(m, &a, 7, 1);
    *loss = model_forward(m, &a, tok, tgt, seg);
    model_zero_grad(m);
    model_backward(m, &a, tok, tgt, seg);
    model_acts_free(&a);
    suite_threads();
    return memcpy(malloc(sizeof(float) * m->tab.total), m->grads, sizeof(float) * m->tab.total);
}

// The fused kernel computes the attention of the blocks kernel in another
// order (16-row sub-blocks, recomputed weights): through the whole model,
// for every encoding and mode (with --rand-pos where it reads positions), at
// shapes where neither the blocks nor the sub-blocks divide T, the loss
// agrees within 1e-5 relative and each tensor's gradient within 1e-5 of its
// largest (plus 1e-7: a tensor whose gradient is zero in exact arithmetic,
// like DPB's output bias under the softmax, keeps float noise); and the
// fused kernel gives the same bits on 1 and 2 threads.
static int test_fused_attention(void) {
    int fails = 0, cases = 0;
    const int shapes[][3] = {{2, 53, 24}, {1, ATTN_CHUNK + 6, ATTN_CHUNK}};  // B, T, chunk
    for (int e = 0; e < n_test_encodings; e++)
        for (int causal = 0; causal < 2; causal++)
            for (int rp = 0; rp < 2; rp++) {
                const char *pe = test_encodings[e];
                if (!test_mode_allowed(pe, causal) || (rp && !test_reads_positions(pe))) continue;
                for (int s = 0; s < 2; s++) {
                    int B = shapes[s][0], T = shapes[s][1], chunk = shapes[s][2];
                    model_config cfg;
                    test_tiny_config(&cfg, pe, causal);
                    cfg.rand_pos = rp ? 3 * T : 0;
                    model_t m;
                    model_create(&m, &cfg);
                    test_randomise_weights(&m, 60 + e);
                    int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T), *seg = malloc(sizeof(int) * B * T);
                    test_random_batch(B, T, cfg.vocab, causal, 70 + e, tok, tgt, seg);
                    double l_blocks, l_fused, l_one;
                    float *g_blocks = model_pass(&m, 0, ATTN_CHUNK, 2, B, T, tok, tgt, seg, &l_blocks);
                    float *g_fused = model_pass(&m, 1, chunk, 2, B, T, tok, tgt, seg, &l_fused);
                    float *g_one = model_pass(&m, 1, chunk, 1, B, T, tok, tgt, seg, &l_one);
                    const char *mode = causal ? "causal" : "bidir", *rps = rp ? " --rand-pos" : "";
                    EXPECT(fabs(l_fused - l_blocks) <= 1e-5 * fabs(l_blocks), "pe=%s %s%s T=%d: loss fused %.8f blocks %.8f",
                           pe, mode, rps, T, l_fused, l_blocks);
                    EXPECT(l_one == l_fused && memcmp(g_one, g_fused, sizeof(float) * m.tab.total) == 0,
                           "pe=%s %s%s T=%d: the fused kernel's bits differ between 1 and 2 threads", pe, mode, rps, T);
                    for (int k = 0; k < m.tab.n; k++) {
                        const tensor_info *ti = &m.tab.t[k];
                        double gmax = 0, dmax = 0;
                        for (size_t i = 0; i < ti->size; i++) {
                            double a = g_blocks[ti->offset + i], b = g_fused[ti->offset + i];
                            gmax = fabs(a) > gmax ? fabs(a) : gmax;
                            dmax = worse(dmax, fabs(a - b));
                        }
                        EXPECT(dmax <= 1e-5 * gmax + 1e-7, "pe=%s %s%s T=%d: %s fused differs from blocks by %.3g (largest %.3g)",
                               pe, mode, rps, T, ti->name, dmax, gmax);
                    }
                    free(g_blocks), free(g_fused), free(g_one), free(tok), free(tgt), free(seg);
                    model_free(&m);
                    cases++;
                }
            }
    printf("    %d cases\n", cases);
    return fails;
}

// --attn-stats: the sums each kernel accumulates at evaluation equal those
// computed here from the weights a training pass saves (B, NH, T, T), by the
// definitions in attn.h, for causal and bidirectional (with segments)
// attention, blocks and fused kernels, in blocks of 16 rows.
static int test_attn_stats(void) {
    int fails = 0;
    const int B = 2, T = 80;
    for (int causal = 1; causal >= 0; causal--)
        for (int fused = 0; fused <= 1; fused++) {
            model_config cfg;
            test_tiny_config(&cfg, "rope", causal);
            model_t m;
            model_create(&m, &cfg);
            test_randomise_weights(&m, 11);
            const int NL = cfg.layers, NH = cfg.heads;
            int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T), *seg = malloc(sizeof(int) * B * T);
            test_random_batch(B, T, cfg.vocab, causal, 13, tok, tgt, seg);
            size_t n = (size_t)NL * NH * ATTN_NSTAT;
            double *ref = calloc(n, sizeof(double)), *got = calloc(n, sizeof(double));
            m.attn_fused = 0;
            model_acts a;
            model_acts_alloc(&a, &m, B, T, 1);
            model_forward(&m, &a, tok, tgt, seg);
            for (int l = 0; l < NL; l++)
                for (int b = 0; b < B; b++)
                    for (int h = 0; h < NH; h++)
                        for (int i = 0; i < T; i++) {
                            const float *w = a.att + ((((size_t)l * B + b) * NH + h) * T + i) * T;
                            double *acc = ref + ((size_t)l * NH + h) * ATTN_NSTAT;
                            if (i >= 1) acc[0] += w[0], acc[1] += 1;
                            for (int k = 0; k < ATTN_STAT_DISTS; k++) {
                                double far = 0;
                                int any = 0;
                                for (int j = 0; j < T; j++) {
                                    int dist = i > j ? i - j : j - i;
                                    if ((causal && j > i) || dist < attn_stat_dist[k]) continue;
                                    far += w[j], any = 1;
                                }
                                if (any) acc[2 + 2 * k] += far, acc[3 + 2 * k] += 1;
                            }
                        }
            model_acts_free(&a);
            m.attn_fused = fused, m.attn_chunk = 16;
            model_acts_alloc(&a, &m, B, T, 0);
            a.attn_stats = got;
            model_forward(&m, &a, tok, tgt, seg);
            model_acts_free(&a);
            double dmax = 0;
            for (size_t i = 0; i < n; i++) dmax = worse(dmax, fabs(ref[i] - got[i]));
            EXPECT(dmax < 1e-4, "%s %s: the attention statistics differ from the saved weights' by %.3g",
                   causal ? "causal" : "bidir", fused ? "fused" : "blocks", dmax);
            EXPECT(ref[3] > 0 && ref[2 + 2 * (ATTN_STAT_DISTS - 1) + 1] == 0, "rows counted: %g at 16, %g at 256 (T = %d)",
                   ref[3], ref[2 + 2 * (ATTN_STAT_DISTS - 1) + 1], T);
            free(ref), free(got), free(tok), free(tgt), free(seg);
            model_free(&m);
        }
    return fails;
}

const test_case kernel_tests[] = {
    {"kernel/expf_within_2_ulp", test_expf},
    {"kernel/expf_exact_is_libm_expf", test_expf_exact},
    {"kernel/gelu_matches_tanh_formula", test_gelu},
    {"kernel/matmul_matches_triple_loops", test_matmul},
    {"kernel/layernorm_matches_textbook", test_layernorm},
    {"kernel/attention_softmax_paths_match_reference", test_attention_softmax_paths},
    {"kernel/reductions_thread_independent", test_reductions},
    {"kernel/fused_attention_matches_blocks", test_fused_attention},
    {"kernel/attn_stats_match_saved_weights", test_attn_stats},
};
const int n_kernel_tests = sizeof kernel_tests / sizeof kernel_tests[0];
