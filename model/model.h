// model.h — the pre-LayerNorm GPT-style model (docs/model.md).
#ifndef PELAB_MODEL_H
#define PELAB_MODEL_H

#include <stddef.h>

#include "config.h"
#include "params.h"
#include "pe/pe.h"

// Checks a configuration (shape, encodings, their option values, and that
// every option set is one that the model's encodings take); on a problem
// writes a message to err and returns 0.
int model_config_check(const model_config *c, char *err, size_t errlen);

// Activations for one (B, T). Training sets keep every layer and the
// attention weights for backward; evaluation sets share one layer's buffers
// and keep no T×T matrix.
typedef struct {
    int B, T, training;
    int eval_len;                         // an evaluation at this length applies its context extension (RoPE's
                                          // --rope-scale) in the forward passes made with these; 0: none
    int chunk;                            // attention's rows per block (the model's attn_chunk at allocation)
    int fused;                            // the fused attention kernel (the model's attn_fused at allocation)
    size_t n_targets;                     // targets in the last forward (the loss's denominator)
    float *encoded;                       // (B, T, C)
    float *ln1, *ln1_mean, *ln1_rstd;     // (L, B, T, C), (L, B, T)
    float *qkv;                           // (L, B, T, 3C)
    float *att;                           // (L, B, NH, T, T), training only; fused: (L, B, NH, T, 2) row statistics
    float *atty;                          // (L, B, T, C)
    float *res2;                          // (L, B, T, C)
    float *ln2, *ln2_mean, *ln2_rstd;     // (L, B, T, C), (L, B, T)
    float *fch, *fch_gelu;                // (L, B, T, 4C)
    float *res3;                          // (L, B, T, C)
    float *lnf, *lnf_mean, *lnf_rstd;     // (B, T, C), (B, T)
    float *logits, *probs;                // (B, T, V)
    float *scratch;                       // per-thread attention scratch
    int *pos;                             // (B, T) the positions the encodings see (--rand-pos), or NULL: 0..T-1
    int pos_row0;                         // the global index of row 0 (its process's share of an MPI batch)
    double *attn_stats;                   // (layers, heads, ATTN_NSTAT) summed by each forward (--attn-stats), or NULL
    float *hidden;                        // (layers+1, B, T, C) the caller's: the input and each block's output
                                          // copied here by each forward, or NULL (the position probe)
    // gradients, training only
    float *dres, *dln, *datty, *dfch, *dfch_gelu, *dqkv, *dlogits;
} model_acts;

// Per-op timing for `make bench`: off unless enabled is set.
typedef enum {
    PROF_MATMUL, PROF_ATTENTION, PROF_LAYERNORM, PROF_GELU, PROF_CROSSENTROPY, PROF_OPTIMISER,
    PROF_ENCODING, PROF_OTHER, PROF_N
} prof_op;
typedef struct {
    int enabled;
    double seconds[PROF_N];
} model_profile;

// The model's two encoding slots: an absolute one (added to the input) and a
// relative one (in attention); a composite fills both.
enum { PE_ABS, PE_REL, PE_SLOTS };

typedef struct {
    model_config cfg;
    param_table tab;
    // indices of the core tensors in tab
    int wte, ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb, lnfw, lnfb;
    pe_t pe[PE_SLOTS];     // [PE_ABS] and [PE_REL]; ops == NULL when absent
    float *params, *grads, *m, *v;  // each tab.total floats
    // Rows of the score matrix attention computes at a time (ATTN_CHUNK). The
    // tests set it to T to get the plain full-matrix computation and
    // compare; change it only before allocating activations.
    int attn_chunk;
    // 1: attention runs the fused kernel (attn_fused_forward/backward), which
    // keeps no (T, T) weights; --attn-kernel. Set before allocating activations.
    int attn_fused;
    model_profile prof;
} model_t;

// Builds the parameter table and allocates the four buffers (uninitialised
// parameters). cfg must have passed model_config_check.
void model_create(model_t *m, const model_config *cfg);
void model_free(model_t *m);
// The number of parameters cfg implies, without allocating them.
size_t model_param_count(const model_config *cfg);
// Draws the initial weights from seed (docs/model.md: initialisation).
void model_init_weights(model_t *m, unsigned long long seed);
size_t model_num_params(const model_t *m);
// The longest context the model can be evaluated at (a learned table ends at
// the training ctx); INT_MAX when unbounded.
int model_max_eval_ctx(const model_t *m);

void model_acts_alloc(model_acts *a, const model_t *m, int B, int T, int training);
// 1 when a run at (B, T) fits in the memory available now (or that is
// unknown); else 0, with a message for the user in err. Linux overcommits,
// so without this an impossible size is not refused by malloc but killed
// later by the OOM killer.
int model_fits_in_memory(const model_t *m, int B, int T, int training, char *err, size_t cap);
// The same for a run not yet begun, from the configuration alone, so that it
// is known before anything large is allocated or read: training at (B, T)
// (weights, gradients, both AdamW moments, activations, the encodings'
// tables) or, when !training, the weights and one sequence at T; plus
// other_bytes (the corpus, a model being copied), named by other_what.
int model_plan_fits(const model_config *cfg, int attn_fused, int B, int T, int training, double other_bytes,
                    const char *other_what, char *err, size_t cap);
void model_acts_free(model_acts *a);
// --rand-pos (Ruoss et al. 2023): gives each of the B sequences of a its own
// sorted random subset of [0, cfg.rand_pos) as positions, drawn from a
// stream keyed by (seed, key) so that a run, its resumption and its
// evaluation draw the same ones; nothing when the model has no --rand-pos.
void model_draw_positions(const model_t *m, model_acts *a, unsigned long long seed, unsigned long long key);

// tokens (B, T) in [0, V); targets (B, T) in [-1, V), -1 = no loss; seg
// (B, T) or NULL. Returns the mean loss over targets (0 when targets NULL).
double model_forward(model_t *m, model_acts *a, const int *tokens, const int *targets,
                     const int *seg);
// Adds the gradient of the last forward's mean loss into m->grads.
void model_backward(model_t *m, model_acts *a, const int *tokens, const int *targets,
                    const int *seg);
void model_zero_grad(model_t *m);

typedef struct {
    float lr, beta1, beta2, eps, wd;
} adamw_hparams;
// Clips the gradient to global norm clip (clip <= 0: no clipping) and takes
// one AdamW step; t counts from 1. Returns the norm before clipping.
float model_adamw_step(model_t *m, const adamw_hparams *hp, float clip, long t);
// The learning rate at step (0-based) of total: linear warmup, cosine to lr/10.
float lr_schedule(float lr, int warmup, long step, long total);

#endif
