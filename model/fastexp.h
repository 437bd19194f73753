// fastexp.h — a vectorisable e^x for the elementwise loops.
#ifndef PELAB_FASTEXP_H
#define PELAB_FASTEXP_H

#include <math.h>
#include <stdint.h>

// e^x in plain arithmetic so that the loops vectorise
// (glibc's expf is a call the compiler will not vectorise without
// -ffast-math): 2^(x·log2 e) split into an integer power of two, built in the
// exponent bits, and 2^f for f in [0, 1) by its Taylor series to degree 7
// (relative error below 2e-6). Inputs are clamped to [−87, 88].
static inline float exp_poly(float x) {
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    float t = x * 1.4426950409f;
    float fi = floorf(t), f = t - fi;
    float p = 1.0f + f * (0.69314718f + f * (0.24022651f + f * (0.05550411f + f * (0.00961813f +
              f * (0.00133336f + f * (0.00015403f + f * 0.00001525f))))));
    union {
        int32_t i;
        float f;
    } two = {.i = ((int32_t)fi + 127) << 23};
    return p * two.f;
}

#endif
