// bench.c — `make bench`: training and evaluation speed at docs/performance.md's reference
// configuration (d 256, 4 layers, 8 heads, ctx 256, batch 8, byte vocabulary,
// rope), the machine's sgemm rate at the model's shapes, the share of it the
// training step reaches, the FMA and bf16 peaks, a per-op breakdown, peak
// memory. The peers (PyTorch 2, JAX) are timed by bench/peers/peers.py, which
// reads the figures this writes (--figures, default results/bench.json) and
// adds their section and the targets to the report.
//
// Both attention kernels are timed (--attn-kernel in ./train): the blocks
// one (the default) and the fused one.
//
//   ./bench-pelab [--steps N] [--threads N] [--pe NAME] [--out FILE] [--figures FILE] [--gemm E] [--no-encodings]
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../core/json.h"
#include "../core/startup.h"
#include "../model/gemm.h"
#include "../model/model.h"
#include "../model/ops.h"

typedef struct {
    int steps, threads, encodings;
    const char *pe, *out, *figures, *gemm;
} bench_opts;

enum { V = 256, C = 256, L = 4, H = 8, T = 256, B = 8 };
enum { MAX_PE = 64, MAX_CONF = 8 };
// The larger shape: GPT-2 small's layers (d 768, 12 heads) at ctx 1024, 4 layers, batch 1.
enum { LC = 768, LH = 12, LT = 1024, LL = 4, LB = 1 };

// The figures the peers' report and the targets read (bench/peers/peers.py),
// written as JSON beside the report.
typedef struct {
    double fma_peak, bf16_peak;  // FLOP/s; bf16_peak 0: no AVX-512 BF16 here
    double tps, tps_fused, tps_alibi;  // the reference model's training tokens/s (blocks, fused; ALiBi, blocks)
    int nconf, conf_ok[MAX_CONF];
    double conf_tps[MAX_CONF], conf_rate[MAX_CONF], large_tps[MAX_CONF], large_flops;
    double large_share[PROF_N + 1];  // the larger shape's step per op (prof_names, then "other")
    int npe;
    char pe_name[MAX_PE][32];
    double pe_vs[MAX_PE][3];  // blocks kernel: the median ratio to NoPE and its interval
} bench_figures;

// The reference model with encoding pe; option (or NULL) set to value.
static void make_model_with(model_t *m, const char *pe, int fused, const char *option, double value) {
    model_config c = {0};
    c.vocab = V, c.ctx = T, c.d_model = C, c.layers = L, c.heads = H, c.causal = 1;
    snprintf(c.pe, sizeof c.pe, "%s", pe);
    if (option) config_set(&c, option, value);
    model_create(m, &c);
    model_init_weights(m, 1);
    m->attn_fused = fused;
}

// The profiled ops (model_profile), as the tables name them.
static const char *const prof_names[PROF_N] = {"matrix products", "attention (incl. score/value terms)", "LayerNorm",
                                               "GELU", "softmax/cross-entropy", "optimiser",
                                               "encoding (rotation, tables)", "residual adds"};

static void make_model(model_t *m, const char *pe, int fused) { make_model_with(m, pe, fused, NULL, 0); }

static void random_batch(int n, int *tok, int *tgt, unsigned long long seed) {
    rng_t r = {seed};
    for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, V), tgt[i] = (int)rng_below(&r, V);
}

// Model FLOPs per trained token: matrix products 2·(12·L·C² + V·C) forward,
// attention 2·2·C·(T+1)/2 per layer forward (causal: the average query sees
// (T+1)/2 keys; QKᵀ and PV), and backward twice the forward.
static double flops_per_token(void) {
    double fwd = 2.0 * (12.0 * L * C * C + (double)V * C) + 4.0 * L * C * (T + 1) / 2.0;
    return 3.0 * fwd;
}

static double time_train(model_t *m, model_acts *a, int steps, int *tok, int *tgt) {
    adamw_hparams hp = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    double t0 = now_seconds();
    for (int s = 0; s < steps; s++) {
        model_forward(m, a, tok, tgt, NULL);
        model_zero_grad(m);
        model_backward(m, a, tok, tgt, NULL);
        model_adamw_step(m, &hp, 1.0f, s + 1);
    }
    return now_seconds() - t0;
}

// The linear layers' products at the reference shape (rows, IC, OC), as
// the sgemm rate measures them.
static const int model_shapes[][3] = {{B * T, C, 3 * C}, {B * T, C, C}, {B * T, C, 4 * C},
                                      {B * T, 4 * C, C}, {B * T, C, V}};
enum { N_SHAPES = sizeof model_shapes / sizeof model_shapes[0], SGEMM_REPS = 5 };

// Inputs for the products of model_shapes (the largest of each operand).
typedef struct {
    float *A, *W, *O;
} shape_bufs;

static shape_bufs shape_bufs_alloc(void) {
    size_t maxn = (size_t)(B * T) * 4 * C;
    shape_bufs s = {malloc(sizeof(float) * maxn), malloc(sizeof(float) * 4 * C * C), malloc(sizeof(float) * maxn)};
    rng_t r = {5};
    for (size_t i = 0; i < maxn; i++) s.A[i] = rng_normal(&r), s.O[i] = 0;
    for (size_t i = 0; i < (size_t)4 * C * C; i++) s.W[i] = rng_normal(&r);
    return s;
}

static void shape_bufs_free(shape_bufs *s) { free(s->A), free(s->W), free(s->O); }

// Seconds of SGEMM_REPS products out = A · Wᵀ of one shape: by pelab's row
// blocks (matmul_forward, the engine as the model calls it), or by OpenBLAS
// threading one call.
static double product_pass(int blas, int N, int IC, int OC, const float *A, const float *W, float *O) {
    double t0 = now_seconds();
    for (int k = 0; k < SGEMM_REPS; k++) {
        if (blas) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, A, IC, W, IC, 0.0f, O, OC);
        else matmul_forward(O, A, W, NULL, (size_t)N, IC, OC);
    }
    return now_seconds() - t0;
}

// One pass of the row-block products at every shape; FLOP/s.
static double rows_pass_rate(shape_bufs *s) {
    double flops = 0, secs = 0;
    for (int k = 0; k < N_SHAPES; k++) {
        const int *sh = model_shapes[k];
        secs += product_pass(0, sh[0], sh[1], sh[2], s->A, s->W, s->O);
        flops += 2.0 * sh[0] * sh[1] * sh[2] * SGEMM_REPS;
    }
    return flops / secs;
}

