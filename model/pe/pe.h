// pe.h — the position-encoding interface.
//
// An encoding is one file in model/pe/ that defines a pe_ops table, plus one
// line in model/pe/registry.c. Everything that lists encodings (--help,
// --list-pe, the tests, the benchmark, the experiment scripts) reads the
// registry. Each hook is optional (NULL = the encoding does not act there):
//   options           its command-line options (name, type, range, default)
//   check             rules about the model's shape it needs (even head size…)
//   init / free       declares its parameters in the model's table; its state
//   max_eval_ctx      the longest context it can be evaluated at
//   input_*           absolute encodings: x (B, T, C) += P(t)
//   qk_*              transform q and k in place (RoPE)
//   layer_begin       per-layer work before attention's forward (XL: W_R r), and
//                     again before its backward under the fused kernel
//   table_floats      the size of the tables it keeps for a context of T
//   kept_floats       the size of what it keeps from forward to backward in training
//   score_*           add a bias to the scaled scores s_ij of one head
//   value_*           add to the attention output of one head (Shaw's aV)
//   layer_end         per-layer work after attention's backward (reductions)
// Attention runs heads in parallel, one head per thread at a time, so a hook
// may write gradients that belong to its head; anything shared by heads goes
// through per-head scratch that layer_end reduces in head order (this keeps
// runs bit-reproducible).
#ifndef PELAB_PE_H
#define PELAB_PE_H

#include <stddef.h>

#include "../config.h"
#include "../params.h"

// One option of an encoding, e.g. --rope-base. Two encodings may declare the
// same name (--rel-clip: shaw and xl); the type must then agree.
// A LIST is 1..PE_MAX_LIST floats given as "a,b,c" (or "[a,b,c]"), each in
// [lo, hi]; pe->opt holds its length (NAN when not given), pe_option_values
// its values; it is written "[a,b,c]" in checkpoints and --json.
typedef enum { PE_OPT_FLOAT, PE_OPT_INT, PE_OPT_CHOICE, PE_OPT_LIST } pe_opt_type;

typedef struct {
    const char *name;               // without the dashes: "rope-base"
    pe_opt_type type;
    double lo, hi;                  // accepted range (FLOAT, INT)
    double def;                     // default; NAN: none, the encoding decides (def_text says what)
    const char *def_text;           // --help's default when def is NAN, e.g. "1/sqrt(d-model)"
    const char *const *choices;     // CHOICE: NULL-terminated names; the value is the index
    int eval_only;                  // set for an evaluation (with --load too), not kept with the model…
    int tunes;                      // …except when given with --init: then it applies to the fine-tuning
                                    // too, and the fine-tuned model keeps it (cfg->base_ctx > 0)
    const char *help;
} pe_option;

#define PE_MAX_OPTIONS 8
#define PE_MAX_TENSORS 8

typedef struct pe pe_t;

// What the per-layer hooks are told about the batch they work on: the model
// passes it to each call (nothing in pe_t is written while the model runs).
typedef struct {
    const int *pos;  // (B, T): the drawn positions under --rand-pos; NULL: 0..T-1
    int B, T;        // the batch's shape
    int span;        // the positions the encoding's tables must cover: T, or --rand-pos's MAX
    int chunk;       // attention's query rows per block, for scratch sizes
    int training;    // 1 when a backward pass follows (an encoding may keep what it will need)
    int keep_pairs;  // 1 when attention also keeps its (T, T) weights for the backward (training under the
                     // blocks kernel): an encoding may keep per-pair values of that size (kept_floats)
} pe_batch;

