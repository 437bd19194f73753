// eval.h — README "Evaluation": perplexity over non-overlapping windows, each
// scored on its own, and the order probe on cats.
#ifndef PELAB_EVAL_H
#define PELAB_EVAL_H

#include "../data/data.h"
#include "../model/model.h"

typedef struct {
    int L;
    int ok;            // 0: refused, see err
    double loss, ppl;
    size_t tokens;     // predicted tokens scored
    double seconds;
    char err[256];
} eval_result;

// Evaluates at length L over at most max_tokens; fills r (r->ok = 0 with
// r->err when this length is refused).
void eval_perplexity(model_t *m, const data_t *d, int L, size_t max_tokens, eval_result *r);
// Order probe: accuracy of the argmax at the answer slot over every held-out
// triple in both orders and both questions; *n receives the count.
double eval_order(model_t *m, const data_t *d, int *n);
// Predicted token (argmax) at position pos of each probe row: helper shared
// with the tests. preds (n)
void eval_probe_predictions(model_t *m, const data_t *d, const cats_example *probe, int n, int *preds);

#endif