// The share of the products' rate read in pairs: after every timed training
// block, one pass of the row-block products, so that a slow spell of the
// machine slows both of a pair; share[k] = the block's FLOP/s over the
// pass's rate.
enum { MAX_PAIRS = 16 };
typedef struct {
    shape_bufs bufs;
    double share[MAX_PAIRS];
    int n;
} paired_share;

// Training tokens/s of the fastest of `blocks` timed blocks of `steps` steps
// after 3 warm-up steps. The machine is shared and its speed drifts by ±20%
// within a minute; interference only ever slows a block down, so the fastest
// block is the steadiest estimate of what the code does (PyTorch's figure
// and the sgemm rate are taken the same way). With ps, each block is paired
// with a pass of the products (paired_share).
static double train_tokens_per_s(model_t *m, model_acts *a, int blocks, int steps, int *tok, int *tgt,
                                 paired_share *ps) {
    double best = 0;
    time_train(m, a, 3, tok, tgt);
    for (int k = 0; k < blocks; k++) {
        double r = (double)steps * B * T / time_train(m, a, steps, tok, tgt);
        if (r > best) best = r;
        if (ps && ps->n < MAX_PAIRS) ps->share[ps->n++] = flops_per_token() * r / rows_pass_rate(&ps->bufs);
    }
    return best;
}

// Evaluation tokens/s: 16 windows of T per forward, as eval does; the
// fastest of 5 forwards after one warm-up.
static double eval_tokens_per_s(model_t *m, int *tok, int *tgt) {
    model_acts e;
    model_acts_alloc(&e, m, 16, T, 0);
    model_forward(m, &e, tok, tgt, NULL);
    double best = 1e30;
    for (int k = 0; k < 5; k++) {
        double t0 = now_seconds();
        model_forward(m, &e, tok, tgt, NULL);
        double t = now_seconds() - t0;
        if (t < best) best = t;
    }
    model_acts_free(&e);
    return 16.0 * T / best;
}

// Models m[0..n) take turns, `rounds` rounds of (steps+1)/2 training steps
// each, and each keeps its fastest round in best[] (tokens/s), so a slow
// spell of the machine cannot land on one model only. Allocates a[].
// The models' activations allocated and two warm-up steps each; best[] zeroed.
static void race_start(model_t *m, model_acts *a, int n, int *tok, int *tgt, double *best) {
    for (int k = 0; k < n; k++) {
        model_acts_alloc(&a[k], &m[k], B, T, 1);
        time_train(&m[k], &a[k], 2, tok, tgt);
        best[k] = 0;
    }
}

static void race(model_t *m, model_acts *a, int n, int rounds, int steps, int *tok, int *tgt, double *best) {
    race_start(m, a, n, tok, tgt, best);
    for (int round = 0; round < rounds; round++)
        for (int k = 0; k < n; k++) {
            int st = (steps + 1) / 2;
            double r = (double)st * B * T / time_train(&m[k], &a[k], st, tok, tgt);
            if (r > best[k]) best[k] = r;
        }
}

// Relative clipping against speed: Shaw and XL compute their
// score term once per clipped distance (2k+1 of them; XL without clipping,
// every distance up to T), then gather it over the T² scores, so clipping
// shrinks that product but not attention's own T² work.
static int clip_table(char *out, size_t cap, int steps) {
    enum { ROUNDS = 5, NK = 5 };
    const char *pes[2] = {"shaw", "xl"};
    const double ks[2][NK] = {{2, 8, 32, 128, 255}, {2, 8, 32, 128, NAN}};
    int n = snprintf(out, cap, "\nRelative clipping (`--rel-clip k`) at the reference shape, blocks kernel (the models take "
                               "turns, %d rounds of %d steps; each keeps its fastest round). Shaw and XL compute their score "
                               "term once per clipped distance and gather it over the ctx² scores, so clipping shrinks that "
                               "product only:\n\n| pe | --rel-clip | tokens/s | vs the widest |\n|---|---|---|---|\n",
                     ROUNDS, (steps + 1) / 2);
    int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T);
    random_batch(B * T, tok, tgt, 1);
    model_t m[2 * NK];
    model_acts a[2 * NK];
    double best[2 * NK];
    for (int k = 0; k < 2 * NK; k++) {
        double v = ks[k / NK][k % NK];
        make_model_with(&m[k], pes[k / NK], 0, isnan(v) ? NULL : "rel-clip", v);
    }
    race(m, a, 2 * NK, ROUNDS, steps, tok, tgt, best);
    for (int k = 0; k < 2 * NK; k++) {
        double v = ks[k / NK][k % NK], widest = best[(k / NK) * NK + NK - 1];
        char kt[32];
        if (isnan(v)) snprintf(kt, sizeof kt, "none (%d distances)", T);
        else snprintf(kt, sizeof kt, "%.0f", v);
        n += snprintf(out + n, cap - n, "| %s | %s | %.0f | %+.1f%% |\n", pes[k / NK], kt, best[k],
                      100.0 * (best[k] / widest - 1.0));
        model_acts_free(&a[k]);
        model_free(&m[k]);
    }
    free(tok), free(tgt);
    return n;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// Paired turns, one model at a time: every model k of m[0..n) but the
// references takes `rounds` pairs of turns with its reference ref[k], right
// after one another (the reference first in even rounds, second in odd
// ones). A turn is `st` steps and counts its fastest: the machine is shared,
// and other work on it lands on single steps (a step 20% slow in a third of
// single-step pairs, some runs), and only ever adds time. ratio[k * rounds +
// round] gets k's speed over the reference's in that pair; a slow spell of
// seconds slows both of it. (Until session 23 a turn's speed was its total
// time and each model's pair came once per round of all 26 pairs, 7
// rounds: CoPE's median came out 3–8 points below the same code's in this
// design; steps of two models taking turns in one process, no other model
// between, agree with this design.) best[] keeps each model's fastest step
// (tokens/s). Allocates a[].
static void race_paired(model_t *m, model_acts *a, int n, const int *ref, int rounds, int st, int *tok, int *tgt,
                        double *best, double *ratio) {
    race_start(m, a, n, tok, tgt, best);
    double tokens = (double)B * T;
    for (int k = 0; k < n; k++) {
        if (ref[k] == k) continue;
        for (int round = 0; round < rounds; round++) {
            int first = round % 2 ? k : ref[k], second = round % 2 ? ref[k] : k;
            double r[2] = {0, 0};
            for (int side = 0; side < 2; side++) {
                int who = side ? second : first;
                for (int s = 0; s < st; s++) {
                    double v = tokens / time_train(&m[who], &a[who], 1, tok, tgt);
                    if (v > r[side]) r[side] = v;
                }
                if (r[side] > best[who]) best[who] = r[side];
            }
            ratio[(size_t)k * rounds + round] = first == k ? r[0] / r[1] : r[1] / r[0];
        }
    }
}

