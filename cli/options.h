// options.h — ./train's command line, read through the settings schema
// (run/settings.h): parsing with the rows' types and ranges, the refusals
// of options that a checkpoint decides, --help and --list-pe. The encodings'
// options (--rope-base …) come from the registry (model/pe/), each declared
// in its encoding's file.
#ifndef PELAB_OPTIONS_H
#define PELAB_OPTIONS_H

#include <stdio.h>

#include "../run/settings.h"

// Parses argv into o (set to the defaults first); exits 2 with a message on
// a bad option or value; handles --help, --version and --list-pe (print and
// exit 0).
void options_parse(options *o, int argc, char **argv);
// --help, generated from the schema and the registry.
void options_usage(FILE *f);
// --list-pe: one line per encoding (name, kind, summary, options), then the
// composites the tests and experiments use (one absolute with each relative).
void options_list_pe(FILE *f);
// --list-gemm: a line per matrix engine, in --gemm's order: its name,
// "available" or "absent" (not built, or no CPU support), what it is.
void options_list_gemm(FILE *f);

#endif
