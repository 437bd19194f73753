// heatmap.h — a grid of values in [0, 1] (e.g. accuracy: rows encodings,
// columns tasks) as a PNG, each cell shaded and labelled with its value.
#ifndef PELAB_HEATMAP_H
#define PELAB_HEATMAP_H

#include <stddef.h>

// Reads csv_path, lines "row,column,value" (value in [0, 1], or empty for a
// cell that has none, drawn as "—"; a first line whose value is not a
// number is a header), rows and columns in the order they first appear, and
// writes png_path. Returns 0, or -1 with err naming the file and line.
int heatmap_csv(const char *csv_path, const char *png_path, const char *title, char *err, size_t errlen);

#endif
