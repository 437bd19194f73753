// ckpt.h — checkpoints: the model's config and weights, the AdamW moments and
// the training position. Format (little-endian), documented in the README:
//   magic "PELABCK1" (8 bytes), u32 version, u32 flags (bit 0: optimiser
//   state present), the config block, the training-state block, u64 number
//   of parameters N, f32 params[N], then if flag 0: f32 m[N], f32 v[N], and
//   last a u32 CRC-32 of every byte before it.
#ifndef PELAB_CKPT_H
#define PELAB_CKPT_H

#include <stdint.h>

#include "model.h"

#define CKPT_VERSION 1

typedef struct {
    int64_t step;        // optimiser steps completed
    int64_t steps;       // length of the schedule (--steps)
    int32_t batch, warmup;
    float lr, wd, clip;
    uint64_t seed;
    uint64_t data_rng;   // the batch stream's state
    char data[512];      // --data as given
} train_state;

// Writes atomically: a temporary file beside path, fsync, rename. Returns 0
// on success, else -1 with err filled (the previous file is untouched).
int ckpt_save(const char *path, const model_t *m, const train_state *st, int with_optimizer,
              char *err, size_t errlen);
// Reads a checkpoint: creates *m from its config and fills the weights (and
// the moments when with_optimizer and present). Returns 0, or -1 with err
// filled and nothing allocated.
int ckpt_load(const char *path, model_t *m, train_state *st, int with_optimizer, char *err, size_t errlen);

#endif
