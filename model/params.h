// params.h — one buffer, a table of sizes. Parameters, gradients and both
// AdamW moments share this layout, so the optimiser is one flat loop and a
// checkpoint is a few fwrites.
#ifndef PELAB_PARAMS_H
#define PELAB_PARAMS_H

#include <stddef.h>

#include "../core/common.h"

#define MAX_TENSORS 32

enum { INIT_ZERO = 0, INIT_ONE, INIT_NORMAL, INIT_CONST };

typedef struct {
    char name[24];
    size_t offset, size;  // in floats
    int decay;            // AdamW weight decay applies (matrices, embeddings)
    int init;             // INIT_*
    float std;            // INIT_NORMAL: the standard deviation; INIT_CONST: the value
} tensor_info;

typedef struct {
    tensor_info t[MAX_TENSORS];
    int n;
    size_t total;  // floats
} param_table;

// Appends a tensor of `size` floats; returns its index.
int param_add(param_table *tab, const char *name, size_t size, int decay, int init, float std);
// Fills params per each tensor's init rule, drawing from rng in table order.
void param_init(const param_table *tab, float *params, rng_t *rng);

#endif