// The ranks lo < hi (0-based, of n sorted values) of the narrowest
// order-statistic interval for the median with coverage at least 95%: the
// median lies below the (lo+1)-th smallest of n values with probability
// P(Binomial(n, ½) ≤ lo), so [x_lo, x_(n−1−lo)] misses it with probability
// 2·P(Binomial(n, ½) ≤ lo). Returns the coverage; ranks 0 and n − 1 when
// n is too small for 95%.
static double median_interval(int n, int *lo, int *hi) {
    double cdf = 0, term = pow(0.5, n), best = 1.0 - 2.0 * term;  // P(B = 0) = 2^−n
    *lo = 0;
    for (int k = 0; k < n / 2; k++) {
        cdf += term;                       // P(B ≤ k)
        if (1.0 - 2.0 * cdf < 0.95) break;
        *lo = k, best = 1.0 - 2.0 * cdf;
        term = term * (n - k) / (k + 1);   // P(B = k + 1)
    }
    *hi = n - 1 - *lo;
    return best;
}

// The median of x[0..n) (sorts x).
static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

// 1 when name is one of the comma-separated list's items.
static int name_in_list(const char *name, const char *list) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

// Every encoding of the registry at the reference shape, with its default
// options, against NoPE with the same attention kernel: paired turns
// (race_paired), the median of the pairs' ratios with its 95% interval;
// then every encoding read against the target of 15% by that interval.
// only: a comma-separated list of the encodings to race (none is always
// raced, as the reference), or NULL for every one. fig (or NULL) keeps the
// blocks kernel's ratios.
static int encodings_table(char *out, size_t cap, const char *only, bench_figures *fig) {
    enum { ROUNDS = 11, ST = 3 };
    const pe_ops *pes[MAX_PE];
    int NPE = 0;
    for (int e = 0; e < pe_registry_count && NPE < MAX_PE; e++)
        if (!only || e == 0 || name_in_list(pe_registry[e]->name, only)) pes[NPE++] = pe_registry[e];
    int lo, hi;
    double cover = median_interval(ROUNDS, &lo, &hi);
    int n = snprintf(out, cap, "\n%s at the reference shape, with each attention kernel, against NoPE with the "
                               "same kernel in %d pairs of turns, one encoding after another (a turn: %d steps, its fastest "
                               "counting; NoPE first in one pair, second in the next). \"vs none\" is the median of the "
                               "pairs' speed ratios with its %.1f%% interval (the %d smallest and the %d largest of the %d "
                               "ratios left out); tokens/s each model's fastest step:\n\n"
                               "| pe | blocks: tokens/s | vs none | fused: tokens/s | vs none | fused vs blocks |\n"
                               "|---|---|---|---|---|---|\n",
                     only ? "The encodings named" : "Every encoding", ROUNDS, ST, 100.0 * cover, lo, lo, ROUNDS);
    int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T);
    random_batch(B * T, tok, tgt, 1);
    const int NM = 2 * NPE;  // model k: encoding k / 2, kernel k % 2 (0 blocks, 1 fused); none is encoding 0
    model_t *m = calloc((size_t)NM, sizeof *m);
    model_acts *a = calloc((size_t)NM, sizeof *a);
    double *best = calloc((size_t)NM, sizeof *best), *ratio = calloc((size_t)NM * ROUNDS, sizeof *ratio);
    int *ref = malloc(sizeof(int) * NM);
    for (int k = 0; k < NM; k++) make_model(&m[k], pes[k / 2]->name, k % 2), ref[k] = k % 2;
    race_paired(m, a, NM, ref, ROUNDS, ST, tok, tgt, best, ratio);
    char outside[1024] = "", undecided[1024] = "";
    int no = 0, nu = 0;
    if (fig) fig->npe = NPE;
    for (int e = 0; e < NPE; e++) {
        char vs[2][64];
        if (fig) snprintf(fig->pe_name[e], sizeof fig->pe_name[e], "%s", pes[e]->name);
        for (int kern = 0; kern < 2; kern++) {
            double *r = ratio + (size_t)(2 * e + kern) * ROUNDS;
            if (e == 0) {
                snprintf(vs[kern], sizeof vs[kern], "+0.0%%");
                if (fig && kern == 0) fig->pe_vs[e][0] = fig->pe_vs[e][1] = fig->pe_vs[e][2] = 1.0;
                continue;
            }
            double med = median(r, ROUNDS);  // (r is sorted now)
            snprintf(vs[kern], sizeof vs[kern], "%+.1f%% [%+.1f, %+.1f]", 100.0 * (med - 1.0), 100.0 * (r[lo] - 1.0),
                     100.0 * (r[hi] - 1.0));
            if (kern) continue;
            if (fig) fig->pe_vs[e][0] = med, fig->pe_vs[e][1] = r[lo], fig->pe_vs[e][2] = r[hi];
            if (r[hi] < 0.85)
                no += snprintf(outside + no, sizeof outside - no, "%s%s %+.1f%% [%+.1f, %+.1f]", no ? ", " : "",
                               pes[e]->name, 100.0 * (med - 1.0), 100.0 * (r[lo] - 1.0), 100.0 * (r[hi] - 1.0));
            else if (r[lo] <= 0.85)
                nu += snprintf(undecided + nu, sizeof undecided - nu, "%s%s", nu ? ", " : "", pes[e]->name);
        }
        double b = best[2 * e], f = best[2 * e + 1];
        n += snprintf(out + n, cap - n, "| %s | %.0f | %s | %.0f | %s | %+.1f%% |\n", pes[e]->name, b, vs[0], f,
                      vs[1], 100.0 * (f / b - 1.0));
    }
    n += snprintf(out + n, cap - n, "\nAgainst the target of every encoding within 15%% of NoPE (blocks kernel, by the "
                                    "interval): ");
    if (!no && !nu) n += snprintf(out + n, cap - n, "every one within 15%% (the whole interval).\n");
    else
        n += snprintf(out + n, cap - n, "%s%s%s%s%s.\n", no ? "outside: " : "", outside, no && nu ? "; " : "",
                      nu ? "undecided (the interval straddles 15%): " : "", undecided);
    for (int k = 0; k < NM; k++) {
        model_acts_free(&a[k]);
        model_free(&m[k]);
    }
    free(tok), free(tgt), free(m), free(a), free(best), free(ratio), free(ref);
    return n;
}

