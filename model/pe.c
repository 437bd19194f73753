// pe.c — the registry of position encodings, and NoPE.
#include "pe.h"

#include <string.h>

// NoPE: no position information at all. Its table is empty; the model skips
// an encoding whose hooks are all NULL.
const pe_ops pe_none_ops = {.name = "none", .absolute = 0};

extern const pe_ops pe_rope_ops, pe_alibi_ops, pe_t5_ops, pe_xl_ops, pe_shaw_ops;

static const pe_ops *const registry[] = {
    &pe_none_ops, &pe_sinusoidal_ops, &pe_learned_ops, &pe_rope_ops,
    &pe_alibi_ops, &pe_t5_ops, &pe_xl_ops, &pe_shaw_ops,
};

const pe_ops *pe_find(const char *name) {
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

const char *pe_names(void) {
    static char buf[128];
    if (!buf[0])
        for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++) {
            if (i) strcat(buf, ", ");
            strcat(buf, registry[i]->name);
        }
    return buf;
}
