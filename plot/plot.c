// plot.c — see plot.h.
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canvas.h"
#include "../core/common.h"

#define MAX_SERIES 128
#define MAX_POINTS 4096

typedef struct {
    char name[48];
    int n;
    double x[64], y[64];
    double lo[64], hi[64];  // the band around y (lines "series,x,y,lo,hi")
    int band;
} series;

static const rgb palette[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}, {148, 103, 189},
                              {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207},
                              {0, 0, 0},      {120, 60, 0},   {174, 199, 232}, {255, 187, 120}, {152, 223, 138},
                              {255, 152, 150}, {197, 176, 213}, {196, 156, 148}, {247, 182, 210}, {219, 219, 141}};

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
        char *field[6];
        int nf = 0;
        field[nf++] = line;
        for (char *p = line; *p && nf < 6; p++)
            if (*p == ',') *p = 0, field[nf++] = p + 1;
        if (nf != 3 && nf != 5) {
            fclose(f);
            return fail(err, errlen, "%s:%d: expected 'series,x,y' or 'series,x,y,lo,hi', got '%s'", path, lineno, line);
        }
        double x, y, lo = 0, hi = 0;
        if (!parse_number(field[1], &x) || !parse_number(field[2], &y) ||
            (nf == 5 && (!parse_number(field[3], &lo) || !parse_number(field[4], &hi)))) {
            if (lineno == 1 && !points) continue;  // a header
            fclose(f);
            return fail(err, errlen, "%s:%d: x, y (and lo, hi) must be finite numbers ('%s')", path, lineno, field[1]);
        }
        if ((logx && x <= 0) || (logy && (y <= 0 || (nf == 5 && lo <= 0)))) {
            fclose(f);
            return fail(err, errlen, "%s:%d: %s must be positive on a log axis", path, lineno, logx && x <= 0 ? "x" : "y");
        }
        int k = 0;
        while (k < *ns && strcmp(s[k].name, line) != 0) k++;
        if (k == *ns) {
            if (*ns == MAX_SERIES) {
                fclose(f);
                return fail(err, errlen, "%s:%d: more than 128 series ('%s')", path, lineno, line);  // MAX_SERIES
            }
            snprintf(s[k].name, sizeof s[k].name, "%.47s", line);
            s[k].n = 0;
            (*ns)++;
        }
        if (s[k].n == 64) {
            fclose(f);
            return fail(err, errlen, "%s:%d: more than 64 points in series '%s'", path, lineno, line);
        }
        s[k].x[s[k].n] = x, s[k].y[s[k].n] = y;
        s[k].lo[s[k].n] = nf == 5 ? lo : y, s[k].hi[s[k].n] = nf == 5 ? hi : y;
        s[k].band |= nf == 5;
        s[k].n++;
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
    if (fabs(v) < 1e-12) v = 0;  // no "-0" from a tick summed up to zero
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

