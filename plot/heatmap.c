// heatmap.c — see heatmap.h.
#include "heatmap.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canvas.h"

enum { HM_MAX = 48, HM_NAME = 40, CELL_W = 92, CELL_H = 30 };

typedef struct {
    char rows[HM_MAX][HM_NAME], cols[HM_MAX][HM_NAME];
    int nr, nc;
    double v[HM_MAX][HM_MAX];  // NAN: no value
} grid;

static int index_of(char names[][HM_NAME], int *n, const char *s) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(names[i], s)) return i;
    if (*n == HM_MAX) return -1;
    snprintf(names[*n], HM_NAME, "%s", s);
    return (*n)++;
}

static int read_grid(const char *path, grid *g, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) return snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno)), -1;
    char line[256];
    int lineno = 0;
    for (int i = 0; i < HM_MAX; i++)
        for (int j = 0; j < HM_MAX; j++) g->v[i][j] = NAN;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!c2 || strchr(c2 + 1, ',')) {
            fclose(f);
            return snprintf(err, errlen, "%s:%d: expected 'row,column,value', got '%s'", path, lineno, line), -1;
        }
        *c1 = *c2 = 0;
        char *end;
        errno = 0;
        double v = strtod(c2 + 1, &end);
        int empty = !c2[1], number = !empty && end != c2 + 1 && !*end && !errno, ok = number && v >= 0 && v <= 1;
        if (!ok && !empty) {
            if (lineno == 1 && !number) continue;  // a header
            fclose(f);
            return snprintf(err, errlen, "%s:%d: the value must be a number in [0, 1], got '%s'", path, lineno, c2 + 1), -1;
        }
        int r = index_of(g->rows, &g->nr, line), c = index_of(g->cols, &g->nc, c1 + 1);
        if (r < 0 || c < 0) {
            fclose(f);
            return snprintf(err, errlen, "%s:%d: more than %d rows or columns", path, lineno, HM_MAX), -1;
        }
        g->v[r][c] = empty ? NAN : v;
    }
    fclose(f);
    if (!g->nr) return snprintf(err, errlen, "%s: no cells", path), -1;
    return 0;
}

// White at 0 to a deep blue at 1.
static rgb shade(double v) {
    return (rgb){(uint8_t)(255 - 227 * v), (uint8_t)(255 - 175 * v), (uint8_t)(255 - 75 * v)};
}

int heatmap_csv(const char *csv_path, const char *png_path, const char *title, char *err, size_t errlen) {
    static grid g;
    memset(&g, 0, sizeof g);
    if (read_grid(csv_path, &g, err, errlen) != 0) return -1;
    int left = 0, th = canvas_text_height(2);
    for (int r = 0; r < g.nr; r++) {
        int w = canvas_text_width(g.rows[r], 2);
        left = w > left ? w : left;
    }
    left += 24;
    int top = (title ? 2 * th + 16 : 8) + th + 12;
    int W = left + g.nc * CELL_W + 16, H = top + g.nr * CELL_H + 16;
    canvas c;
    canvas_init(&c, W, H, (rgb){255, 255, 255});
    const rgb ink = {20, 20, 20};
    if (title) canvas_text(&c, 12, 8, title, 2, ink);
    for (int j = 0; j < g.nc; j++) {
        int w = canvas_text_width(g.cols[j], 2);
        canvas_text(&c, left + j * CELL_W + (CELL_W - w) / 2, top - th - 6, g.cols[j], 2, ink);
    }
    for (int r = 0; r < g.nr; r++) {
        int y = top + r * CELL_H;
        canvas_text(&c, 12, y + (CELL_H - th) / 2, g.rows[r], 2, ink);
        for (int j = 0; j < g.nc; j++) {
            int x = left + j * CELL_W;
            double v = g.v[r][j];
            canvas_rect(&c, x, y, CELL_W - 2, CELL_H - 2, isnan(v) ? (rgb){235, 235, 235} : shade(v));
            char label[16];
            snprintf(label, sizeof label, isnan(v) ? "-" : "%.2f", v);
            int w = canvas_text_width(label, 2);
            canvas_text(&c, x + (CELL_W - 2 - w) / 2, y + (CELL_H - 2 - th) / 2, label, 2,
                        !isnan(v) && v > 0.55 ? (rgb){255, 255, 255} : ink);
        }
    }
    int rc = canvas_save_png(&c, png_path, "the heatmap", err, errlen);
    canvas_free(&c);
    return rc;
}
