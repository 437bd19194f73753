// plot.c — see plot.h.
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canvas.h"
#include "../core/common.h"

#define MAX_SERIES 24
#define MAX_POINTS 4096

typedef struct {
    char name[48];
    int n;
    double x[64], y[64];
} series;

static const rgb palette[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}, {148, 103, 189},
                              {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207},
                              {0, 0, 0},      {120, 60, 0}};

static int parse_number(const char *s, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
    return end != s && !*end && !errno && isfinite(*v);
}

static int fail(char *err, size_t errlen, const char *fmt, const char *a, int line, const char *b) {
    snprintf(err, errlen, fmt, a, line, b);
    return -1;
}

static int read_series(const char *path, series *s, int *ns, int logx, int logy, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    int lineno = 0, points = 0;
    *ns = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!c1 || !c2 || strchr(c2 + 1, ',')) {
            fclose(f);
            return fail(err, errlen, "%s:%d: expected 'series,x,y', got '%s'", path, lineno, line);
        }
        *c1 = *c2 = 0;
        double x, y;
        if (!parse_number(c1 + 1, &x) || !parse_number(c2 + 1, &y)) {
            if (lineno == 1 && !points) continue;  // a header
            fclose(f);
            return fail(err, errlen, "%s:%d: x and y must be finite numbers ('%s')", path, lineno, c1 + 1);
        }
        if ((logx && x <= 0) || (logy && y <= 0)) {
            fclose(f);
            return fail(err, errlen, "%s:%d: %s must be positive on a log axis", path, lineno, logx && x <= 0 ? "x" : "y");
        }
        int k = 0;
        while (k < *ns && strcmp(s[k].name, line) != 0) k++;
        if (k == *ns) {
            if (*ns == MAX_SERIES) {
                fclose(f);
                return fail(err, errlen, "%s:%d: more than 24 series ('%s')", path, lineno, line);
            }
            snprintf(s[k].name, sizeof s[k].name, "%.47s", line);
            s[k].n = 0;
            (*ns)++;
        }
        if (s[k].n == 64) {
            fclose(f);
            return fail(err, errlen, "%s:%d: more than 64 points in series '%s'", path, lineno, line);
        }
        s[k].x[s[k].n] = x, s[k].y[s[k].n] = y, s[k].n++;
        points++;
    }
    fclose(f);
    if (!points) {
        snprintf(err, errlen, "'%s' has no data rows (expected lines 'series,x,y')", path);
        return -1;
    }
    return 0;
}

typedef struct {
    double lo, hi;
    int log;
    int p0, p1;  // pixel range
} axis;

static double to_px(const axis *a, double v) {
    double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : (v - a->lo) / (a->hi - a->lo);
    return a->p0 + t * (a->p1 - a->p0);
}

static void fmt_tick(double v, char *buf, size_t n) {
    if (fabs(v) >= 1e5 || (fabs(v) < 1e-2 && v != 0)) snprintf(buf, n, "%.0e", v);
    else if (fabs(v - round(v)) < 1e-9) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%g", v);
}

// Tick values: on a log axis 1, 2, 5 × 10^k (only powers of ten when the
// range spans more than three decades); on a linear axis, or a log axis
// spanning less than a factor of 5, a 1-2-5 step.
static int ticks(const axis *a, double *t, int max) {
    int n = 0;
    if (a->log && a->hi / a->lo > 5) {
        double span = log10(a->hi) - log10(a->lo);
        const double mult[3] = {1, 2, 5};
        int nm = span > 3 ? 1 : 3;
        for (int k = (int)floor(log10(a->lo)); k <= (int)ceil(log10(a->hi)) && n < max; k++)
            for (int j = 0; j < nm && n < max; j++) {
                double v = mult[j] * pow(10, k);
                if (v >= a->lo * 0.999 && v <= a->hi * 1.001) t[n++] = v;
            }
        return n;
    }
    double raw = (a->hi - a->lo) / 6, p = pow(10, floor(log10(raw))), step = p;
    if (raw / p > 5) step = 10 * p;
    else if (raw / p > 2) step = 5 * p;
    else if (raw / p > 1) step = 2 * p;
    for (double v = ceil(a->lo / step) * step; v <= a->hi + 1e-9 * step && n < max; v += step) t[n++] = v;
    return n;
}

static void fit_axis(axis *a, double lo, double hi) {
    if (a->log) {
        double pad = pow(hi / lo, 0.04);
        if (hi / lo < 1.0001) pad = 1.5;
        a->lo = lo / pad, a->hi = hi * pad;
    } else {
        double pad = (hi - lo) * 0.05;
        if (pad <= 0) pad = fabs(hi) > 0 ? fabs(hi) * 0.1 : 1;
        a->lo = lo - pad, a->hi = hi + pad;
    }
}