// Seconds of the fastest of 5 passes (after one warm-up) of 5 products
// out = A · Wᵀ of one shape: by pelab's row blocks, or by OpenBLAS threading
// one call. The machine is shared, and interference only ever adds time.
static double best_pass(int blas, int N, int IC, int OC, const float *A, const float *W, float *O) {
    double best = 1e30;
    for (int pass = 0; pass < 6; pass++) {
        double t = product_pass(blas, N, IC, OC, A, W, O);
        if (pass && t < best) best = t;
    }
    return best;
}

// The best sgemm rate at the model's shapes: OpenBLAS threading itself on one
// call, or pelab's row blocks with one OpenBLAS thread per OpenMP thread.
// The row blocks are timed first, all shapes, then OpenBLAS threading
// itself; then its pool is given half a second to stop. Its worker
// spin-waits after a call, and a row-block pass run straight after an
// OpenBLAS-threaded one shared the two cores with it: the rate came out at
// 170 to 380 GFLOP/s from one call to the next on the AMD EPYC (380 every
// time in this order).
static double sgemm_rate(int threads, double *rate_rows) {
    shape_bufs sb = shape_bufs_alloc();
    double flops = 0, t_secs[2] = {0, 0};  // [0] row blocks, [1] OpenBLAS threading
    for (int blas = 0; blas < 2; blas++) {
        openblas_set_num_threads(blas ? threads : 1);
        for (int s = 0; s < N_SHAPES; s++) {
            const int *sh = model_shapes[s];
            t_secs[blas] += best_pass(blas, sh[0], sh[1], sh[2], sb.A, sb.W, sb.O);
            if (!blas) flops += 2.0 * sh[0] * sh[1] * sh[2] * SGEMM_REPS;
        }
    }
    openblas_set_num_threads(1);
    usleep(500000);
    shape_bufs_free(&sb);
    *rate_rows = flops / t_secs[0];
    return flops / t_secs[1];
}

// The machine's peak rate of single-precision fused multiply-adds (FLOP/s):
// `threads` threads each run 12 independent chains of FMAs on vectors as
// wide as the build targets (-march=native: 16 floats with AVX-512, 8 with
// AVX2), enough to cover the FMA units' latency. The fastest of 20 passes.
#if defined(__AVX512F__)
#define FMA_LANES 16
#else
#define FMA_LANES 8
#endif
typedef float fma_vec __attribute__((vector_size(4 * FMA_LANES)));
static float fma_chains(long iters) {
    fma_vec mul, add, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
    for (int l = 0; l < FMA_LANES; l++) {
        mul[l] = 0.999999f, add[l] = 1e-7f;
        a0[l] = a1[l] = a2[l] = a3[l] = a4[l] = a5[l] = (float)l;
        a6[l] = a7[l] = a8[l] = a9[l] = a10[l] = a11[l] = (float)-l;
    }
    for (long i = 0; i < iters; i++) {  // 12 chains: in registers, not memory
        a0 = a0 * mul + add, a1 = a1 * mul + add, a2 = a2 * mul + add, a3 = a3 * mul + add;
        a4 = a4 * mul + add, a5 = a5 * mul + add, a6 = a6 * mul + add, a7 = a7 * mul + add;
        a8 = a8 * mul + add, a9 = a9 * mul + add, a10 = a10 * mul + add, a11 = a11 * mul + add;
    }
    fma_vec t = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
    float sum = 0;
    for (int l = 0; l < FMA_LANES; l++) sum += t[l];
    return sum;
}

// The fastest of 20 short passes (one of them finds the cores free) of
// `threads` threads each running chains(iters), which does flops_per_iter
// FLOPs per iteration: FLOP/s.
static double best_pass_rate(int threads, float (*chains)(long), long iters, double flops_per_iter) {
    double best = 0;
    for (int pass = 0; pass < 20; pass++) {
        float sink = 0;
        double t0 = now_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += chains(iters);
        double t = now_seconds() - t0;
        if (sink == 12345.0f) printf(" ");  // keeps the chains' result alive
        double r = flops_per_iter * (double)iters * threads / t;
        if (r > best) best = r;
    }
    return best;
}

static double fma_peak(int threads) { return best_pass_rate(threads, fma_chains, 2000000, 2.0 * FMA_LANES * 12); }

// The machine's peak rate of bf16 products (FLOP/s, 2 per multiply-add, as
// the model's FLOPs count them): 12 independent chains of AVX-512 BF16
// dot products (vdpbf16ps: 16 lanes, each adding two bf16 products to a float)
// per thread, the fastest of 20 passes; 0 on a CPU without AVX-512 BF16 (oneDNN
// then has no bf16 product either). Compiled for that extension whatever the
// build's target, and run only where the CPU has it.
#if defined(__x86_64__)
#include <immintrin.h>
// The 12 chains are named variables, not an array: an array indexed in a
// loop the compiler does not unroll lives in memory, and its stores and
// loads, not the dot products, would set the pace (half the rate, measured).
#define BF16_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
__attribute__((target("avx512f,avx512bf16"))) static float bf16_chains(long iters) {
#define BF16_START(c) __m512 acc##c = _mm512_set1_ps((float)(c));
#define BF16_STEP(c) acc##c = _mm512_dpbf16_ps(acc##c, x, y);
#define BF16_SUM(c) t = _mm512_add_ps(t, acc##c);
    BF16_CHAINS(BF16_START)
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3300);  // 1 and 2^-25
    for (long i = 0; i < iters; i++) {
        BF16_CHAINS(BF16_STEP)
    }
    __m512 t = _mm512_setzero_ps();
    BF16_CHAINS(BF16_SUM)
    return _mm512_reduce_add_ps(t);
}
#endif
static double bf16_peak(int threads) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bf16")) return 0;
    return best_pass_rate(threads, bf16_chains, 1000000, 4.0 * 16 * 12);
#else
    (void)threads;
    return 0;
#endif
}

