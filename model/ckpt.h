// ckpt.h — checkpoints: the model's config and weights, the AdamW moments and
// the training position. Every number in the file is little-endian, on any
// host. Format version 2 (README "Checkpoint format"):
//   magic "PELABCK1" (8 bytes), u32 version = 2, u32 flags (bit 0: optimiser
//   state present), u64 number of parameters N, u32 length S of the settings
//   text, S bytes of "key=value\n" lines (the model's shape and encodings,
//   every encoding option set, the run's settings and the identity of its
//   training data), f32 params[N], then if flag 0: f32 m[N], f32 v[N], and
//   last a u32 CRC-32 of every byte before it.
// Version 1 files (a fixed binary header) still load, for --load and --resume.
#ifndef PELAB_CKPT_H
#define PELAB_CKPT_H

#include <stdint.h>

#include "model.h"

#define CKPT_VERSION 2
#define CKPT_PATH_MAX 4096  // Linux's PATH_MAX: no path the system can open is longer

typedef struct {
    int64_t step;        // optimiser steps completed
    int64_t steps;       // length of the schedule (--steps)
    int32_t batch, warmup;
    float lr, wd, clip;
    uint64_t seed;
    uint64_t data_rng;   // the batch stream's state
    char data[CKPT_PATH_MAX];  // --data as given
    // The identity of the training data, so that --resume can refuse a
    // corpus that changed: its size in bytes and the CRC-32 of its bytes (0
    // and 0 for the built-in corpus). data_known is 0 for version 1 files.
    uint64_t data_size;
    uint32_t data_crc;
    int data_known;
} train_state;

// Writes atomically: a temporary file beside path, fsync, rename. Returns 0
// on success, else -1 with err filled (the previous file is untouched).
int ckpt_save(const char *path, const model_t *m, const train_state *st, int with_optimizer,
              char *err, size_t errlen);
// Reads a checkpoint: creates *m from its config, with the n_extra options
// of extra added (evaluation-only options given with --load, e.g.
// --rope-scale), and fills the weights, and the moments when with_optimizer
// and present (otherwise they are read only for the checksum). Returns 0;
// -1 when the file cannot be used and -2 when an extra option does not fit
// the model, with err filled and nothing allocated.
int ckpt_load(const char *path, const pe_setting *extra, int n_extra, model_t *m, train_state *st,
              int with_optimizer, char *err, size_t errlen);
// Reads only the header of a checkpoint (checked as ckpt_load checks it):
// its config, state and number of parameters, so that what loading it will
// need can be known before anything large is allocated. 0, or -1 with err.
int ckpt_peek(const char *path, model_config *c, train_state *st, uint64_t *n_params, int with_optimizer,
              char *err, size_t errlen);

#endif
