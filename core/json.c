// json.c — see json.h.
#include "json.h"

#include <math.h>

#include "common.h"

void json_string(FILE *f, const char *s) {
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        int n = utf8_length(p);
        if (n == 1 && (*p == '"' || *p == '\\')) fprintf(f, "\\%c", *p);
        else if (n == 1 && *p < 0x20) fprintf(f, "\\u%04x", *p);
        else if (n == 0) fprintf(f, "\\u%04x", *p);  // not UTF-8: the byte as a code point
        else fwrite(p, 1, (size_t)n, f);
        p += n ? n : 1;
    }
    fputc('"', f);
}

void json_number(FILE *f, const char *fmt, double v) {
    if (isfinite(v)) fprintf(f, fmt, v);
    else fprintf(f, "null");
}
