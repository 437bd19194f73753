// ckpt.h — checkpoints: the run's settings and state (the settings schema
// of run/settings.c says which and in what order), the weights, the AdamW
// moments. Every number in the file is little-endian, on any
// host. Format version 2 (docs/checkpoint.md):
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

#include "../model/model.h"
#include "settings.h"

#define CKPT_VERSION 2

// Writes atomically: a temporary file beside path, fsync, rename. The
// settings text holds every row of the settings schema that has a key, from
// o (the model's own shape: o and m agree) and st, and the encodings'
// options of m. Returns 0 on success, else -1 with err filled (the previous
// file is untouched).
int ckpt_save(const char *path, const model_t *m, const options *o, const run_state *st, int with_optimizer,
              char *err, size_t errlen);
// Reads a checkpoint: its settings into *file (every other option at its
// default) and *st, creates *m from them, with the n_extra options of extra
// added (evaluation-only options given with --load, e.g. --rope-scale), and
// fills the weights, and the moments when with_optimizer and present
// (otherwise they are read only for the checksum). Returns 0; -1 when the
// file cannot be used and -2 when an extra option does not fit the model,
// with err filled and nothing allocated.
int ckpt_load(const char *path, const pe_setting *extra, int n_extra, model_t *m, options *file, run_state *st,
              int with_optimizer, char *err, size_t errlen);
// Reads only the header of a checkpoint (checked as ckpt_load checks it):
// its settings, state and number of parameters, so that what loading it
// will need can be known before anything large is allocated. 0, or -1 with err.
int ckpt_peek(const char *path, options *file, run_state *st, uint64_t *n_params, int with_optimizer, char *err,
              size_t errlen);

#endif
