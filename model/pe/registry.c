// registry.c — the single list of position encodings, and the option
// handling every encoding shares. To add an encoding: write model/pe/NAME.c
// defining `const pe_ops pe_NAME_ops`, then add one line to PE_LIST below.
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pe.h"

#define PE_LIST(X)                                                                                  \
    X(none) X(sinusoidal) X(learned) X(rope) X(alibi) X(t5) X(xl) X(shaw) X(kerple) X(sandwich) X(dpb) X(xpos) X(fire) X(cope)

#define PE_DECLARE(name) extern const pe_ops pe_##name##_ops;
#define PE_ENTRY(name) &pe_##name##_ops,
PE_LIST(PE_DECLARE)
const pe_ops *const pe_registry[] = {PE_LIST(PE_ENTRY)};
const int pe_registry_count = sizeof pe_registry / sizeof pe_registry[0];

const pe_ops *pe_find(const char *name) {
    for (int i = 0; i < pe_registry_count; i++)
        if (strcmp(pe_registry[i]->name, name) == 0) return pe_registry[i];
    return NULL;
}

const char *pe_names(void) {
    static char buf[512];
    if (!buf[0])
        for (int i = 0; i < pe_registry_count; i++) {
            if (i) strcat(buf, ", ");
            strcat(buf, pe_registry[i]->name);
        }
    return buf;
}

// The composites the suite sweeps and the experiments name: each relative
// encoding once, with the absolute encoding it is paired with. Named here,
// so that adding an encoding to PE_LIST never changes another's partner (a
// test checks every relative encoding appears once).
#define PE_COMPOSITES(X)                                                                             \
    X(learned, rope) X(sinusoidal, alibi) X(learned, t5) X(sinusoidal, xl) X(learned, shaw)           \
    X(sinusoidal, kerple) X(learned, sandwich) X(sinusoidal, dpb) X(learned, xpos) X(sinusoidal, fire) \
    X(learned, cope)
#define PE_COMPOSITE(a, r) #a "+" #r,
static const char *const composites[] = {PE_COMPOSITES(PE_COMPOSITE)};

int pe_composite(int i, char *buf, size_t cap) {
    if (i < 0 || i >= (int)(sizeof composites / sizeof composites[0])) return 0;
    snprintf(buf, cap, "%s", composites[i]);
    return 1;
}

// NoPE: neither absolute nor relative; it takes no slot.
static int is_nope(const pe_ops *o) { return strcmp(o->name, "none") == 0; }

int pe_parse_spec(const char *spec, const pe_ops **abs, const pe_ops **rel, char *err, size_t errlen) {
    char buf[64];
    *abs = *rel = NULL;
    if (strlen(spec) >= sizeof buf) {
        snprintf(err, errlen, "--pe '%.40s…': unknown encoding (choose from %s)", spec, pe_names());
        return 0;
    }
    snprintf(buf, sizeof buf, "%s", spec);
    char *plus = strchr(buf, '+');
    char *names[2] = {buf, NULL};
    if (plus) {
        *plus = '\0';
        names[1] = plus + 1;
        if (strchr(names[1], '+')) {
            snprintf(err, errlen, "--pe '%s': at most one absolute and one relative encoding, joined by '+'", spec);
            return 0;
        }
    }
    for (int i = 0; i < 2 && names[i]; i++) {
        const pe_ops *o = pe_find(names[i]);
        if (!o) {
            nearest_name near = NEAREST_INIT;
            for (int k = 0; k < pe_registry_count; k++) nearest_offer(&near, names[i], pe_registry[k]->name);
            snprintf(err, errlen, "--pe '%s': unknown encoding '%s'%s%s%s (choose from %s)", spec, names[i],
                     near.best ? "; did you mean " : "", near.best ? near.best : "", near.best ? "?" : "", pe_names());
            return 0;
        }
        if (is_nope(o)) {
            if (plus) {
                snprintf(err, errlen, "--pe '%s': 'none' cannot be combined", spec);
                return 0;
            }
            continue;
        }
        const pe_ops **slot = o->absolute ? abs : rel;
        if (*slot) {
            snprintf(err, errlen, "--pe '%s': two %s encodings; combine one absolute with one relative (see --list-pe)", spec,
                     o->absolute ? "absolute" : "relative");
            return 0;
        }
        *slot = o;
    }
    return 1;
}

