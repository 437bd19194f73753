// viz.h — pictures of a trained model.
#ifndef PELAB_VIZ_H
#define PELAB_VIZ_H

#include "../data/data.h"
#include "../model/model.h"

// Draws the attention weights on a held-out probe sentence in both word
// orders (top: "the X verbs the Y", bottom: "the Y verbs the X"): one panel
// per layer and head, tokens labelled on both axes. Returns 0, or -1 with
// err filled.
int viz_attention_png(model_t *m, const data_t *d, const char *path, char *err, size_t errlen);

// The size in pixels viz_attention_png draws for this model and corpus.
void viz_attention_size(const model_t *m, const data_t *d, int *w, int *h);

#endif
