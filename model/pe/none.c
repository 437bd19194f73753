// none.c — NoPE: no position information at all. Causal attention still
// lets a model infer positions (Kazemnejad et al. 2023); bidirectional
// attention without positions is permutation-equivariant (tests/ checks it).
#include "pe.h"

const pe_ops pe_none_ops = {
    .name = "none",
    .summary = "no position information (NoPE)",
};
