// config.h — what defines a model: its shape, its attention mode, its
// position encoding(s) and their option values. The encodings read it (so it
// sits below model/pe/), and a checkpoint stores it.
#ifndef PELAB_CONFIG_H
#define PELAB_CONFIG_H

#include "../core/common.h"

// Options given for the encodings, by name ("rope-base"); an encoding takes
// its declared default for an option not listed here (model/pe/pe.h).
#define PE_MAX_SETTINGS 16
#define PE_MAX_LIST 64  // the most values a list option (e.g. --rope-factors) holds
typedef struct {
    char name[32];
    double value;  // ints and choices (the index) are stored exactly; a list: its length
    int n_list;    // a list's length (1..PE_MAX_LIST), its values in list[]; 0 for a single value
    float list[PE_MAX_LIST];
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
// Sets (or replaces) option `name` to the list v[0..n) (1 ≤ n ≤ PE_MAX_LIST);
// returns 0 when the list of settings is full or n is out of range.
int config_set_list(model_config *c, const char *name, const float *v, int n);
// Sets (or replaces) the option s names to s's value or list.
int config_copy_setting(model_config *c, const pe_setting *s);
// Parses "a,b,c" or "[a,b,c]" (finite numbers, as floats) into v; the
// count (1..cap), or 0 when s is not such a list.
int config_parse_list(const char *s, float *v, int cap);
// Writes v[0..n) as "[a,b,c]" (9 digits: each float exactly).
void config_format_list(const float *v, int n, char *buf, size_t cap);
// Removes option `name` (its encoding's default applies again).
void config_unset(model_config *c, const char *name);

#endif
