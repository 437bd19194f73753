// config.c — see config.h.
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const pe_setting *config_setting(const model_config *c, const char *name) {
    for (int i = 0; i < c->n_settings; i++)
        if (strcmp(c->settings[i].name, name) == 0) return &c->settings[i];
    return NULL;
}

static pe_setting *slot(model_config *c, const char *name) {
    pe_setting *s = (pe_setting *)config_setting(c, name);
    if (!s) {
        if (c->n_settings == PE_MAX_SETTINGS || strlen(name) >= sizeof s->name) return NULL;
        s = &c->settings[c->n_settings++];
        snprintf(s->name, sizeof s->name, "%s", name);
    }
    return s;
}

int config_set(model_config *c, const char *name, double value) {
    pe_setting *s = slot(c, name);
    if (!s) return 0;
    s->value = value;
    s->n_list = 0;
    return 1;
}

int config_set_list(model_config *c, const char *name, const float *v, int n) {
    pe_setting *s = n >= 1 && n <= PE_MAX_LIST ? slot(c, name) : NULL;
    if (!s) return 0;
    memcpy(s->list, v, sizeof(float) * (size_t)n);
    s->n_list = n;
    s->value = n;
    return 1;
}

int config_copy_setting(model_config *c, const pe_setting *s) {
    return s->n_list ? config_set_list(c, s->name, s->list, s->n_list) : config_set(c, s->name, s->value);
}

int config_parse_list(const char *s, float *v, int cap) {
    int bracket = *s == '[', n = 0;
    const char *p = s + bracket;
    for (;;) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (errno || end == p || !isfinite(x) || !isfinite((float)x) || n == cap) return 0;
        v[n++] = (float)x;
        while (*end == ' ') end++;
        if (*end != ',') {
            p = end;
            break;
        }
        p = end + 1;
    }
    if (bracket && *p++ != ']') return 0;
    return *p ? 0 : n;
}

void config_format_list(const float *v, int n, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && k < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%.9g", i ? "," : "", v[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

void config_unset(model_config *c, const char *name) {
    for (int i = 0; i < c->n_settings; i++)
        if (strcmp(c->settings[i].name, name) == 0) {
            c->settings[i] = c->settings[--c->n_settings];
            return;
        }
}
