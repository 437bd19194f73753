// plot.h — line plots of "series,x,y" CSV data as PNG, with log-scaled axes,
// a legend, axis labels and a title. scripts/plot.c is its command line.
#ifndef PELAB_PLOT_H
#define PELAB_PLOT_H

#include <stddef.h>

typedef struct {
    const char *title, *xlabel, *ylabel;
    int logx, logy;
    int width, height;
    int panels;  // small multiples: series named "panel|series", one chart per panel
} plot_opts;

// Reads csv_path (lines "series,x,y", or "series,x,y,lo,hi" for a line with
// a shaded band from lo to hi; a first line whose x is not a number is a
// header; blank lines and lines starting with # are skipped) and writes
// png_path. Returns 0, or -1 with err naming the file and line.
int plot_csv(const char *csv_path, const char *png_path, const plot_opts *o, char *err, size_t errlen);

#endif
