// json.h — writing JSON values: strings (escaped, always valid UTF-8) and
// numbers (null where JSON has none). The --json report and the settings'
// "config" object are written with these.
#ifndef PELAB_JSON_H
#define PELAB_JSON_H

#include <stdio.h>

// A JSON string: escaped, and valid UTF-8 whatever the bytes (a byte that is
// not part of a valid UTF-8 sequence is written as the character of the
// same number, \u00XX, as Latin-1 would read it).
void json_string(FILE *f, const char *s);
// A JSON number with fmt, or null when v is NaN or infinite (JSON has no
// such numbers).
void json_number(FILE *f, const char *fmt, double v);

#endif
