// params.c — see params.h.
#include "params.h"

#include <string.h>

int param_add(param_table *tab, const char *name, size_t size, int decay, int init, float std) {
    if (tab->n >= MAX_TENSORS) die_runtime("internal: too many parameter tensors");
    tensor_info *t = &tab->t[tab->n];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->offset = tab->total;
    t->size = size;
    t->decay = decay;
    t->init = init;
    t->std = std;
    tab->total += size;
    return tab->n++;
}

void param_init(const param_table *tab, float *params, rng_t *rng) {
    for (int i = 0; i < tab->n; i++) {
        const tensor_info *t = &tab->t[i];
        float *p = params + t->offset;
        for (size_t j = 0; j < t->size; j++)
            p[j] = t->init == INIT_ONE     ? 1.0f
                 : t->init == INIT_NORMAL ? t->std * rng_normal(rng)
                 : t->init == INIT_CONST  ? t->std
                                          : 0.0f;
    }
}