// What the bench compares: each engine of model/gemm.h's list at fp32, and
// oneDNN's bf16 mixed precision (--precision bf16).
#define BENCH_FP32(name) {#name, "fp32", #name},
static const struct {
    const char *engine, *precision, *label;
} configs[] = {GEMM_LIST(BENCH_FP32){"onednn", "bf16", "onednn, bf16"}};
enum { NCONF = sizeof configs / sizeof configs[0] };
_Static_assert((int)NCONF <= (int)MAX_CONF, "bench_figures holds MAX_CONF configurations");

static int use_config(int i, char *err, size_t len) {
    return gemm_use(configs[i].engine, err, len) && gemm_set_precision(configs[i].precision, err, len);
}

// Each matrix engine built in: its sgemm rate at the model's shapes (pelab's
// row blocks, the way the model calls it), the training speed of the
// reference model on it (the engines take turns, 5 rounds; each keeps its
// fastest), and both against the FMA peak (bf16: against the bf16 peak too).
static int engines_table(char *out, size_t cap, int steps, int threads, bench_figures *fig) {
    double peak = fig->fma_peak;
    enum { ROUNDS = 5 };
    char err[256], before[32];
    snprintf(before, sizeof before, "%s", gemm_name());
    int n = snprintf(out, cap, "\nThe matrix engines (`--gemm`; `auto` picks %s here) and oneDNN with bf16 products (`--precision bf16`), reference shape, blocks kernel (each engine's sgemm rate the faster of a pass before its training turns and one after them); the "
                               "FMA peak of %d threads is %.1f GFLOP/s (%d-float vectors)",
                     before, threads, peak / 1e9, FMA_LANES);
    if (fig->bf16_peak > 0)
        n += snprintf(out + n, cap - n, ", their bf16 peak %.1f GFLOP/s (AVX-512 BF16 dot products)", fig->bf16_peak / 1e9);
    n += snprintf(out + n, cap - n, ":\n\n| engine | sgemm GFLOP/s (row blocks) | share of FMA peak | training tokens/s | share of "
                                    "its sgemm rate | share of FMA peak |\n|---|---|---|---|---|---|\n");
    int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T);
    random_batch(B * T, tok, tgt, 1);
    model_t m[NCONF];
    model_acts a[NCONF];
    double best[NCONF], rate[NCONF];
    int ok[NCONF];
    char why[NCONF][256];
    for (int e = 0; e < NCONF; e++) {
        ok[e] = use_config(e, why[e], sizeof why[e]);
        if (!ok[e]) continue;
        double rows;
        sgemm_rate(threads, &rows);
        rate[e] = rows;
        make_model(&m[e], "rope", 0);
        model_acts_alloc(&a[e], &m[e], B, T, 1);
        time_train(&m[e], &a[e], 2, tok, tgt);
        best[e] = 0;
    }
    for (int round = 0; round < ROUNDS; round++)
        for (int e = 0; e < NCONF; e++) {
            if (!ok[e]) continue;
            use_config(e, err, sizeof err);
            int st = (steps + 1) / 2;
            double r = (double)st * B * T / time_train(&m[e], &a[e], st, tok, tgt);
            if (r > best[e]) best[e] = r;
        }
    // each engine's rate the faster of a pass before its training turns and
    // one after them, as the first table's: one pass can fall in a slow spell
    for (int e = 0; e < NCONF; e++) {
        if (!ok[e]) continue;
        use_config(e, err, sizeof err);
        double rows;
        sgemm_rate(threads, &rows);
        if (rows > rate[e]) rate[e] = rows;
    }
    double flops = flops_per_token();
    fig->nconf = NCONF;
    for (int e = 0; e < NCONF; e++) {
        fig->conf_ok[e] = ok[e];
        if (!ok[e]) continue;
        fig->conf_tps[e] = best[e], fig->conf_rate[e] = rate[e];
        char bf16[64] = "";
        if (!strcmp(configs[e].precision, "bf16") && fig->bf16_peak > 0)
            snprintf(bf16, sizeof bf16, "; %.1f%% of the bf16 peak", 100.0 * flops * best[e] / fig->bf16_peak);
        n += snprintf(out + n, cap - n, "| %s | %.1f | %.1f%% | %.0f | %.1f%% | %.1f%%%s |\n", configs[e].label,
                      rate[e] / 1e9, 100.0 * rate[e] / peak, best[e], 100.0 * flops * best[e] / rate[e],
                      100.0 * flops * best[e] / peak, bf16);
        model_acts_free(&a[e]);
        model_free(&m[e]);
    }
    for (int e = 0; e < NCONF; e++)  // the configurations this machine cannot run, after those it ran
        if (!ok[e]) n += snprintf(out + n, cap - n, "| %s | %s | | | | |\n", configs[e].label, why[e]);
    gemm_use(before, err, sizeof err);
    free(tok), free(tgt);
    return n;
}

// Peak resident memory (MiB) of a fresh process (this program, exec'd with
// --child WHAT) that does one thing. A plain fork would inherit the OpenMP
// thread pool in a broken state and hang.
static double child_peak_mib(const char *what, const char *pe) {
    char cmd[4200], self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = '\0';
    snprintf(cmd, sizeof cmd, "'%s' --child %s --pe %s", self, what, pe);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    double mib = -1;
    if (fscanf(f, "%lf", &mib) != 1) mib = -1;
    pclose(f);
    return mib;
}

static double own_peak_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static void train_a_step(const char *pe, int fused) {
    model_t m;
    make_model(&m, pe, fused);
    model_acts a;
    model_acts_alloc(&a, &m, B, T, 1);
    int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T);
    random_batch(B * T, tok, tgt, 1);
    time_train(&m, &a, 2, tok, tgt);
}

static void eval_16k(const char *pe, int fused) {
    model_t m;
    make_model(&m, pe, fused);
    model_acts a;
    int n = 16384;
    model_acts_alloc(&a, &m, 1, n, 0);
    int *tok = malloc(sizeof(int) * n), *tgt = malloc(sizeof(int) * n);
    random_batch(n, tok, tgt, 2);
    model_forward(&m, &a, tok, tgt, NULL);
}