const pe_option *pe_option_find(const pe_ops *ops, const char *name, int *index) {
    for (int k = 0; ops && ops->options && ops->options[k].name; k++)
        if (strcmp(ops->options[k].name, name) == 0) {
            if (index) *index = k;
            return &ops->options[k];
        }
    return NULL;
}

int pe_check_settings(const char *spec, const model_config *c, char *err, size_t errlen) {
    const pe_ops *abs, *rel;
    if (!pe_parse_spec(spec, &abs, &rel, err, errlen)) return 0;
    for (int i = 0; i < c->n_settings; i++) {
        const char *name = c->settings[i].name;
        if (pe_option_find(abs, name, NULL) || pe_option_find(rel, name, NULL)) continue;
        char takers[256];
        pe_option_takers(name, takers, sizeof takers);
        if (takers[0]) snprintf(err, errlen, "--%s is not an option of --pe %s; it goes with %s", name, spec, takers);
        else snprintf(err, errlen, "--%s: no encoding has this option", name);
        return 0;
    }
    return 1;
}

const char *pe_option_takers(const char *name, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < pe_registry_count; i++)
        if (pe_option_find(pe_registry[i], name, NULL) && n < cap)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", pe_registry[i]->name);
    return buf;
}

void pe_option_format(const pe_option *o, double v, char *buf, size_t cap) {
    if (isnan(v)) snprintf(buf, cap, "unset");
    else if (o->type == PE_OPT_CHOICE) {
        int n = 0;
        while (o->choices[n]) n++;
        snprintf(buf, cap, "%s", v >= 0 && v < n && v == floor(v) ? o->choices[(int)v] : "?");  // pe_resolve refuses others
    }
    else if (o->type == PE_OPT_INT) snprintf(buf, cap, "%.0f", v);
    else snprintf(buf, cap, "%.9g", v);  // FLOAT values are floats: 9 digits give them back exactly
}

static int parse_value(const pe_option *o, const char *s, double *v, char *err, size_t errlen) {
    if (o->type == PE_OPT_CHOICE) {
        for (int k = 0; o->choices[k]; k++)
            if (strcmp(s, o->choices[k]) == 0) {
                *v = k;
                return 1;
            }
        nearest_name near = NEAREST_INIT;
        for (int k = 0; o->choices[k]; k++) nearest_offer(&near, s, o->choices[k]);
        size_t n = (size_t)snprintf(err, errlen, "--%s '%s': %s%s%schoose", o->name, s, near.best ? "did you mean " : "",
                                    near.best ? near.best : "", near.best ? "? " : "");
        for (int k = 0; o->choices[k] && n < errlen; k++)
            n += (size_t)snprintf(err + n, errlen - n, "%s %s", k ? "," : "", o->choices[k]);
        return 0;
    }
    char *end;
    errno = 0;
    double x = o->type == PE_OPT_INT ? (double)strtol(s, &end, 10) : strtod(s, &end);
    if (errno || end == s || *end || !isfinite(x)) {
        snprintf(err, errlen, "--%s '%s': not a %s", o->name, s, o->type == PE_OPT_INT ? "whole number" : "number");
        return 0;
    }
    if (o->type == PE_OPT_FLOAT) x = (double)(float)x;  // the model computes in float
    if (x < o->lo || x > o->hi) {
        snprintf(err, errlen, "--%s %g: must be between %g and %g", o->name, x, o->lo, o->hi);
        return 0;
    }
    *v = x;
    return 1;
}

// Every value of a LIST within the option's range (NaN is not); 0 with a message.
static int list_in_range(const pe_option *o, const float *v, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++)
        if (!(v[i] >= o->lo && v[i] <= o->hi)) {
            snprintf(err, errlen, "--%s: value %d of the list (%g) must be between %g and %g", o->name, i + 1, v[i], o->lo,
                     o->hi);
            return 0;
        }
    return 1;
}

