// json.c — see json.h.
#include "json.h"

#include <math.h>

// The length of the valid UTF-8 sequence at s (1 to 4), or 0.
static int utf8_length(const unsigned char *s) {
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || (n == 2 && s[0] < 0xC2) || (n == 4 && s[0] > 0xF4)) return 0;
    for (int k = 1; k < n; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;  // overlong, surrogates
    if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;  // overlong, > U+10FFFF
    return n;
}

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