typedef struct pe_ops {
    const char *name;
    int absolute;              // 1 for encodings that add to the input
    const char *summary;       // one line for --list-pe: the paper and the idea
    const pe_option *options;  // terminated by an entry with name NULL; may be NULL
    int reads_positions;       // its hooks honour the positions they are given (--rand-pos is allowed)
    int causal_only;           // refuses bidirectional attention (pe_resolve says so; --list-pe shows it)
    int query_position;        // a relative encoding that also reads the query's own position (FIRE's
                               // normaliser): a common shift of all positions changes its scores
    int kinks;                 // only piecewise smooth in q, k (CoPE interpolates between integer
                               // counts): the finite-difference checks tolerate a few steps across a kink

    // Model-shape rules beyond the option ranges; 0 with a message in err.
    int (*check)(const pe_t *pe, char *err, size_t errlen);
    void (*init)(pe_t *pe, param_table *tab);
    void (*free)(pe_t *pe);
    // The longest evaluation context; NULL = unbounded.
    int (*max_eval_ctx)(const pe_t *pe);

    // x (B, T, C) += P(pos[b, t]); pos (B, T) is NULL for positions 0..T-1
    // (see "Positions" below)
    void (*input_forward)(pe_t *pe, const float *params, float *x, int B, int T, const int *pos);
    // dx (B, T, C)
    void (*input_backward)(pe_t *pe, float *grads, const float *dx, int B, int T, const int *pos);

    // qkv (B, T, 3C): rotate the q and k parts in place; backward maps the
    // gradient of the rotated q, k back to the unrotated ones, in place. L:
    // the evaluation length whose context extension applies (RoPE's
    // --rope-scale), 0 in training and in evaluations that apply none.
    void (*qk_forward)(pe_t *pe, float *qkv, int B, int T, const int *pos, int L);
    void (*qk_backward)(pe_t *pe, float *dqkv, int B, int T, const int *pos, int L);

    void (*layer_begin)(pe_t *pe, const float *params, int layer, const pe_batch *bt);
    // Floats of tables and scratch the encoding allocates for a context of T
    // in blocks of chunk rows (for the memory estimate before a long
    // evaluation); NULL = negligible.
    size_t (*table_floats)(const pe_t *pe, int T, int chunk);
    // Floats it keeps from the forward for the backward of a training batch
    // (B, T) when keep_pairs is set (for the memory estimate); NULL = none.
    size_t (*kept_floats)(const pe_t *pe, int B, int T);
    void (*layer_end)(pe_t *pe, const float *params, float *grads, int layer, const pe_batch *bt);

    // One head h of sequence b of the batch: query rows i0..i0+nq-1, keys
    // 0..nk-1. q (nq, ld) starts at row i0; k (nk, ld); s (nq, lds) += bias.
    // pos: the sequence's T positions, NULL for 0..T-1.
    void (*score_forward)(pe_t *pe, const float *params, int layer, int h, int b,
                          const float *q, const float *k, int ld,
                          int i0, int nq, int nk, float *s, int lds, const int *pos);
    // Optional, what the blocks kernel calls instead of score_forward: s holds
    // q·kᵀ unscaled, and leaves s = scale·s + bias. For an encoding that
    // reads q·k itself (CoPE's gates), which takes it from there instead of a
    // product of its own; scale·s is the bits of a product with alpha = scale
    // where the engine applies alpha to the finished sum (OpenBLAS).
    void (*score_forward_raw)(pe_t *pe, const float *params, int layer, int h, int b,
                              const float *q, const float *k, int ld,
                              int i0, int nq, int nk, float *s, int lds, const int *pos, float scale);
    // ds (nq, lds): gradient of the scaled scores; adds into dq, dk (same
    // layout as q, k) and the encoding's gradients.
    void (*score_backward)(pe_t *pe, const float *params, float *grads, int layer, int h, int b,
                           const float *q, const float *k, int ld, float *dq, float *dk,
                           int i0, int nq, int nk, const float *ds, int lds, const int *pos);
    // p (nq, ldp) attention weights; y (nq, ldy) += Σ_j p_ij a(i, j)
    void (*value_forward)(pe_t *pe, const float *params, int layer, int h, int b,
                          const float *p, int ldp, int i0, int nq, int nk,
                          float *y, int ldy, const int *pos);
    // dp (nq, ldp) += ∂/∂p; the encoding's gradients from dy (nq, ldy)
    void (*value_backward)(pe_t *pe, const float *params, float *grads, int layer, int h, int b,
                           const float *p, int ldp, int i0, int nq, int nk,
                           const float *dy, int ldy, float *dp, int lddp, const int *pos);
} pe_ops;

struct pe {
    const pe_ops *ops;
    const model_config *cfg;
    double opt[PE_MAX_OPTIONS];  // its options' values, in the order of ops->options
    int tensor[PE_MAX_TENSORS];   // indices into the param table of the tensors it declared
    size_t off[PE_MAX_TENSORS];   // their offsets in the parameter buffer
    void *state;     // the encoding's private data
};

// The most FIRE keeps of its forward pass for the backward pass of a
// training step (256 MiB); past it (long contexts, --rand-pos's table per
// sequence) the backward pass computes them again, with the same bits. A
// test lowers it to compare the two.
extern size_t pe_fire_keep_bytes;

// The registry (model/pe/registry.c): every encoding, in a fixed order.
extern const pe_ops *const pe_registry[];
extern const int pe_registry_count;
// The i-th composite (from 0) into buf, e.g. "learned+rope": each relative
// encoding once, with the absolute partner registry.c's PE_COMPOSITES names;
// 0 past the end. The tests and experiments sweep these.
int pe_composite(int i, char *buf, size_t cap);
// Looks up an encoding by name; NULL when unknown.
const pe_ops *pe_find(const char *name);
// Names of all encodings, for --help and messages: "none, sinusoidal, ..."
const char *pe_names(void);

// Splits "abs+rel" into at most one absolute and one relative encoding
// (NoPE is neither); 0 with a message on a bad name or combination.
int pe_parse_spec(const char *spec, const pe_ops **abs, const pe_ops **rel, char *err, size_t errlen);
// The option of ops called name, or NULL; *index receives its position.
const pe_option *pe_option_find(const pe_ops *ops, const char *name, int *index);
// Names of the encodings that take option name ("shaw, xl"), "" for none.
const char *pe_option_takers(const char *name, char *buf, size_t cap);
// Checks that every option set in c is one that the encodings of spec take;
// 0 with a message naming the encodings that do take it.
int pe_check_settings(const char *spec, const model_config *c, char *err, size_t errlen);
// Resolves pe->opt from cfg (given values, else defaults) and checks the
// ranges and the encoding's own rules; 0 with a message.
int pe_resolve(pe_t *pe, const pe_ops *ops, const model_config *cfg, char *err, size_t errlen);
// An option's value as text, for --json and checkpoints ("yarn", "16", "0.35";
// not a LIST's: pe_value_format).
void pe_option_format(const pe_option *o, double v, char *buf, size_t cap);
// The room pe_value_format may need.
#define PE_FORMAT_MAX (16 * PE_MAX_LIST + 8)
// The resolved value of pe's option k as text ("unset" when it has none), a
// LIST as "[a,b,c]".
void pe_value_format(const pe_t *pe, int k, char *buf, size_t cap);
// A LIST option's values (*n of them; NULL with *n = 0 when not given).
const float *pe_option_values(const pe_t *pe, int k, int *n);
// Parses an option's value from the command line into c; 0 with a message.
int pe_option_set(const pe_option *o, const char *s, model_config *c, char *err, size_t errlen);

#endif
