// config_file.c — see config_file.h.
#include "config_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/common.h"

#define CONFIG_MAX_BYTES (16 << 20)  // a record is a few KiB; a larger file is not one
#define CONFIG_MAX_ITEMS 512

static int add_item(config_file *cf, const char *key, const char *value, int line, char *err, size_t errlen) {
    if (cf->n == CONFIG_MAX_ITEMS) {
        snprintf(err, errlen, "more than %d settings", CONFIG_MAX_ITEMS);
        return -1;
    }
    cf->items[cf->n++] = (config_item){key, value, line};
    return 0;
}

// ---- JSON: the parser reads in place, writing each string's unescaped text
// over its own bytes (never longer), so the items point into cf->text.

typedef struct {
    char *p;
    const char *start;
} cursor;

static void skip_ws(cursor *c) {
    while (*c->p && isspace((unsigned char)*c->p)) c->p++;
}

static int fail_at(const cursor *c, char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "not JSON at byte %ld: %s", (long)(c->p - c->start), what);
    return -1;
}

// A string at c->p ('"'): its text, unescaped in place and NUL-terminated.
static char *json_string_in_place(cursor *c, char *err, size_t errlen) {
    char *out = ++c->p, *w = out;
    for (;;) {
        char ch = *c->p;
        if (!ch) return fail_at(c, err, errlen, "an unterminated string"), NULL;
        c->p++;
        if (ch == '"') break;
        if (ch != '\\') {
            *w++ = ch;
            continue;
        }
        char e = *c->p++;
        switch (e) {
        case '"': case '\\': case '/': *w++ = e; break;
        case 'n': *w++ = '\n'; break;
        case 't': *w++ = '\t'; break;
        case 'r': *w++ = '\r'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'u': {  // the writer escapes only control characters: one byte
            unsigned v = 0;
            for (int k = 0; k < 4; k++) {
                char h = *c->p++;
                if (!isxdigit((unsigned char)h)) return fail_at(c, err, errlen, "a bad \\u escape"), NULL;
                v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
            }
            if (v == 0 || v > 0x7f) return fail_at(c, err, errlen, "a \\u escape past ASCII in a setting"), NULL;
            *w++ = (char)v;
            break;
        }
        default: return fail_at(c, err, errlen, "a bad escape"), NULL;
        }
    }
    *w = '\0';
    return out;
}

// Text kept in the arena (numbers and arrays, which need bytes their
// place in the file does not have).
static char *arena_put(config_file *cf, const char *s, size_t n) {
    char *out = cf->arena + cf->used;  // the arena is as large as the file: every value fits
    memcpy(out, s, n);
    out[n] = '\0';
    cf->used += n + 1;
    return out;
}

// A value that is not an object: its command-line text, or NULL in *value
// for null. An array becomes its elements joined by commas.
static int json_scalar(cursor *c, config_file *cf, const char **value, char *err, size_t errlen) {
    skip_ws(c);
    if (*c->p == '"') {
        *value = json_string_in_place(c, err, errlen);
        return *value ? 0 : -1;
    }
    if (*c->p == '[') {
        c->p++;
        char *out = cf->arena + cf->used;
        size_t len = 0;
        for (int first = 1;; first = 0) {
            skip_ws(c);
            if (*c->p == ']') {
                c->p++;
                break;
            }
            if (!first) {
                if (*c->p != ',') return fail_at(c, err, errlen, "an array without its comma");
                c->p++;
                skip_ws(c);
            }
            const char *v;
            if (*c->p == '[' || *c->p == '{') return fail_at(c, err, errlen, "an array of arrays or objects");
            size_t mark = cf->used;
            cf->used += len + 1;  // the elements' own copies go after the list built so far
            if (json_scalar(c, cf, &v, err, errlen) != 0) return -1;
            if (!v) return fail_at(c, err, errlen, "null in an array");
            size_t n = strlen(v);
            if (!first) out[len++] = ',';
            memmove(out + len, v, n);
            len += n;
            out[len] = '\0';
            cf->used = mark;
        }
        cf->used += len + 1;
        *value = out;
        return 0;
    }
    const char *s = c->p;
    while (*c->p && (isalnum((unsigned char)*c->p) || strchr("+-.", *c->p))) c->p++;
    if (c->p == s) return fail_at(c, err, errlen, "a value that is not a number, string, array, true, false or null");
    *value = (size_t)(c->p - s) == 4 && !strncmp(s, "null", 4) ? NULL : arena_put(cf, s, (size_t)(c->p - s));
    return 0;
}

