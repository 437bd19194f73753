// config.h — what defines a model: its shape, its attention mode, its
// position encoding(s) and their option values. The encodings read it (so it
// sits below model/pe/), and a checkpoint stores it.
#ifndef PELAB_CONFIG_H
#define PELAB_CONFIG_H

#include "../core/common.h"

// Options given for the encodings, by name ("rope-base"); an encoding takes
// its declared default for an option not listed here (model/pe/pe.h).
#define PE_MAX_SETTINGS 16
typedef struct {
    char name[32];
    double value;  // ints and choices (the index) are stored exactly
} pe_setting;

typedef struct model_config {
    int vocab, ctx, d_model, layers, heads;
    int causal;  // 1 causal, 0 bidirectional
    int base_ctx;  // a fine-tuned model (--init): the ctx its weights were first trained at; 0 otherwise
    int rand_pos;  // --rand-pos MAX: positions are a sorted random subset of [0, MAX); 0 = off
    char pe[32];  // as given on the command line, e.g. "learned+rope"
    int n_settings;
    pe_setting settings[PE_MAX_SETTINGS];
} model_config;

// The value set for option `name`, or NULL when it is not set.
const pe_setting *config_setting(const model_config *c, const char *name);
// Sets (or replaces) option `name`; returns 0 when the list is full.
int config_set(model_config *c, const char *name, double value);
// Removes option `name` (its encoding's default applies again).
void config_unset(model_config *c, const char *name);

#endif
