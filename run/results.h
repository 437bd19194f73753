// results.h — the results of a run as a schema: one row per field of
// --json (where it sits, its key, its type, its unit, what it means, when it
// is there, how its value is written). The writer walks the rows, so a new
// result is one row; `./train --list-results` prints the schema as JSON, from
// which the lab reads the keys, types and --attn-stats distances, and
// against which docs/options.md is checked (cli/results_schema_*).
#ifndef PELAB_RESULTS_H
#define PELAB_RESULTS_H

#include <stdio.h>

#include "run.h"

// What a row's functions read: the run's settings, its model, what training
// and the evaluations reported, and the element of the array being written.
typedef struct {
    const options *o;
    const model_t *m;
    const train_report *tr;
    const eval_report *er;
    int i;
} results_ctx;

typedef struct {
    const char *section;  // the object the field sits in: "" (the top), "train", "eval[]" (each element of eval), …
    const char *key;
    const char *type;     // "int", "number", "string", "bool", "object", "array", "[number]", …; "|null" when it may be null
    const char *unit;     // "" when it has none
    const char *doc;
    int (*present)(const results_ctx *c);            // NULL: always there
    void (*write)(FILE *f, const results_ctx *c);    // the value (NULL for a container)
    const char *opens;                               // a container: the section of the rows inside it
    int (*count)(const results_ctx *c);              // an array of objects: its elements (c->i each)
} result_field;

extern const result_field results_schema[];
extern const int results_count;

// The commit ./train was built from as a JSON value (a string; null outside
// git), and when this invocation started (UTC, ISO 8601, into 32 bytes):
// what --json's "pelab" and --log's first line both say.
void results_commit(FILE *f);
void results_start_time(char *when);
// The results object (the whole of --json) into f.
void results_write(FILE *f, const results_ctx *c);
// The schema as JSON: {"fields": [{"path", "type", "unit", "doc"}, …], "attn_distances": [16, …]}.
void results_print_schema(FILE *f);

#endif
