// test_torch.c — whole-model loss and gradients against the independent
// PyTorch reference in tests/torch_ref.py, for every encoding, causal and
// bidirectional, each with both attention kernels (blocks and fused). Skipped,
// with a message, when no python3 has torch.
//
// Tolerances (both sides float32): loss within 1e-5 relative; each tensor's
// gradient within 1e-4 of that tensor's largest gradient, plus 1e-7.
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

// ---- the module as a user meets it: lab/pelab_lab/torch.py on checkpoints ./train trained

#define MODULE "PYTHONPATH=lab %s -m pelab_lab.torch"

// Runs cmd through sh with its output (stdout and stderr) in out; the exit status, or -1.
static int run_capture(const char *cmd, char *out, size_t cap) {
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *f = popen(full, "r");
    size_t n = 0;
    out[0] = 0;
    if (!f) return -1;
    for (size_t got; n + 1 < cap && (got = fread(out + n, 1, cap - 1 - n, f)) > 0;) n += got;
    out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// The losses of ./train --json's "eval" list, in order; how many.
static int train_json_losses(const char *path, double *loss, int cap) {
    static char buf[1 << 16];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    char *p = strstr(buf, "\"eval\": [");
    int k = 0;
    for (char *q = p; q && k < cap && (q = strstr(q, "\"loss\": ")); q += 8) loss[k++] = atof(q + 8);
    return p ? k : 0;
}

// The losses the module printed ("PATH: eval ctx=L loss=X ..."), in order; how many.
static int module_losses(const char *out, double *loss, int cap) {
    int k = 0;
    for (const char *q = out; k < cap && (q = strstr(q, " loss=")); q += 6) loss[k++] = atof(q + 6);
    return k;
}

static int write_corpus(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    for (int i = 0; i < 300; i++) fprintf(f, "the %d cats chase %d dogs; the dogs run from the cats.\n", i, (i * 7) % 13);
    return fclose(f) == 0;
}

// Checkpoints ./train trained and evaluated, compared with the module a
// group at a time (one Python start for the group: its import of torch is
// the slow part).
#define GROUP_MAX 32
typedef struct {
    char ck[GROUP_MAX][256], label[GROUP_MAX][96];
    double loss[GROUP_MAX][4];
    int nloss[GROUP_MAX], n;
} group;

// Trains a tiny model (extra: more options) and evaluates it with ./train
// --load (eval_opts) into the group.
static int train_on(group *g, const char *dir, const char *data, const char *pe, const char *attn, const char *extra,
                    const char *eval_opts);
static int train_into(group *g, const char *dir, const char *pe, const char *attn, const char *extra,
                      const char *eval_opts) {
    char data[300];
    snprintf(data, sizeof data, "%s/corpus.txt --ctx 16", dir);
    return train_on(g, dir, data, pe, attn, extra, eval_opts);
}

// The same on data (a file, cats or task:NAME, with its --ctx if any).
static int train_on(group *g, const char *dir, const char *data, const char *pe, const char *attn, const char *extra,
                    const char *eval_opts) {
    int fails = 0;
    char cmd[2048], out[8192], js[256];
    int k = g->n;
    snprintf(g->ck[k], sizeof g->ck[k], "%s/m%d.ck", dir, k);
    snprintf(g->label[k], sizeof g->label[k], "pe=%s %s%s%s on %s", pe, attn, *extra ? " " : "", extra, data);
    snprintf(js, sizeof js, "%s/m%d.json", dir, k);
    snprintf(cmd, sizeof cmd, "./train --data %s --pe %s --attn %s --d-model 16 --layers 2 --heads 2 "
             "--batch 8 --steps 12 --lr 0.01 --until-solved 0 --threads 1 --quiet --overwrite --save %s %s && ./train --load %s %s "
             "--threads 1 --quiet --json %s", data, pe, attn, g->ck[k], extra, g->ck[k], eval_opts, js);
    int rc = run_capture(cmd, out, sizeof out);
    EXPECT(rc == 0, "%s: exit %d: %.300s", cmd, rc, out);
    if (rc) return fails;
    g->nloss[k] = train_json_losses(js, g->loss[k], 4);
    EXPECT(g->nloss[k] > 0, "%s: no losses in %s", g->label[k], js);
    g->n++;
    return fails;
}

// The module on the group's checkpoints at eval_opts: each loss within 1e-5
// of ./train's (plus 5e-7: ./train's JSON keeps six decimals).
static int compare_group(group *g, const char *py, const char *eval_opts, int *compared, double *worst) {
    int fails = 0;
    static char cmd[GROUP_MAX * 300 + 512], out[1 << 16];
    int n = snprintf(cmd, sizeof cmd, MODULE " --eval %s", py, eval_opts);
    for (int k = 0; k < g->n; k++) n += snprintf(cmd + n, sizeof cmd - n, " %s", g->ck[k]);
    int rc = run_capture(cmd, out, sizeof out);
    EXPECT(rc == 0, "%s: exit %d: %.600s", cmd, rc, out);
    double t[GROUP_MAX * 4];
    int want = 0, got = module_losses(out, t, GROUP_MAX * 4);
    for (int k = 0; k < g->n; k++) want += g->nloss[k];
    EXPECT(rc == 0 && got == want, "[%s]: ./train gave %d losses, the module %d: %.300s", eval_opts, want, got, out);
    for (int k = 0, i = 0; k < g->n && got == want; k++)
        for (int j = 0; j < g->nloss[k]; j++, i++) {
            double c = g->loss[k][j], d = fabs(c - t[i]);
            *worst = fmax(*worst, d / fabs(c));
            EXPECT(d <= 1e-5 * fabs(c) + 5e-7, "%s, length %d of [%s]: ./train %.6f, the module %.8f", g->label[k], j + 1,
                   eval_opts, c, t[i]);
            (*compared)++;
        }
    g->n = 0;
    return fails;
}

static int test_module_matches_train(void) {
    int fails = 0;
    const char *py = find_python();
    if (!py) {
        printf("    no python3 with torch\n");
        return TEST_SKIPPED;
    }
    char dir[] = "/tmp/pelab-module-XXXXXX", path[256];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/corpus.txt", dir);
    EXPECT(write_corpus(path), "cannot write %s", path);
    int compared = 0, models = 0;
    double worst = 0;
    static group g;
    // every encoding and mode: past the training length too where the encoding has positions there
    for (int learned = 0; learned < 2; learned++) {
        const char *eval = learned ? "--eval-ctx 8,16" : "--eval-ctx 16,48";
        for (int e = 0; e < n_test_encodings; e++)
            for (int causal = 1; causal >= 0; causal--) {
                const char *pe = test_encodings[e];
                if (!test_mode_allowed(pe, causal) || learned != !strncmp(pe, "learned", 7)) continue;
                if (g.n == GROUP_MAX) fails += compare_group(&g, py, eval, &compared, &worst);
                fails += train_into(&g, dir, pe, causal ? "causal" : "bidir", "", eval), models++;
            }
        fails += compare_group(&g, py, eval, &compared, &worst);
    }
    // RoPE's context extensions at evaluation, and p-RoPE
    static const char *const scales[] = {"--rope-scale pi", "--rope-scale ntk", "--rope-scale yarn --rope-factor 2",
                                         "--rope-scale llama3",
                                         "--rope-scale llama3 --rope-low-freq-factor 0.5 --rope-high-freq-factor 2",
                                         "--rope-scale longrope --rope-factors 1,1.5,3,6"};
    // on one model trained 300 steps: at 12 its loss moves with the frequencies by about the tolerance (the
    // module with llama3's β = 32 or LongRoPE's factors reversed passed), at 300 by 6e-4
    char scaled[256], cmd[1024], out[4096];
    snprintf(scaled, sizeof scaled, "%s/scaled.ck", dir);
    snprintf(cmd, sizeof cmd, "./train --data %s --ctx 16 --pe rope --d-model 16 --layers 2 --heads 2 --batch 8 --steps 300 "
             "--lr 0.01 --until-solved 0 --threads 1 --quiet --overwrite --save %s", path, scaled);
    int trained = run_capture(cmd, out, sizeof out);
    EXPECT(trained == 0, "%s: exit %d: %.300s", cmd, trained, out);
    for (size_t k = 0; k < sizeof scales / sizeof scales[0] && trained == 0; k++) {
        char ev[160];
        snprintf(ev, sizeof ev, "--eval-ctx 16,64 %s", scales[k]);
        snprintf(cmd, sizeof cmd, "./train --load %s %s --threads 1 --quiet --json %s/scaled%zu.json", scaled, ev, dir, k);
        int rc = run_capture(cmd, out, sizeof out);
        EXPECT(rc == 0, "%s: exit %d: %.300s", cmd, rc, out);
        if (rc) continue;
        snprintf(g.ck[g.n], sizeof g.ck[g.n], "%s", scaled);
        snprintf(g.label[g.n], sizeof g.label[g.n], "rope (300 steps) %s", scales[k]);
        snprintf(cmd, sizeof cmd, "%s/scaled%zu.json", dir, k);
        g.nloss[g.n] = train_json_losses(cmd, g.loss[g.n], 4), g.n++, models++;
        fails += compare_group(&g, py, ev, &compared, &worst);
    }
    fails += train_into(&g, dir, "rope", "causal", "--rope-fraction 0.5", "--eval-ctx 16,32"), models++;
    // models fine-tuned longer with YaRN and LongRoPE (--init): each keeps its extension
    char base_ck[256];
    snprintf(base_ck, sizeof base_ck, "%s", g.ck[0]);
    static const char *const tunes[] = {"yarn", "longrope --rope-factors 1,2,2.5,4"};
    for (int t = 0; t < 2; t++) {
        snprintf(cmd, sizeof cmd, "./train --init %s --rope-scale %s --data %s --ctx 32 --steps 5 --threads 1 --quiet "
                 "--overwrite --save %s/ft%d.ck && ./train --load %s/ft%d.ck --eval-ctx 16,32 --threads 1 --quiet --json %s/ft%d.json",
                 base_ck, tunes[t], path, dir, t, dir, t, dir, t);
        int rc = run_capture(cmd, out, sizeof out);
        EXPECT(rc == 0, "%s: exit %d: %.300s", cmd, rc, out);
        if (rc) continue;
        int k = g.n++;
        snprintf(g.ck[k], sizeof g.ck[k], "%s/ft%d.ck", dir, t);
        snprintf(g.label[k], sizeof g.label[k], "rope fine-tuned at 32 with --rope-scale %s", tunes[t]);
        snprintf(cmd, sizeof cmd, "%s/ft%d.json", dir, t);
        g.nloss[k] = train_json_losses(cmd, g.loss[k], 4), models++;
    }
    fails += compare_group(&g, py, "--eval-ctx 16,32", &compared, &worst);
    // the built-in corpora (cats, a task): the module scores the windows
    // ./train --eval-rows writes, which it asks ./train for itself
    fails += train_on(&g, dir, "cats --ctx 16", "rope", "causal", "", "--eval-ctx 16,32"), models++;
    fails += train_on(&g, dir, "cats --ctx 16", "alibi", "bidir", "", "--eval-ctx 16,32"), models++;
    fails += compare_group(&g, py, "--eval-ctx 16,32", &compared, &worst);
    fails += train_on(&g, dir, "task:copy", "sinusoidal+xl", "causal", "", "--eval-ctx 34,68"), models++;
    fails += compare_group(&g, py, "--eval-ctx 34,68", &compared, &worst);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("    could not remove %s\n", dir);
    printf("    %d trained models, %d losses: the module's within %.2g of ./train's (tolerance 1e-5, and ./train's six "
           "decimals)\n", models, compared, worst);
    return fails;
}

// The safetensors export: read back by the module with the same loss, its
// header plain JSON with GPT-2's names and shapes, a damaged file refused.
static int test_safetensors(void) {
    int fails = 0;
    const char *py = find_python();
    if (!py) {
        printf("    no python3 with torch\n");
        return TEST_SKIPPED;
    }
    char dir[] = "/tmp/pelab-st-XXXXXX", path[256], cmd[8192], out[8192];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/corpus.txt", dir);
    EXPECT(write_corpus(path), "cannot write %s", path);
    // tensors of every kind: GPT-2's, wpe, per-layer and shared encoding tensors
    static const char *const pes[] = {"learned+rope", "sinusoidal+xl", "learned+t5", "fire", "sinusoidal+dpb", "cope"};
    int n = 0;
    static char files[4096];
    for (int k = 0; k < 6; k++) {
        snprintf(cmd, sizeof cmd, "./train --data %s --pe %s --d-model 16 --layers 2 --heads 2 --ctx 16 --batch 8 "
                 "--steps 8 --threads 1 --quiet --overwrite --save %s/m%d.ck", path, pes[k], dir, k);
        int rc = run_capture(cmd, out, sizeof out);
        EXPECT(rc == 0, "%s: exit %d: %.300s", cmd, rc, out);
        n += snprintf(files + n, sizeof files - n, " %s/m%d.ck %s/m%d.safetensors", dir, k, dir, k);
    }
    // the command line's --export for the last, the function for the others (one Python start)
    snprintf(cmd, sizeof cmd, "PYTHONPATH=lab %s -c 'import sys; from pelab_lab import torch as pt\n"
             "for k in range(5): pt.write_safetensors(f\"{sys.argv[1]}/m{k}.safetensors\", *pt.read_any(f\"{sys.argv[1]}/m{k}.ck\"))"
             "' %s && " MODULE " %s/m5.ck --export %s/m5.safetensors", py, dir, py, dir, dir);
    int rc = run_capture(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "wrote"), "export: exit %d: %.500s", rc, out);
    snprintf(cmd, sizeof cmd, MODULE " --eval --data %s %s", py, path, files);
    rc = run_capture(cmd, out, sizeof out);
    double l[12];
    n = module_losses(out, l, 12);
    EXPECT(rc == 0 && n == 12, "the checkpoints and their export: exit %d, %d losses: %.500s", rc, n, out);
    for (int k = 0; k < 6 && n == 12; k++)
        EXPECT(l[2 * k] == l[2 * k + 1], "pe=%s: the checkpoint's loss %.8f, the safetensors file's %.8f", pes[k],
               l[2 * k], l[2 * k + 1]);
    // the header, by Python's own JSON parser: GPT-2's names, (in, out) weights, offsets that tile the data
    snprintf(cmd, sizeof cmd, "%s -c '"
             "import json, struct, sys\n"
             "raw = open(sys.argv[1], \"rb\").read(); n = struct.unpack(\"<Q\", raw[:8])[0]\n"
             "h = json.loads(raw[8:8 + n]); meta = h.pop(\"__metadata__\"); c = json.loads(meta[\"pelab_config\"])\n"
             "assert c == json.load(open(sys.argv[2])), \"config.json differs from the header\"\n"
             "assert h[\"h.0.attn.c_attn.weight\"][\"shape\"] == [16, 48], h[\"h.0.attn.c_attn.weight\"]\n"
             "assert h[\"h.1.mlp.c_proj.weight\"][\"shape\"] == [64, 16]\n"
             "assert h[\"wte.weight\"][\"shape\"] == [256, 16] and \"ln_f.bias\" in h and \"h.1.attn.pos.cope_e\" in h\n"
             "spans = sorted(v[\"data_offsets\"] for v in h.values())\n"
             "assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))\n"
             "assert spans[-1][1] == len(raw) - 8 - n and (8 + n) %% 8 == 0\n"
             "' %s/m5.safetensors %s/config.json", py, dir, dir);
    rc = run_capture(cmd, out, sizeof out);
    EXPECT(rc == 0, "the safetensors header read by json: %.600s", out);
    // damaged files: truncated, a header length past the end, a header that is not JSON, a tensor cut short,
    // an empty file, a checkpoint with a changed byte; read in one Python start, then one by the command line
    static const struct { const char *how, *expect; } bad[] = {
        {"head -c 3000 m5.safetensors > bad0", "truncated"},
        {"printf '\\377\\377\\377\\377\\0\\0\\0\\0' > bad1; tail -c +9 m5.safetensors >> bad1", "header length"},
        {"cp m5.safetensors bad2; printf 'XXXX' | dd of=bad2 bs=1 seek=9 conv=notrunc 2>/dev/null", "not valid JSON"},
        {"head -c $(($(stat -c %s m5.safetensors) - 4)) m5.safetensors > bad3", "truncated"},
        {"printf '' > bad4", "is empty"},
        {"cp m5.ck bad5; printf 'Z' | dd of=bad5 bs=1 seek=200 conv=notrunc 2>/dev/null", "CRC-32"},
    };
    int nbad = (int)(sizeof bad / sizeof bad[0]);
    for (int k = 0; k < nbad; k++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s", dir, bad[k].how);
        EXPECT(system(cmd) == 0, "%s failed", cmd);
    }
    snprintf(cmd, sizeof cmd, "PYTHONPATH=lab %s -c 'import sys; from pelab_lab import torch as pt\n"
             "for k in range(%d):\n"
             "    try: pt.read_any(f\"{sys.argv[1]}/bad{k}\"); print(f\"bad{k}: read\")\n"
             "    except pt.PelabFileError as e: print(f\"bad{k}: {e}\")\n' %s", py, nbad, dir);
    rc = run_capture(cmd, out, sizeof out);
    EXPECT(rc == 0, "reading the damaged files: exit %d: %.500s", rc, out);
    for (int k = 0; k < nbad && rc == 0; k++) {
        char tag[24], line[512] = "";
        snprintf(tag, sizeof tag, "bad%d: ", k);
        const char *at = strstr(out, tag);
        if (at) snprintf(line, sizeof line, "%.*s", (int)strcspn(at, "\n"), at);
        EXPECT(strstr(line, bad[k].expect), "damaged file (%s): wanted a refusal with '%s', got '%s'", bad[k].how,
               bad[k].expect, line);
    }
    snprintf(cmd, sizeof cmd, MODULE " %s/bad3 --eval --data %s", py, dir, path);
    rc = run_capture(cmd, out, sizeof out);
    EXPECT(rc == 1 && strstr(out, "pelab_lab.torch: ") && strstr(out, "truncated") && !strstr(out, "Traceback"),
           "the command line on a damaged file: exit %d: %.400s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("    could not remove %s\n", dir);
    return fails;
}

// The fenced block of the given language in docs/pytorch.md (the first), or 0.
static int doc_block(const char *page, const char *lang, char *out, size_t cap) {
    char fence[32];
    snprintf(fence, sizeof fence, "```%s\n", lang);
    const char *a = strstr(page, fence), *b = a ? strstr(a + strlen(fence), "```") : NULL;
    if (!b) return 0;
    a += strlen(fence);
    snprintf(out, cap, "%.*s", (int)(b - a), a);
    return 1;
}

// docs/pytorch.md's example, its shell block then its Python block, as
// written, in a scratch directory holding ./train and lab/.
static int test_pytorch_example(void) {
    int fails = 0;
    const char *py = find_python();
    if (!py) {
        printf("    no python3 with torch\n");
        return TEST_SKIPPED;
    }
    static char page[1 << 16], sh[4096], pyb[4096], cmd[8192], out[1 << 14];
    FILE *f = fopen("docs/pytorch.md", "rb");
    size_t n = f ? fread(page, 1, sizeof page - 1, f) : 0;
    if (f) fclose(f);
    page[n] = 0;
    EXPECT(doc_block(page, "sh", sh, sizeof sh) && doc_block(page, "python", pyb, sizeof pyb),
           "docs/pytorch.md lacks its ```sh or ```python block");
    if (fails) return fails;
    char dir[] = "/tmp/pelab-doc-XXXXXX", cwd[1024];
    if (!mkdtemp(dir) || !getcwd(cwd, sizeof cwd)) return 1;
    snprintf(cmd, sizeof cmd, "%s/example.py", dir);
    f = fopen(cmd, "w");
    EXPECT(f && fputs(pyb, f) >= 0 && fclose(f) == 0, "cannot write %s", cmd);
    snprintf(cmd, sizeof cmd, "%s/example.sh", dir);
    f = fopen(cmd, "w");
    // python3 is the one with torch; a user's python3 on Debian is /usr/bin/python3
    EXPECT(f && fprintf(f, "set -e\npython3() { %s \"$@\"; }\n%s\npython3 example.py\n", py, sh) > 0 && fclose(f) == 0,
           "cannot write %s", cmd);
    snprintf(cmd, sizeof cmd, "cd %s && ln -s %s/train train && ln -s %s/lab lab && bash example.sh", dir, cwd, cwd);
    int rc = run_capture(cmd, out, sizeof out);
    double l[8];
    int nl = module_losses(out, l, 8);
    EXPECT(rc == 0 && strstr(out, "wrote gpl.safetensors") && strstr(out, "nats per byte") && strstr(out, "where head 0"),
           "the example: exit %d: %.1500s", rc, out);
    // the training's own evaluation, ./train --load's two lines (four decimals) and the module's two
    EXPECT(nl == 5 && fabs(l[1] - l[3]) < 6e-5 && fabs(l[2] - l[4]) < 6e-5, "the example's losses differ: %.800s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("    could not remove %s\n", dir);
    return fails;
}

const test_case torch_tests[] = {
    {"torch/loss_and_gradients_every_encoding", test_torch_reference},
    {"torch/module_loss_equals_train_on_trained_models", test_module_matches_train},
    {"torch/safetensors_export_and_damaged_files", test_safetensors},
    {"docs/pytorch_example_runs", test_pytorch_example},
};
const int n_torch_tests = sizeof torch_tests / sizeof torch_tests[0];
