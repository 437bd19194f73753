// config.c — see config.h.
#include "config.h"

#include <string.h>

const pe_setting *config_setting(const model_config *c, const char *name) {
    for (int i = 0; i < c->n_settings; i++)
        if (strcmp(c->settings[i].name, name) == 0) return &c->settings[i];
    return NULL;
}

int config_set(model_config *c, const char *name, double value) {
    pe_setting *s = (pe_setting *)config_setting(c, name);
    if (!s) {
        if (c->n_settings == PE_MAX_SETTINGS || strlen(name) >= sizeof s->name) return 0;
        s = &c->settings[c->n_settings++];
        snprintf(s->name, sizeof s->name, "%s", name);
    }
    s->value = value;
    return 1;
}

void config_unset(model_config *c, const char *name) {
    for (int i = 0; i < c->n_settings; i++)
        if (strcmp(c->settings[i].name, name) == 0) {
            c->settings[i] = c->settings[--c->n_settings];
            return;
        }
}
