// eval.h — docs/model.md: perplexity over non-overlapping windows, each
// scored on its own, and the order probe on cats.
#ifndef PELAB_EVAL_H
#define PELAB_EVAL_H

#include "../data/data.h"
#include "../model/attn.h"
#include "../model/model.h"

// --rand-pos models see random positions at evaluation too (Ruoss et al.
// 2023 evaluate that way): drawn from this fixed stream, so that every
// evaluation of a model scores the same windows with the same positions.
#define EVAL_POSITIONS_SEED 0x5EEDE7A1ULL

typedef struct {
    int L;
    int ok;            // 0: refused, or failed (nonfinite), see err
    int nonfinite;     // the model's loss at this length is not a number: a failure, not a refusal
    double loss, ppl;
    size_t tokens;     // predicted tokens scored
    int window;        // each scored with at most this many tokens of context (0: the whole window of L)
    double seconds;
    char err[256];
} eval_result;

// Evaluates at length L over at most max_tokens; fills r (r->ok = 0 with
// r->err when this length is refused, and r->nonfinite too when the loss
// came out NaN or infinite).
void eval_perplexity(model_t *m, const data_t *d, int L, size_t max_tokens, eval_result *r);
// The same windows of L and the same targets, each target scored with at
// most W tokens of context (a causal model; W >= L or 0: eval_perplexity):
// the model reads sub-windows of W starting every eval_window_stride(W)
// tokens, each scoring the targets past the previous one's end, so a target
// has all its context within the first W tokens and W-S+1 to W after them
// (docs/model.md). attn_stats, when not NULL (layers, heads,
// ATTN_NSTAT doubles), receives where the attention weights went, summed
// over every query row scored (attn.h).
void eval_perplexity_window(model_t *m, const data_t *d, int L, int W, size_t max_tokens, double *attn_stats,
                            eval_result *r);
size_t eval_window_stride(int W);
// The validation windows eval_perplexity scores at length L, or 0 with err
// filled when that length can never be evaluated for this model and data
// (past its positions, or no window): the refusal it makes, asked first.
size_t eval_scorable_windows(const model_t *m, const data_t *d, int L, size_t max_tokens, char *err, size_t errlen);
// --eval-rows: the windows eval_perplexity scores at each of the n lengths
// (those it refuses are left out), written atomically to path in the
// format docs/pytorch.md gives: "PELABROW", u32 version 1, u32 lengths;
// per length u32 L, u32 windows, then the windows' tokens, targets (-1: not
// scored) and segments, each windows × L int32, all little-endian.
// 0, or -1 with err filled.
int eval_write_rows(const model_t *m, const data_t *d, const int *lengths, int n, size_t max_tokens, const char *path,
                    char *err, size_t errlen);
// A task's accuracy at the sizes r: `count` instances from a fixed stream
// (`stream` picks it), each right when every answer token is the argmax
// (docs/data.md). ok = 0 with err when the encoding cannot reach the
// length.
typedef struct {
    task_range r;
    int ok, n, right;
    double acc;
    char err[256];
} task_result;
void eval_task(model_t *m, const data_t *d, task_range r, int count, unsigned long long stream, task_result *res);
// Rows of a forward pass whose every target is the argmax of its logits
// (rows without a target do not count); shared with the tests.
int eval_rows_all_right(const float *logits, const int *targets, int B, int T, int V, int *scored);

// Order probe: accuracy of the argmax at the answer slot over every held-out
// triple in both orders and both questions; *n receives the count.
double eval_order(model_t *m, const data_t *d, int *n);
// Predicted token (argmax) at position pos of each probe row: helper shared
// with the tests. preds (n)
void eval_probe_predictions(model_t *m, const data_t *d, const cats_example *probe, int n, int *preds);

#endif
