// curve.h — one run's learning curve as a PNG: the training loss (of the
// step at each point) and the validation loss against the step, the picture
// a run folder keeps as curve.png.
#ifndef PELAB_CURVE_H
#define PELAB_CURVE_H

#include <stddef.h>

// n ≥ 1 points (step ascending; a loss that is not finite is left out).
// 0, or -1 with err filled (the file is written whole or not at all).
int plot_curve_png(const double *step, const double *train, const double *val, int n, const char *title,
                   const char *path, char *err, size_t errlen);

#endif
