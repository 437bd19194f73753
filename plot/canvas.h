// canvas.h — a small RGB raster with filled rectangles, lines and
// stb_easy_font text, saved as PNG through stb_image_write. Used by the
// attention pictures and the plotting helper.
#ifndef PELAB_CANVAS_H
#define PELAB_CANVAS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int w, h;
    uint8_t *px;  // (h, w, 3)
} canvas;

typedef struct {
    uint8_t r, g, b;
} rgb;

void canvas_init(canvas *c, int w, int h, rgb background);
void canvas_free(canvas *c);
void canvas_rect(canvas *c, int x, int y, int w, int h, rgb col);
void canvas_line(canvas *c, int x0, int y0, int x1, int y1, rgb col, int thick);
// Text with its top-left corner at (x, y), each font pixel scale×scale.
void canvas_text(canvas *c, int x, int y, const char *s, int scale, rgb col);
// Text reading bottom to top, its baseline's left end at (x, y).
void canvas_text_up(canvas *c, int x, int y, const char *s, int scale, rgb col);
int canvas_text_width(const char *s, int scale);
int canvas_text_height(int scale);
// Returns 0, or -1 with errno from the write.
// Writes the PNG whole or not at all (core/files.h); 0, or -1 with a message
// naming `what` (e.g. "--attn-png").
int canvas_save_png(const canvas *c, const char *path, const char *what, char *err, size_t errlen);

#endif
