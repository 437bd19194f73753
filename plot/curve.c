// curve.c — see curve.h.
#include "curve.h"

#include <math.h>
#include <stdio.h>

#include "canvas.h"

#define W 720
#define H 420
#define LEFT 70
#define RIGHT 20
#define TOP 44
#define BOTTOM 56
#define FONT 2

static const rgb WHITE = {255, 255, 255}, BLACK = {0, 0, 0}, GREY = {200, 200, 200}, TRAIN = {120, 120, 200},
                 VAL = {200, 60, 40};

typedef struct {
    double x0, x1, y0, y1;
} box;

static int px(const box *b, double x) { return LEFT + (int)lround((x - b->x0) / (b->x1 - b->x0) * (W - LEFT - RIGHT)); }
static int py(const box *b, double y) { return TOP + (int)lround((b->y1 - y) / (b->y1 - b->y0) * (H - TOP - BOTTOM)); }

// One series as a polyline through its finite points.
static void series(canvas *c, const box *b, const double *x, const double *y, int n, rgb col) {
    int have = 0, lx = 0, ly = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(y[i])) continue;
        int X = px(b, x[i]), Y = py(b, y[i]);
        if (have) canvas_line(c, lx, ly, X, Y, col, 2);
        else canvas_rect(c, X - 1, Y - 1, 3, 3, col);
        lx = X, ly = Y, have = 1;
    }
}

int plot_curve_png(const double *step, const double *train, const double *val, int n, const char *title,
                   const char *path, char *err, size_t errlen) {
    box b = {step[0], step[n - 1], INFINITY, -INFINITY};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            double v = k ? val[i] : train[i];
            if (isfinite(v)) b.y0 = v < b.y0 ? v : b.y0, b.y1 = v > b.y1 ? v : b.y1;
        }
    if (!(b.y1 >= b.y0)) b.y0 = 0, b.y1 = 1;
    double pad = (b.y1 - b.y0) * 0.05 + 1e-3;
    b.y0 -= pad, b.y1 += pad;
    if (b.x1 <= b.x0) b.x0 -= 1, b.x1 += 1;
    canvas c;
    canvas_init(&c, W, H, WHITE);
    canvas_text(&c, LEFT, 10, title, FONT, BLACK);
    char label[64];
    for (int k = 0; k <= 4; k++) {  // horizontal grid with its losses
        double y = b.y0 + (b.y1 - b.y0) * k / 4;
        canvas_line(&c, LEFT, py(&b, y), W - RIGHT, py(&b, y), GREY, 1);
        snprintf(label, sizeof label, "%.3f", y);
        canvas_text(&c, LEFT - 6 - canvas_text_width(label, FONT), py(&b, y) - canvas_text_height(FONT) / 2, label, FONT, BLACK);
    }
    for (int k = 0; k <= 4; k++) {  // the steps
        double x = b.x0 + (b.x1 - b.x0) * k / 4;
        snprintf(label, sizeof label, "%.0f", x);
        canvas_text(&c, px(&b, x) - canvas_text_width(label, FONT) / 2, H - BOTTOM + 6, label, FONT, BLACK);
    }
    canvas_line(&c, LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, BLACK, 1);
    canvas_line(&c, LEFT, TOP, LEFT, H - BOTTOM, BLACK, 1);
    const char *xl = "step";
    canvas_text(&c, (W - canvas_text_width(xl, FONT)) / 2, H - BOTTOM + 10 + canvas_text_height(FONT), xl, FONT, BLACK);
    canvas_text_up(&c, 8, TOP + (H - TOP - BOTTOM) / 2 + canvas_text_width("loss (nats/token)", FONT) / 2,
                   "loss (nats/token)", FONT, BLACK);
    series(&c, &b, step, train, n, TRAIN);
    series(&c, &b, step, val, n, VAL);
    int lx = W - RIGHT - 230, ly = TOP + 8;  // the legend
    canvas_rect(&c, lx, ly + 6, 24, 3, TRAIN);
    canvas_text(&c, lx + 30, ly, "training (that step)", FONT, BLACK);
    canvas_rect(&c, lx, ly + 6 + 22, 24, 3, VAL);
    canvas_text(&c, lx + 30, ly + 22, "validation (held out)", FONT, BLACK);
    int rc = canvas_save_png(&c, path, "the curve picture", err, errlen);
    canvas_free(&c);
    return rc;
}