// GPT-2 small's layer shape (d 768, 12 heads) at ctx 1024, 4 layers, batch 1:
// tokens/s on each engine, the share of the step per op, and how the cost per
// token grew from the reference shape.
static int large_table(char *out, size_t cap, double ref_tps, bench_figures *fig) {
    enum { STEPS = 2, ROUNDS = 3 };
    char err[256], before[32];
    snprintf(before, sizeof before, "%s", gemm_name());
    int *tok = malloc(sizeof(int) * LB * LT), *tgt = malloc(sizeof(int) * LB * LT);
    random_batch(LB * LT, tok, tgt, 4);
    model_config c = {0};
    c.vocab = V, c.ctx = LT, c.d_model = LC, c.layers = LL, c.heads = LH, c.causal = 1;
    snprintf(c.pe, sizeof c.pe, "rope");
    model_t m;
    model_create(&m, &c);
    model_init_weights(&m, 1);
    model_acts a;
    model_acts_alloc(&a, &m, LB, LT, 1);
    double best[NCONF] = {0}, prof[PROF_N] = {0}, psecs = 0;
    int ne = NCONF, ok[NCONF];
    for (int e = 0; e < ne; e++) ok[e] = use_config(e, err, sizeof err);
    for (int round = 0; round < ROUNDS; round++)
        for (int e = 0; e < ne; e++) {
            if (!ok[e]) continue;
            use_config(e, err, sizeof err);
            if (!round) time_train(&m, &a, 1, tok, tgt);
            double r = (double)STEPS * LB * LT / time_train(&m, &a, STEPS, tok, tgt);
            if (r > best[e]) best[e] = r;
        }
    gemm_use(before, err, sizeof err);
    memset(&m.prof, 0, sizeof m.prof);
    m.prof.enabled = 1;
    psecs = time_train(&m, &a, STEPS, tok, tgt);
    m.prof.enabled = 0;
    memcpy(prof, m.prof.seconds, sizeof prof);
    double fwd = 2.0 * (12.0 * LL * LC * LC + (double)V * LC) + 4.0 * LL * LC * (LT + 1) / 2.0;
    int n = snprintf(out, cap, "\nA larger shape: GPT-2 small's layers (d %d, %d heads) at ctx %d, %d layers, batch %d, "
                               "rope (%.0f M FLOPs per trained token, %.1f× the reference's); the engines take turns, %d "
                               "rounds of %d steps, each keeps its fastest:\n\n| measure | value |\n|---|---|\n",
                     LC, LH, LT, LL, LB, 3 * fwd / 1e6, 3 * fwd / flops_per_token(), ROUNDS, STEPS);
    for (int e = 0; e < ne; e++)
        if (ok[e])
            n += snprintf(out + n, cap - n, "| training tokens/s, %s | %.0f (%.1f GFLOP/s; %.1f× slower per token "
                          "than the reference shape's %.0f) |\n", configs[e].label, best[e], 3 * fwd * best[e] / 1e9,
                          ref_tps / best[e], ref_tps);
    fig->large_flops = 3 * fwd;
    for (int e = 0; e < ne; e++) fig->large_tps[e] = ok[e] ? best[e] : 0;
    n += snprintf(out + n, cap - n, "\nShare of one training step at this shape (%s, %.0f ms):\n\n| op | share |\n|---|---|\n",
                  before, 1e3 * psecs / STEPS);
    double tot = 0;
    for (int k = 0; k < PROF_N; k++) {
        tot += prof[k];
        n += snprintf(out + n, cap - n, "| %s | %.1f%% |\n", prof_names[k], 100.0 * prof[k] / psecs);
        fig->large_share[k] = prof[k] / psecs;
    }
    n += snprintf(out + n, cap - n, "| other | %.1f%% |\n", 100.0 * (psecs - tot) / psecs);
    fig->large_share[PROF_N] = (psecs - tot) / psecs;
    model_acts_free(&a);
    model_free(&m);
    free(tok), free(tgt);
    return n;
}

// The figures bench/peers/peers.py reads (its peers' ratios and the
// targets), as JSON: 1 when written.
static int write_figures(const char *path, const bench_figures *fig, const bench_opts *o, const char *date,
                         const char *cpu, const double *prof, double psecs) {
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    __builtin_cpu_init();
    double flops = flops_per_token();
    fprintf(f, "{\n \"date\": \"%s\",\n \"cpu\": ", date);
    json_string(f, cpu);
    fprintf(f, ",\n \"avx512\": %s,\n \"avx512_bf16\": %s,\n \"threads\": %d,\n \"engine\": ",
            __builtin_cpu_supports("avx512f") ? "true" : "false", fig->bf16_peak > 0 ? "true" : "false", o->threads);
    json_string(f, gemm_name());
    fprintf(f, ",\n \"pe\": ");
    json_string(f, o->pe);
    fprintf(f, ",\n \"fma_peak_gflops\": %.2f,\n \"bf16_peak_gflops\": ", fig->fma_peak / 1e9);
    json_number(f, "%.2f", fig->bf16_peak > 0 ? fig->bf16_peak / 1e9 : NAN);
    fprintf(f, ",\n \"reference\": {\"shape\": {\"vocab\": %d, \"d\": %d, \"layers\": %d, \"heads\": %d, \"ctx\": %d, "
               "\"batch\": %d}, \"flops_per_token\": %.0f, \"tokens_per_s\": %.1f, \"tokens_per_s_fused\": %.1f, "
               "\"tokens_per_s_alibi\": %.1f, \"ops\": {",
            V, C, L, H, T, B, flops, fig->tps, fig->tps_fused, fig->tps_alibi);
    double tot = 0;
    for (int k = 0; k < PROF_N; k++) {
        fprintf(f, "%s", k ? ", " : "");
        json_string(f, prof_names[k]);
        fprintf(f, ": %.4f", prof[k] / psecs);
        tot += prof[k];
    }
    fprintf(f, ", \"other\": %.4f}},\n \"engines\": [", (psecs - tot) / psecs);
    for (int e = 0, first = 1; e < fig->nconf; e++) {
        if (!fig->conf_ok[e]) continue;
        fprintf(f, "%s\n  {\"engine\": \"%s\", \"precision\": \"%s\", \"tokens_per_s\": %.1f, \"sgemm_gflops\": %.2f, "
                   "\"large_tokens_per_s\": %.1f}",
                first ? "" : ",", configs[e].engine, configs[e].precision, fig->conf_tps[e], fig->conf_rate[e] / 1e9,
                fig->large_tps[e]);
        first = 0;
    }
    fprintf(f, "],\n \"large\": {\"shape\": {\"vocab\": %d, \"d\": %d, \"layers\": %d, \"heads\": %d, \"ctx\": %d, "
               "\"batch\": %d}, \"flops_per_token\": %.0f, \"ops\": {",
            V, LC, LL, LH, LT, LB, fig->large_flops);
    for (int k = 0; k <= PROF_N; k++) {
        fprintf(f, "%s", k ? ", " : "");
        json_string(f, k < PROF_N ? prof_names[k] : "other");
        fprintf(f, ": %.4f", fig->large_share[k]);
    }
    fprintf(f, "}},\n \"encodings\": [");
    for (int e = 0; e < fig->npe; e++)
        fprintf(f, "%s\n  {\"pe\": \"%s\", \"vs_none\": %.4f, \"low\": %.4f, \"high\": %.4f}", e ? "," : "",
                fig->pe_name[e], fig->pe_vs[e][0], fig->pe_vs[e][1], fig->pe_vs[e][2]);
    fprintf(f, "]\n}\n");
    return fclose(f) == 0;
}