int plot_csv(const char *csv_path, const char *png_path, const plot_opts *o, char *err, size_t errlen) {
    static series s[MAX_SERIES];
    int ns;
    if (read_series(csv_path, s, &ns, o->logx, o->logy, err, errlen) != 0) return -1;
    int W = o->width > 0 ? o->width : 1000, H = o->height > 0 ? o->height : 640;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    int legend_w = 0;
    for (int k = 0; k < ns; k++) {
        for (int i = 0; i < s[k].n; i++) {
            xlo = fmin(xlo, s[k].x[i]), xhi = fmax(xhi, s[k].x[i]);
            ylo = fmin(ylo, s[k].y[i]), yhi = fmax(yhi, s[k].y[i]);
        }
        int w = canvas_text_width(s[k].name, 2);
        legend_w = w > legend_w ? w : legend_w;
    }
    legend_w += 50;
    axis ax = {0, 0, o->logx, 90, W - legend_w - 30}, ay = {0, 0, o->logy, H - 80, 60};
    fit_axis(&ax, xlo, xhi);
    fit_axis(&ay, ylo, yhi);
    const rgb white = {255, 255, 255}, black = {0, 0, 0}, grid = {225, 225, 225};
    canvas c;
    canvas_init(&c, W, H, white);
    double tv[64];
    char buf[32];
    int nt = ticks(&ax, tv, 64);
    // on a log x axis with few distinct x values (context lengths), label those
    double xs[64];
    int nx = 0;
    for (int k = 0; k < ns && nx < 64; k++)
        for (int i = 0; i < s[k].n && nx < 64; i++) {
            int seen = 0;
            for (int j = 0; j < nx; j++) seen |= xs[j] == s[k].x[i];
            if (!seen) xs[nx++] = s[k].x[i];
        }
    if (o->logx && nx <= 12) {
        memcpy(tv, xs, sizeof(double) * nx);
        nt = nx;
    }
    for (int i = 0; i < nt; i++) {
        int px = (int)to_px(&ax, tv[i]);
        canvas_rect(&c, px, ay.p1, 1, ay.p0 - ay.p1, grid);
        fmt_tick(tv[i], buf, sizeof buf);
        canvas_text(&c, px - canvas_text_width(buf, 2) / 2, ay.p0 + 8, buf, 2, black);
    }
    nt = ticks(&ay, tv, 64);
    for (int i = 0; i < nt; i++) {
        int py = (int)to_px(&ay, tv[i]);
        canvas_rect(&c, ax.p0, py, ax.p1 - ax.p0, 1, grid);
        fmt_tick(tv[i], buf, sizeof buf);
        canvas_text(&c, ax.p0 - canvas_text_width(buf, 2) - 8, py - 6, buf, 2, black);
    }
    canvas_rect(&c, ax.p0, ay.p1, 2, ay.p0 - ay.p1, black);
    canvas_rect(&c, ax.p0, ay.p0, ax.p1 - ax.p0, 2, black);
    for (int k = 0; k < ns; k++) {
        rgb col = palette[k % (sizeof palette / sizeof palette[0])];
        for (int i = 0; i < s[k].n; i++) {
            int px = (int)to_px(&ax, s[k].x[i]), py = (int)to_px(&ay, s[k].y[i]);
            if (i) canvas_line(&c, (int)to_px(&ax, s[k].x[i - 1]), (int)to_px(&ay, s[k].y[i - 1]), px, py, col, 2);
            canvas_rect(&c, px - 3, py - 3, 7, 7, col);
        }
        int ly = ay.p1 + 10 + 22 * k, lx = ax.p1 + 24;
        canvas_rect(&c, lx, ly + 5, 24, 4, col);
        canvas_text(&c, lx + 32, ly, s[k].name, 2, black);
    }
    if (o->title) canvas_text(&c, (W - canvas_text_width(o->title, 3)) / 2, 16, o->title, 3, black);
    if (o->xlabel) canvas_text(&c, (ax.p0 + ax.p1 - canvas_text_width(o->xlabel, 2)) / 2, H - 40, o->xlabel, 2, black);
    if (o->ylabel) canvas_text_up(&c, 16, (ay.p0 + ay.p1 + canvas_text_width(o->ylabel, 2)) / 2, o->ylabel, 2, black);
    int rc = canvas_save_png(&c, png_path, "the picture", err, errlen);
    canvas_free(&c);
    return rc;
}