int pe_option_set(const pe_option *o, const char *s, model_config *c, char *err, size_t errlen) {
    if (o->type != PE_OPT_LIST) {
        double v;
        if (!parse_value(o, s, &v, err, errlen)) return 0;
        if (!config_set(c, o->name, v)) return snprintf(err, errlen, "too many encoding options"), 0;
        return 1;
    }
    float v[PE_MAX_LIST];
    int n = config_parse_list(s, v, PE_MAX_LIST);
    if (!n) {
        snprintf(err, errlen, "--%s '%.60s': not a list of 1 to %d numbers separated by commas (e.g. 1,1.5,2)", o->name, s,
                 PE_MAX_LIST);
        return 0;
    }
    if (!list_in_range(o, v, n, err, errlen)) return 0;
    if (!config_set_list(c, o->name, v, n)) return snprintf(err, errlen, "too many encoding options"), 0;
    return 1;
}

const float *pe_option_values(const pe_t *pe, int k, int *n) {
    const pe_setting *s = config_setting(pe->cfg, pe->ops->options[k].name);
    *n = s ? s->n_list : 0;
    return *n ? s->list : NULL;
}

void pe_value_format(const pe_t *pe, int k, char *buf, size_t cap) {
    const pe_option *o = &pe->ops->options[k];
    int n;
    const float *v = o->type == PE_OPT_LIST ? pe_option_values(pe, k, &n) : NULL;
    if (v) config_format_list(v, n, buf, cap);
    else pe_option_format(o, pe->opt[k], buf, cap);
}

int pe_resolve(pe_t *pe, const pe_ops *ops, const model_config *cfg, char *err, size_t errlen) {
    memset(pe, 0, sizeof *pe);
    pe->ops = ops;
    pe->cfg = cfg;
    for (int k = 0; ops->options && ops->options[k].name; k++) {
        if (k == PE_MAX_OPTIONS) {  // an encoding's file declares more than pe_t holds: every test that builds it fails
            snprintf(err, errlen, "encoding %s declares more than %d options (PE_MAX_OPTIONS in pe.h)", ops->name, PE_MAX_OPTIONS);
            return 0;
        }
        const pe_option *o = &ops->options[k];
        const pe_setting *s = config_setting(cfg, o->name);
        if (s && (o->type == PE_OPT_LIST) != (s->n_list > 0)) {  // a checkpoint's text can say either
            snprintf(err, errlen, "--%s takes %s", o->name, o->type == PE_OPT_LIST ? "a list of numbers" : "one value");
            return 0;
        }
        if (o->type == PE_OPT_LIST) {
            if (s && !list_in_range(o, s->list, s->n_list, err, errlen)) return 0;
            pe->opt[k] = s ? s->n_list : NAN;
            continue;
        }
        double v = s ? s->value : o->def;
        int bad = s && (!isfinite(v) || (o->type != PE_OPT_CHOICE && (v < o->lo || v > o->hi)));
        if (o->type != PE_OPT_FLOAT && s && v != floor(v)) bad = 1;
        if (o->type == PE_OPT_CHOICE && s) {
            int n = 0;
            while (o->choices[n]) n++;
            if (bad || v < 0 || v >= n) {  // a choice is stored as its index: one of 0..n-1
                size_t k = (size_t)snprintf(err, errlen, "--%s: choice %g is none of its %d (", o->name, v, n);
                for (int c = 0; c < n && k < errlen; c++)
                    k += (size_t)snprintf(err + k, errlen - k, "%s%d = %s", c ? ", " : "", c, o->choices[c]);
                if (k < errlen) snprintf(err + k, errlen - k, ")");
                return 0;
            }
        }
        if (bad) {
            snprintf(err, errlen, "--%s %g: must be between %g and %g", o->name, v, o->lo, o->hi);
            return 0;
        }
        pe->opt[k] = v;
    }
    if (ops->causal_only && !cfg->causal) {
        snprintf(err, errlen, "--pe %s is causal only (see --list-pe); use --attn causal", ops->name);
        return 0;
    }
    return !ops->check || ops->check(pe, err, errlen);
}