int main(int argc, char **argv) {
    startup_environment(argv);
    bench_opts o = {10, 2, 1, "rope", "results/bench.md", "results/bench.json", "auto"};
    const char *child = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--child") && i + 1 < argc) {
            child = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) o.steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) o.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pe") && i + 1 < argc) o.pe = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) o.out = argv[++i];
        else if (!strcmp(argv[i], "--figures") && i + 1 < argc) o.figures = argv[++i];
        else if (!strcmp(argv[i], "--gemm") && i + 1 < argc) o.gemm = argv[++i];
        else if (!strcmp(argv[i], "--no-encodings")) o.encodings = 0;
        else if (!strcmp(argv[i], "--encodings") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: bench [--steps N] [--threads N] [--pe NAME] [--out FILE] [--figures FILE] [--gemm E] "
                            "[--no-encodings | --encodings NAME,NAME...]\n");
            return 2;
        }
    }
    if (o.steps < 1 || o.threads < 1) {
        fprintf(stderr, "bench: --steps and --threads must be positive\n");
        return 2;
    }
    startup_threads(o.threads);
    char gerr[256];
    if (!gemm_use(o.gemm, gerr, sizeof gerr)) {
        fprintf(stderr, "bench: %s\n", gerr);
        return 2;
    }
    if (child) {  // one measurement in a fresh process: print the peak MiB
        if (!strcmp(child, "train")) train_a_step(o.pe, 0);
        else if (!strcmp(child, "train-fused")) train_a_step(o.pe, 1);
        else if (!strcmp(child, "eval16k-fused")) eval_16k(o.pe, 1);
        else eval_16k(o.pe, 0);
        printf("%.1f\n", own_peak_mib());
        return 0;
    }
    if (only) {  // the encodings table alone, for the named encodings, to stdout
        int items = 1, known = 0;
        for (const char *p = only; *p; p++) items += *p == ',';
        for (int e = 0; e < pe_registry_count; e++) known += name_in_list(pe_registry[e]->name, only);
        if (known != items) {
            fprintf(stderr, "bench: --encodings %s: not a list of encodings' names (./train --list-pe lists them)\n", only);
            return 2;
        }
        char *table = calloc(12288, 1);
        encodings_table(table, 12288, only, NULL);
        fputs(table, stdout);
        free(table);
        return 0;
    }
    char report[16384];
    int n = 0;
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    char host[256] = "?", cpu[256] = "?", kind[160] = "?";
    gethostname(host, sizeof host);
    startup_cpu_name(cpu, sizeof cpu);
    startup_cpu_kind(kind, sizeof kind);
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    n += snprintf(report + n, sizeof report - n,
                  "# Benchmark\n\n`./bench-pelab --steps %d` (what `make bench` runs; default 10 steps) on %s: %s (%s), %ld cores, %d threads; OpenBLAS %s, OPENBLAS_CORETYPE=%s; matrix engine %s (`--gemm %s`).\n"
                  "Reference configuration: d 256, 4 layers, 8 heads, ctx 256, batch 8, byte vocabulary, pe %s, causal; training speed is the fastest of 10 timed blocks of %d steps, 5 near the start of the run and 5 near the end; the sgemm rate the faster of two passes (the machine is shared and its speed drifts in spells).\n\n",
                  o.steps, date, cpu, kind, sysconf(_SC_NPROCESSORS_ONLN), o.threads, openblas_get_config(), coretype ? coretype : "(unset)", gemm_name(), o.gemm, o.pe, o.steps);

    // The machine is shared and its speed drifts in spells of tens of
    // seconds. So the sgemm rate and pelab's training speed are
    // each measured twice, once near the start of the run and once near the
    // end, and each keeps its faster figure.
    double rate_rows, rate_blas = sgemm_rate(o.threads, &rate_rows);

    model_t m, mf;
    make_model(&m, o.pe, 0);
    make_model(&mf, o.pe, 1);
    model_acts a, af;
    model_acts_alloc(&a, &m, B, T, 1);
    model_acts_alloc(&af, &mf, B, T, 1);
    int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T);
    random_batch(B * T, tok, tgt, 1);
    paired_share ps = {shape_bufs_alloc(), {0}, 0};
    double tps = train_tokens_per_s(&m, &a, 5, o.steps, tok, tgt, &ps);
    double tps_fused = train_tokens_per_s(&mf, &af, 5, o.steps, tok, tgt, NULL);
    // ALiBi, the peers' second encoding, timed as the reference model is, for their ALiBi rows
    model_t ma;
    make_model(&ma, "alibi", 0);
    model_acts aa;
    model_acts_alloc(&aa, &ma, B, T, 1);
    double tps_alibi = train_tokens_per_s(&ma, &aa, 5, o.steps, tok, tgt, NULL);
    memset(&m.prof, 0, sizeof m.prof);
    m.prof.enabled = 1;
    double psecs = time_train(&m, &a, o.steps < 10 ? o.steps : 10, tok, tgt);
    m.prof.enabled = 0;
    memset(&mf.prof, 0, sizeof mf.prof);
    mf.prof.enabled = 1;
    double psecs_fused = time_train(&mf, &af, o.steps < 10 ? o.steps : 10, tok, tgt);
    mf.prof.enabled = 0;
    // evaluation: 16 windows of 256 per forward, as eval does
    int *etok = malloc(sizeof(int) * 16 * T), *etgt = malloc(sizeof(int) * 16 * T);
    random_batch(16 * T, etok, etgt, 3);
    double eval_tps = eval_tokens_per_s(&m, etok, etgt), eval_tps_fused = eval_tokens_per_s(&mf, etok, etgt);
    double flops = flops_per_token();
    double mem_train = child_peak_mib("train", o.pe), mem_eval = child_peak_mib("eval16k", o.pe);
    double mem_train_fused = child_peak_mib("train-fused", o.pe), mem_eval_fused = child_peak_mib("eval16k-fused", o.pe);
    bench_figures fig = {0};
    fig.fma_peak = fma_peak(o.threads);
    fig.bf16_peak = bf16_peak(o.threads);
    char engines[6144];
    int used_e = engines_table(engines, sizeof engines, o.steps, o.threads, &fig);
    large_table(engines + used_e, sizeof engines - (size_t)used_e, tps, &fig);
    char *enc = calloc(12288, 1);
    if (o.encodings) {
        int used = encodings_table(enc, 12288, NULL, &fig);
        clip_table(enc + used, 12288 - (size_t)used, o.steps);
    }
    // the second measurements
    double again = train_tokens_per_s(&m, &a, 5, o.steps, tok, tgt, &ps);
    if (again > tps) tps = again;
    shape_bufs_free(&ps.bufs);
    again = train_tokens_per_s(&mf, &af, 5, o.steps, tok, tgt, NULL);
    if (again > tps_fused) tps_fused = again;
    again = train_tokens_per_s(&ma, &aa, 5, o.steps, tok, tgt, NULL);
    if (again > tps_alibi) tps_alibi = again;
    model_acts_free(&aa);
    model_free(&ma);
    model_acts_free(&a);
    model_acts_free(&af);
    double prof_fused[PROF_N];
    memcpy(prof_fused, mf.prof.seconds, sizeof prof_fused);
    model_free(&mf);
    double rows2, blas2 = sgemm_rate(o.threads, &rows2);
    if (blas2 > rate_blas) rate_blas = blas2;
    if (rows2 > rate_rows) rate_rows = rows2;
    double rate = rate_blas > rate_rows ? rate_blas : rate_rows;

    n += snprintf(report + n, sizeof report - n, "| measure | value |\n|---|---|\n");
    n += snprintf(report + n, sizeof report - n, "| training tokens/s (forward + backward + AdamW) | %.0f |\n", tps);
    n += snprintf(report + n, sizeof report - n, "| training tokens/s, fused attention kernel (`--attn-kernel fused`) | %.0f (%+.1f%%) |\n",
                  tps_fused, 100.0 * (tps_fused / tps - 1.0));
    n += snprintf(report + n, sizeof report - n, "| training tokens/s, ALiBi (`--pe alibi`, blocks kernel; the peers' second encoding) | %.0f |\n",
                  tps_alibi);
    n += snprintf(report + n, sizeof report - n, "| evaluation tokens/s (ctx 256) | %.0f (fused: %.0f) |\n", eval_tps, eval_tps_fused);
    n += snprintf(report + n, sizeof report - n, "| sgemm GFLOP/s at the model's shapes, OpenBLAS threading one call | %.1f |\n", rate_blas / 1e9);
    n += snprintf(report + n, sizeof report - n, "| sgemm GFLOP/s at the model's shapes, pelab's row blocks | %.1f |\n", rate_rows / 1e9);
    n += snprintf(report + n, sizeof report - n, "| model FLOPs per trained token | %.2f M |\n", flops / 1e6);
    n += snprintf(report + n, sizeof report - n, "| share of the sgemm rate the training step reaches | %.1f%% (fused: %.1f%%) |\n",
                  100.0 * flops * tps / rate, 100.0 * flops * tps_fused / rate);
    {
        int lo, hi;
        double cover = median_interval(ps.n, &lo, &hi), med = median(ps.share, ps.n);
        n += snprintf(report + n, sizeof report - n,
                      "| share of the row-block products' rate, paired (each of the %d timed blocks against a pass of "
                      "the products right after it: the median and its %.1f%% interval) | %.1f%% [%.1f, %.1f] |\n",
                      ps.n, 100.0 * cover, 100.0 * med, 100.0 * ps.share[lo], 100.0 * ps.share[hi]);
    }
    n += snprintf(report + n, sizeof report - n, "| tokens/s bound at the sgemm rate | %.0f |\n", rate / flops);
    n += snprintf(report + n, sizeof report - n, "| peak resident memory, training | %.0f MiB (fused: %.0f MiB) |\n", mem_train, mem_train_fused);
    n += snprintf(report + n, sizeof report - n, "| peak resident memory, evaluation at 16384 tokens | %.0f MiB (fused: %.0f MiB) |\n", mem_eval, mem_eval_fused);
    n += snprintf(report + n, sizeof report - n, "| share of the FMA peak the training step reaches | %.1f%% (fused: %.1f%%) |\n",
                  100.0 * flops * tps / fig.fma_peak, 100.0 * flops * tps_fused / fig.fma_peak);
    double tot = 0, tot_fused = 0;
    int psteps = o.steps < 10 ? o.steps : 10;
    for (int k = 0; k < PROF_N; k++) tot += m.prof.seconds[k], tot_fused += prof_fused[k];
    n += snprintf(report + n, sizeof report - n,
                  "\nShare of one training step (blocks kernel %.1f ms, fused %.1f ms; timed per op):\n\n"
                  "| op | blocks | fused |\n|---|---|---|\n", 1e3 * psecs / psteps, 1e3 * psecs_fused / psteps);
    for (int k = 0; k < PROF_N; k++)
        n += snprintf(report + n, sizeof report - n, "| %s | %.1f%% | %.1f%% |\n", prof_names[k], 100.0 * m.prof.seconds[k] / psecs,
                      100.0 * prof_fused[k] / psecs_fused);
    n += snprintf(report + n, sizeof report - n, "| other (embedding, zeroing, bookkeeping) | %.1f%% | %.1f%% |\n",
                  100.0 * (psecs - tot) / psecs, 100.0 * (psecs_fused - tot_fused) / psecs_fused);
    n += snprintf(report + n, sizeof report - n, "%s%s", engines, enc);
    free(enc);
    fputs(report, stdout);
    FILE *f = fopen(o.out, "w");
    if (!f || fputs(report, f) < 0) {
        fprintf(stderr, "bench: cannot write %s\n", o.out);
        return 1;
    }
    fclose(f);
    printf("\nwritten to %s\n", o.out);
    fig.tps = tps, fig.tps_fused = tps_fused, fig.tps_alibi = tps_alibi;
    if (!write_figures(o.figures, &fig, &o, date, cpu, m.prof.seconds, psecs)) {
        fprintf(stderr, "bench: cannot write %s\n", o.figures);
        return 1;
    }
    printf("figures written to %s\n", o.figures);
    model_free(&m);
    return 0;
}