// One chart of series s[0..ns) in the rectangle (X, Y, W, H) of c.
static void draw_chart(canvas *c, int X, int Y, int W, int H, const series *s, int ns, const plot_opts *o, const char *title,
                       int text) {
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    int legend_w = 0;
    for (int k = 0; k < ns; k++) {
        for (int i = 0; i < s[k].n; i++) {
            xlo = fmin(xlo, s[k].x[i]), xhi = fmax(xhi, s[k].x[i]);
            ylo = fmin(ylo, fmin(s[k].y[i], s[k].lo[i])), yhi = fmax(yhi, fmax(s[k].y[i], s[k].hi[i]));
        }
        int w = canvas_text_width(s[k].name, text);
        legend_w = w > legend_w ? w : legend_w;
    }
    legend_w += 50;
    axis ax = {0, 0, o->logx, X + 90, X + W - legend_w - 30}, ay = {0, 0, o->logy, Y + H - 80, Y + 60};
    fit_axis(&ax, xlo, xhi);
    fit_axis(&ay, ylo, yhi);
    const rgb black = {0, 0, 0}, grid = {225, 225, 225};
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
        canvas_rect(c, px, ay.p1, 1, ay.p0 - ay.p1, grid);
        fmt_tick(tv[i], buf, sizeof buf);
        canvas_text(c, px - canvas_text_width(buf, text) / 2, ay.p0 + 8, buf, text, black);
    }
    nt = ticks(&ay, tv, 64);
    for (int i = 0; i < nt; i++) {
        int py = (int)to_px(&ay, tv[i]);
        canvas_rect(c, ax.p0, py, ax.p1 - ax.p0, 1, grid);
        fmt_tick(tv[i], buf, sizeof buf);
        canvas_text(c, ax.p0 - canvas_text_width(buf, text) - 8, py - 6, buf, text, black);
    }
    canvas_rect(c, ax.p0, ay.p1, 2, ay.p0 - ay.p1, black);
    canvas_rect(c, ax.p0, ay.p0, ax.p1 - ax.p0, 2, black);
    // bands first, translucent, so that every line stays visible over them
    for (int k = 0; k < ns; k++) {
        if (!s[k].band) continue;
        rgb col = palette[k % (sizeof palette / sizeof palette[0])];
        for (int i = 1; i < s[k].n; i++) {
            int pa = (int)to_px(&ax, s[k].x[i - 1]), pb = (int)to_px(&ax, s[k].x[i]);
            for (int px = pa; px < pb || (px == pb && i == s[k].n - 1); px++) {  // each column once
                double t = pb > pa ? (double)(px - pa) / (pb - pa) : 0;
                double lo = s[k].lo[i - 1] + t * (s[k].lo[i] - s[k].lo[i - 1]);
                double hi = s[k].hi[i - 1] + t * (s[k].hi[i] - s[k].hi[i - 1]);
                canvas_vspan_blend(c, px, (int)to_px(&ay, lo), (int)to_px(&ay, hi), col, 40);
            }
        }
    }
    for (int k = 0; k < ns; k++) {
        rgb col = palette[k % (sizeof palette / sizeof palette[0])];
        for (int i = 0; i < s[k].n; i++) {
            int px = (int)to_px(&ax, s[k].x[i]), py = (int)to_px(&ay, s[k].y[i]);
            if (i) canvas_line(c, (int)to_px(&ax, s[k].x[i - 1]), (int)to_px(&ay, s[k].y[i - 1]), px, py, col, 2);
            canvas_rect(c, px - 3, py - 3, 7, 7, col);
        }
        int ly = ay.p1 + 10 + 11 * text * k, lx = ax.p1 + 24;
        canvas_rect(c, lx, ly + 5, 24, 4, col);
        canvas_text(c, lx + 32, ly, s[k].name, text, black);
    }
    if (title) canvas_text(c, X + (W - canvas_text_width(title, text + 1)) / 2, Y + 16, title, text + 1, black);
    if (o->xlabel) canvas_text(c, (ax.p0 + ax.p1 - canvas_text_width(o->xlabel, text)) / 2, Y + H - 40, o->xlabel, text, black);
    if (o->ylabel) canvas_text_up(c, X + 16, (ay.p0 + ay.p1 + canvas_text_width(o->ylabel, text)) / 2, o->ylabel, text, black);
}

int plot_csv(const char *csv_path, const char *png_path, const plot_opts *o, char *err, size_t errlen) {
    static series s[MAX_SERIES];
    int ns;
    if (read_series(csv_path, s, &ns, o->logx, o->logy, err, errlen) != 0) return -1;
    const rgb white = {255, 255, 255}, black = {0, 0, 0};
    canvas c;
    if (!o->panels) {
        int W = o->width > 0 ? o->width : 1000, H = o->height > 0 ? o->height : 640;
        canvas_init(&c, W, H, white);
        draw_chart(&c, 0, 0, W, H, s, ns, o, o->title, 2);
    } else {
        // small multiples: series "PANEL|NAME", one chart per PANEL
        static series group[MAX_SERIES];
        char panels[MAX_SERIES][48];
        int np = 0;
        for (int k = 0; k < ns; k++) {
            char *bar = strchr(s[k].name, '|');
            if (!bar) return snprintf(err, errlen, "'%s': with --panels a series is named 'panel|series' ('%s')", csv_path, s[k].name), -1;
            int j = 0;
            while (j < np && strncmp(panels[j], s[k].name, (size_t)(bar - s[k].name)) != 0) j++;
            if (j == np) snprintf(panels[np++], sizeof panels[0], "%.*s", (int)(bar - s[k].name), s[k].name);
        }
        int cols = np <= 1 ? 1 : np <= 4 ? 2 : 3, rows = (np + cols - 1) / cols, PW = 700, PH = 460, top = o->title ? 50 : 0;
        canvas_init(&c, PW * cols, PH * rows + top, white);
        if (o->title) canvas_text(&c, (PW * cols - canvas_text_width(o->title, 3)) / 2, 14, o->title, 3, black);
        for (int j = 0; j < np; j++) {
            int ng = 0;
            size_t len = strlen(panels[j]);
            for (int k = 0; k < ns; k++)
                if (strncmp(s[k].name, panels[j], len) == 0 && s[k].name[len] == '|') {
                    group[ng] = s[k];
                    memmove(group[ng].name, group[ng].name + len + 1, strlen(group[ng].name + len + 1) + 1);
                    ng++;
                }
            draw_chart(&c, (j % cols) * PW, top + (j / cols) * PH, PW, PH, group, ng, o, panels[j], 2);
        }
    }
    int rc = canvas_save_png(&c, png_path, "the picture", err, errlen);
    canvas_free(&c);
    return rc;
}
