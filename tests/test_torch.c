// test_torch.c — whole-model loss and gradients against the independent
// PyTorch reference in tests/torch_ref.py, for every encoding, causal and
// bidirectional, each with both attention kernels (blocks and fused). Skipped,
// with a message, when no python3 has torch.
//
// Tolerances (both sides float32): loss within 1e-5 relative; each tensor's
// gradient within 1e-4 of that tensor's largest gradient, plus 1e-7.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../model/attn.h"
#include "../model/gemm.h"
#include "../run/ckpt.h"
#include "test.h"

static const char *find_python(void) {
    static const char *cands[] = {"python3", "/usr/bin/python3"};
    const char *env = getenv("PELAB_PYTHON");
    if (env && *env) return env;
    for (int i = 0; i < 2; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", cands[i]);
        if (system(cmd) == 0) return cands[i];
    }
    return NULL;
}

#define MAX_CASES 96
#define BF16_LOSS_TOL 5e-3  // see test_torch_reference
#define BF16_GRAD_TOL 0.15

static int test_torch_reference(void) {
    int fails = 0;
    const char *py = find_python();
    if (!py) {
        printf("    no python3 with torch (apt-get install python3-torch); the PyTorch comparison did not run\n");
        return TEST_SKIPPED;
    }
    char dir[] = "/tmp/pelab-torch-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    int B = 2, T = ATTN_CHUNK + 6, ncase = 0;
    model_t models[MAX_CASES];
    double c_loss[MAX_CASES][2];  // [case][fused]
    float *fused_grads[MAX_CASES];
    char cmd[1 << 15];
    snprintf(cmd, sizeof cmd, "%s tests/torch_ref.py", py);
    for (int e = 0; e < n_test_encodings; e++)
        for (int causal = 0; causal < 2; causal++) {
            if (!test_mode_allowed(test_encodings[e], causal)) continue;
            model_config cfg;
            test_tiny_config(&cfg, test_encodings[e], causal);
            model_t *m = &models[ncase];
            model_create(m, &cfg);
            test_randomise_weights(m, 40 + ncase);
            int tok[B * T], tgt[B * T], seg[B * T];
            test_random_batch(B, T, cfg.vocab, causal, 50 + ncase, tok, tgt, seg);
            // the fused attention kernel first, kept aside; then the blocks one in m->grads
            for (int fused = 1; fused >= 0; fused--) {
                model_acts a;
                m->attn_fused = fused;
                model_acts_alloc(&a, m, B, T, 1);
                c_loss[ncase][fused] = model_forward(m, &a, tok, tgt, seg);
                model_zero_grad(m);
                model_backward(m, &a, tok, tgt, seg);
                model_acts_free(&a);
                if (fused) fused_grads[ncase] = memcpy(malloc(sizeof(float) * m->tab.total), m->grads, sizeof(float) * m->tab.total);
            }
            char ck[128], bt[128], out[128], err[256];
            snprintf(ck, sizeof ck, "%s/m%d.ck", dir, ncase);
            snprintf(bt, sizeof bt, "%s/b%d.bin", dir, ncase);
            snprintf(out, sizeof out, "%s/g%d.bin", dir, ncase);
            static options o;  // the settings of the model under test (the reference reads its shape)
            options_defaults(&o);
            o.pe = m->cfg.pe, o.attn = m->cfg.causal ? 0 : 1, o.ctx = m->cfg.ctx, o.d_model = m->cfg.d_model;
            o.layers = m->cfg.layers, o.heads = m->cfg.heads, o.rand_pos = m->cfg.rand_pos, o.batch = 1, o.steps = 0;
            run_state st = {.vocab = m->cfg.vocab, .base_ctx = m->cfg.base_ctx};
            if (ckpt_save(ck, m, &o, &st, 0, err, sizeof err) != 0) {
                printf("    %s\n", err);
                return 1;
            }
            FILE *f = fopen(bt, "wb");
            int dims[2] = {B, T};
            fwrite(dims, 4, 2, f), fwrite(tok, 4, B * T, f), fwrite(tgt, 4, B * T, f), fwrite(seg, 4, B * T, f);
            fclose(f);
            size_t len = strlen(cmd);
            snprintf(cmd + len, sizeof cmd - len, " %s %s %s", ck, bt, out);
            ncase++;
        }
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    // fp32: the reference computes the same sums in another order (loss 1e-5
    // relative; each tensor's gradient within 1e-4 of its largest element).
    // bf16 (--precision bf16; the reference stays fp32): every product's
    // inputs carry a rounding error of up to 2^-9 of themselves, so a sum of
    // K products of random sign is off by some 2^-9 of its own size, and the
    // two passes chain a dozen products through two layers. Measured over
    // every encoding here: the loss within 7e-4 of itself, gradients within
    // 3% of their tensor's largest element but for CoPE's, 6.5% (its
    // positions are sums of sigmoid gates over q·k: an error in every logit
    // moves every count). The tolerances leave room above that (loss 5e-3,
    // gradients 0.15) and still catch a wrong product, which is off by the
    // size of the gradient itself.
    int bf16 = !strcmp(gemm_precision(), "bf16");
    double loss_tol = bf16 ? BF16_LOSS_TOL : 1e-5, grad_tol = bf16 ? BF16_GRAD_TOL : 1e-4, worst_loss = 0, worst_grad = 0;
    int rc = system(cmd);
    EXPECT(rc == 0, "the PyTorch reference failed (exit %d)", rc);
    for (int c = 0; c < ncase && rc == 0; c++) {
        model_t *m = &models[c];
        char out[128];
        snprintf(out, sizeof out, "%s/g%d.bin", dir, c);
        FILE *f = fopen(out, "rb");
        double t_loss = 0;
        size_t n = m->tab.total;
        float *g = malloc(sizeof(float) * n);
        int ok = f && fread(&t_loss, 8, 1, f) == 1 && fread(g, 4, n, f) == n;
        if (f) fclose(f);
        EXPECT(ok, "case %d: could not read the reference's output", c);
        const char *label = m->cfg.pe;
        const char *mode = m->cfg.causal ? "causal" : "bidir";
        for (int fused = 0; fused < 2; fused++) {
            const char *kernel = fused ? "fused" : "blocks";
            const float *cgrads = fused ? fused_grads[c] : m->grads;
            worst_loss = fmax(worst_loss, fabs(t_loss - c_loss[c][fused]) / fabs(t_loss));
            EXPECT(fabs(t_loss - c_loss[c][fused]) <= loss_tol * fabs(t_loss), "pe=%s %s, %s kernel: loss C %.8f torch %.8f",
                   label, mode, kernel, c_loss[c][fused], t_loss);
            for (int k = 0; ok && k < m->tab.n; k++) {
                const tensor_info *ti = &m->tab.t[k];
                double gmax = 0, dmax = 0;
                for (size_t i = 0; i < ti->size; i++) {
                    double tg = g[ti->offset + i], cg = cgrads[ti->offset + i];
                    gmax = fabs(tg) > gmax ? fabs(tg) : gmax;
                    dmax = fabs(tg - cg) > dmax ? fabs(tg - cg) : dmax;
                }
                if (gmax > 0) worst_grad = fmax(worst_grad, fmax(0, dmax - 1e-7) / gmax);  // as the check reads it
                EXPECT(dmax <= grad_tol * gmax + 1e-7, "pe=%s %s, %s kernel: %s differs by %.3g (largest gradient %.3g)",
                       label, mode, kernel, ti->name, dmax, gmax);
            }
        }
        free(g);
    }
    for (int c = 0; c < ncase; c++) model_free(&models[c]), free(fused_grads[c]);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("    could not remove %s\n", dir);
    printf("    %d models compared with PyTorch (%s), each with both attention kernels, %s products: loss off by at most "
           "%.2g of itself (tolerance %.0e), a gradient by %.2g of its tensor's largest (tolerance %.0e)\n", ncase, py,
           gemm_precision(), worst_loss, loss_tol, worst_grad, grad_tol);
    return fails;
}

// make bench times the reference's training step: its --bench mode must run
// (a tiny model, one step per block) and print its figure.
static int test_torch_bench_mode(void) {
    int fails = 0;
    const char *py = find_python();
    if (!py) {
        printf("    no python3 with torch\n");
        return TEST_SKIPPED;
    }
    char cmd[256], line[256];
    snprintf(cmd, sizeof cmd, "%s tests/torch_ref.py --bench 16 16 1 2 8 2 1 1 2>&1", py);
    FILE *f = popen(cmd, "r");
    double r = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "tokens_per_s %lf", &r) != 1) printf("    %s", line);
    int rc = f ? pclose(f) : -1;
    EXPECT(rc == 0 && r > 0, "torch_ref.py --bench: exit %d, tokens_per_s %g", rc, r);
    return fails;
}

const test_case torch_tests[] = {
    {"torch/loss_and_gradients_every_encoding", test_torch_reference},
    {"torch/bench_mode_runs", test_torch_bench_mode},
};
const int n_torch_tests = sizeof torch_tests / sizeof torch_tests[0];
