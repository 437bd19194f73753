// canvas.h — a small RGB raster with filled rectangles, lines and text (a
// TrueType font through stb_truetype, or stb_easy_font's pixel font when no
// font is installed), saved as PNG through stb_image_write. Used by the
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
// 1 when text is drawn in a real font (PELAB_FONT, else DejaVu Sans from
// fonts-dejavu-core), 0 when the built-in pixel font stands in.
int canvas_has_font(void);
// Blends col at alpha (0–255) over the pixels of column x from y0 to y1.
void canvas_vspan_blend(canvas *c, int x, int y0, int y1, rgb col, int alpha);
// Writes the PNG whole or not at all (core/files.h); 0, or -1 with a message
// naming `what` (e.g. "--attn-png").
int canvas_save_png(const canvas *c, const char *path, const char *what, char *err, size_t errlen);

#endif