// Skips any value (the record's other members: train, eval …).
static int json_skip(cursor *c, config_file *cf, char *err, size_t errlen) {
    skip_ws(c);
    if (*c->p == '"') return json_string_in_place(c, err, errlen) ? 0 : -1;
    if (*c->p == '{' || *c->p == '[') {
        int depth = 0;
        do {
            if (*c->p == '"') {
                if (!json_string_in_place(c, err, errlen)) return -1;
                continue;
            }
            if (!*c->p) return fail_at(c, err, errlen, "an unclosed object or array");
            if (*c->p == '{' || *c->p == '[') depth++;
            if (*c->p == '}' || *c->p == ']') depth--;
            c->p++;
        } while (depth > 0);
        return 0;
    }
    const char *v;
    return json_scalar(c, cf, &v, err, errlen);
}

// The members of the object at c->p; with `record`, only the "config"
// object's (read as its own object), else every member's.
static int json_object(cursor *c, config_file *cf, int record, int *found, char *err, size_t errlen) {
    skip_ws(c);
    if (*c->p != '{') return fail_at(c, err, errlen, "expected an object");
    c->p++;
    for (int first = 1;; first = 0) {
        skip_ws(c);
        if (*c->p == '}') {
            c->p++;
            return 0;
        }
        if (!first) {
            if (*c->p != ',') return fail_at(c, err, errlen, "an object without its comma");
            c->p++;
            skip_ws(c);
        }
        if (*c->p != '"') return fail_at(c, err, errlen, "a member without its name");
        const char *key = json_string_in_place(c, err, errlen);
        if (!key) return -1;
        skip_ws(c);
        if (*c->p != ':') return fail_at(c, err, errlen, "a member without its colon");
        c->p++;
        skip_ws(c);
        if (record && strcmp(key, "config") == 0) {
            *found = 1;
            if (json_object(c, cf, 0, found, err, errlen) != 0) return -1;
        } else if (record && strcmp(key, "given") == 0 && *c->p == '[') {
            if (json_scalar(c, cf, &cf->given, err, errlen) != 0) return -1;
        } else if (record) {
            if (json_skip(c, cf, err, errlen) != 0) return -1;
        } else {
            const char *value;
            if (*c->p == '{') return fail_at(c, err, errlen, "a setting whose value is an object");
            if (json_scalar(c, cf, &value, err, errlen) != 0 || add_item(cf, key, value, 0, err, errlen) != 0) return -1;
        }
    }
}

// ---- key = value lines

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

static int read_lines(config_file *cf, char *err, size_t errlen) {
    int line = 0;
    for (char *p = cf->text; p && *p;) {
        char *next = strchr(p, '\n');
        if (next) *next++ = '\0';
        line++;
        char *hash = strchr(p, '#');
        if (hash) *hash = '\0';
        char *s = trim(p);
        p = next;
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "line %d is not 'key = value': '%.60s'", line, s);
            return -1;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        if (!strncmp(key, "--", 2)) key += 2;
        if (!*key) {
            snprintf(err, errlen, "line %d has no key before its '='", line);
            return -1;
        }
        if (add_item(cf, key, value, line, err, errlen) != 0) return -1;
    }
    return 0;
}

int config_file_read(const char *path, config_file *cf, char *err, size_t errlen) {
    memset(cf, 0, sizeof *cf);
    struct stat st;
    FILE *f = NULL;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || !(f = fopen(path, "rb"))) {
        snprintf(err, errlen, "cannot read it: %s", stat(path, &st) != 0 ? strerror(errno) : "not a regular file");
        return -1;
    }
    if (st.st_size > CONFIG_MAX_BYTES) {
        fclose(f);
        snprintf(err, errlen, "it is %lld bytes; a run's settings are a few KiB", (long long)st.st_size);
        return -1;
    }
    cf->text = xmalloc((size_t)st.st_size + 1);
    size_t n = fread(cf->text, 1, (size_t)st.st_size, f);
    fclose(f);
    cf->text[n] = '\0';
    if (strlen(cf->text) != n) {
        snprintf(err, errlen, "it holds a NUL byte: not a text file");
        return -1;
    }
    cf->items = xmalloc(sizeof *cf->items * CONFIG_MAX_ITEMS);
    cf->arena = xmalloc(2 * n + 2);  // values copied out of the file: at most the file's bytes and a NUL each
    cf->used = 0;
    cursor c = {cf->text, cf->text};
    skip_ws(&c);
    if (*c.p != '{') return read_lines(cf, err, errlen);
    cf->from_record = 1;
    // a record ({"config": {…}, …}) or its config object alone: tell them by a "config" member
    int found = 0;
    char *copy = xmalloc(n + 1);
    memcpy(copy, cf->text, n + 1);
    cursor probe = {copy, copy};
    int rc = json_object(&probe, cf, 1, &found, err, errlen);
    free(copy);
    cf->n = 0, cf->used = 0, cf->given = NULL;
    if (rc != 0) return -1;
    return json_object(&c, cf, found, &found, err, errlen);
}

void config_file_free(config_file *cf) {
    free(cf->items);
    free(cf->text);
    free(cf->arena);
    memset(cf, 0, sizeof *cf);
}
