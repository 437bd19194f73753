// canvas.c — see canvas.h.
#include "canvas.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-braces"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_easy_font.h>
#pragma GCC diagnostic pop
#include <stb_image_write.h>
#include <stb_truetype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/common.h"
#include "../core/files.h"

void canvas_init(canvas *c, int w, int h, rgb bg) {
    c->w = w, c->h = h;
    c->px = xmalloc((size_t)w * h * 3);
    for (size_t i = 0; i < (size_t)w * h; i++) c->px[3 * i] = bg.r, c->px[3 * i + 1] = bg.g, c->px[3 * i + 2] = bg.b;
}

void canvas_free(canvas *c) {
    free(c->px);
    c->px = NULL;
}

static inline void put(canvas *c, int x, int y, rgb col) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    uint8_t *p = c->px + ((size_t)y * c->w + x) * 3;
    p[0] = col.r, p[1] = col.g, p[2] = col.b;
}

void canvas_rect(canvas *c, int x, int y, int w, int h, rgb col) {
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++) put(c, i, j, col);
}

void canvas_line(canvas *c, int x0, int y0, int x1, int y1, rgb col, int thick) {
    int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
    for (;;) {
        canvas_rect(c, x0 - thick / 2, y0 - thick / 2, thick, thick, col);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * err;
        if (e2 >= dy) err += dy, x0 += sx;
        if (e2 <= dx) err += dx, y0 += sy;
    }
}

// ---- text in a real font (stb_truetype), when one is installed ----

#define DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  // Debian's fonts-dejavu-core

static struct {
    int tried, ok;
    unsigned char *data;  // the font file, kept for the process's life
    stbtt_fontinfo info;
} font;

#define FONT_MAX_BYTES (64L << 20)
#define GLYPH_MAX_PIXELS (1L << 20)  // a glyph's bitmap box at most; a font that asks for more is not drawn
#define FONT_PROBE_SECONDS 20
#define FONT_PROBE_SCALES 4          // the text scales the pictures use are 1 and 2; a margin

// The font file's bytes, when it is a regular file of a sane size: a FIFO
// or a device would block or never end, so it is opened non-blocking and
// checked before any read. NULL and a reason otherwise.
static unsigned char *read_font_file(const char *path, long *size, const char **why) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return *why = strerror(errno), NULL;
    struct stat sb;
    unsigned char *data = NULL;
    if (fstat(fd, &sb) != 0) *why = strerror(errno);
    else if (!S_ISREG(sb.st_mode)) *why = "not a regular file";
    else if (sb.st_size <= 0 || sb.st_size > FONT_MAX_BYTES) *why = "empty, or larger than 64 MiB";
    else {
        data = xmalloc((size_t)sb.st_size);
        size_t got = 0;
        for (ssize_t k; got < (size_t)sb.st_size; got += (size_t)k)
            if ((k = read(fd, data + got, (size_t)sb.st_size - got)) <= 0) break;
        if (got != (size_t)sb.st_size) *why = "cannot be read whole", free(data), data = NULL;
        *size = (long)sb.st_size;
    }
    close(fd);
    return data;
}

// Every call the text makes of the font (metrics, bitmap boxes, bitmaps,
// kerning), for every ASCII glyph at every text scale.
static void font_exercise(void);

// stb_truetype trusts its input: a damaged or hostile font file can make it
// read out of bounds or loop. So the font is first exercised in a child
// process (with a time limit); only a font that came through whole is used,
// and since the drawing makes the same calls on the same bytes, the run's
// own process never meets a font that crashed. A sanitizer build's child
// stops at its first out-of-bounds read, so there even a quiet one counts.
static uint32_t be(const unsigned char *p, int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

// The font at its offset, once its table directory is inside the file and
// every table it lists too (a truncated file fails here, deterministically;
// stb_truetype would read past the end). 1 when stb_truetype took it.
static int font_open(long size) {
    if (size < 12) return 0;  // shorter than an sfnt header
    int at = stbtt_GetFontOffsetForIndex(font.data, 0);
    if (at < 0 || at > size - 12) return 0;
    long tables = (long)be(font.data + at + 4, 2);
    if (at + 12 + 16 * tables > size) return 0;
    for (long i = 0; i < tables; i++) {
        const unsigned char *rec = font.data + at + 12 + 16 * i;
        if ((uint64_t)be(rec + 8, 4) + be(rec + 12, 4) > (uint64_t)size) return 0;
    }
    return stbtt_InitFont(&font.info, font.data, at);
}

static int font_survives(long size) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        sigset_t all;
        sigemptyset(&all);
        sigaddset(&all, SIGALRM);
        pthread_sigmask(SIG_UNBLOCK, &all, NULL);
        signal(SIGALRM, SIG_DFL);
        alarm(FONT_PROBE_SECONDS);
        if (!font_open(size)) _exit(1);
        font_exercise();
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Loads PELAB_FONT or DejaVu Sans once; 0 when neither is there or usable
// (the built-in pixel font is used then; a PELAB_FONT that cannot be used
// says why, once).
static int font_ready(void) {
    if (font.tried) return font.ok;
    font.tried = 1;
    const char *path = getenv("PELAB_FONT"), *why = NULL;
    int asked = path && *path;
    if (!asked) path = DEFAULT_FONT;
    long size = 0;
    font.data = read_font_file(path, &size, &why);
    if (font.data) {
        if (!font_survives(size)) why = "not a TrueType font pelab can draw with (reading its glyphs failed)";
        else font.ok = font_open(size);  // what the child did, so it does not fail
    }
    if (!font.ok) {
        free(font.data);
        font.data = NULL;
        if (asked || strcmp(why, strerror(ENOENT)) != 0)  // no DejaVu installed: the documented fallback, quietly
            warn_msg("font '%s': %s; the pictures' text uses the built-in pixel font", path, why);
    }
    return font.ok;
}

int canvas_has_font(void) { return font_ready(); }

// Pixel height of the real font at a text scale (the pixel font is 7·scale
// tall with its descenders; this matches its look).
static float font_px(int scale) { return 8.5f * (float)scale; }

static void blend(canvas *c, int x, int y, rgb col, int a) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h || a <= 0) return;
    uint8_t *p = c->px + ((size_t)y * c->w + x) * 3;
    p[0] = (uint8_t)((p[0] * (255 - a) + col.r * a) / 255);
    p[1] = (uint8_t)((p[1] * (255 - a) + col.g * a) / 255);
    p[2] = (uint8_t)((p[2] * (255 - a) + col.b * a) / 255);
}

void canvas_vspan_blend(canvas *c, int x, int y0, int y1, rgb col, int alpha) {
    if (y0 > y1) {
        int t = y0;
        y0 = y1, y1 = t;
    }
    for (int y = y0; y <= y1; y++) blend(c, x, y, col, alpha);
}

// Glyph by glyph, antialiased; upright with the top-left at (x, y), or
// turned a quarter turn counter-clockwise (reading upwards) from (x, y).
static int ttf_text(canvas *c, int x, int y, const char *s, int scale, rgb col, int up, int draw) {
    float sc = stbtt_ScaleForPixelHeight(&font.info, font_px(scale)), pen = 0;
    int ascent, descent, gap;
    stbtt_GetFontVMetrics(&font.info, &ascent, &descent, &gap);
    int base = (int)(ascent * sc + 0.5f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int cp = *p < 0x80 ? *p : '?';  // labels are ASCII; anything else shows as '?'
        int adv, lsb;
        stbtt_GetCodepointHMetrics(&font.info, cp, &adv, &lsb);
        if (draw) {
            int x0, y0, x1, y1;
            stbtt_GetCodepointBitmapBox(&font.info, cp, sc, sc, &x0, &y0, &x1, &y1);
            int w = x1 - x0, h = y1 - y0;
            if (w > 0 && h > 0 && (long)w * h <= GLYPH_MAX_PIXELS) {
                unsigned char *bm = xmalloc((size_t)w * h);
                stbtt_MakeCodepointBitmap(&font.info, bm, w, h, w, sc, sc, cp);
                for (int j = 0; j < h; j++)
                    for (int i = 0; i < w; i++) {
                        int gx = (int)pen + x0 + i, gy = base + y0 + j;
                        if (!up) blend(c, x + gx, y + gy, col, bm[j * w + i]);
                        else blend(c, x + gy, y - gx, col, bm[j * w + i]);
                    }
                free(bm);
            }
        }
        pen += adv * sc;
        if (p[1]) pen += stbtt_GetCodepointKernAdvance(&font.info, cp, p[1] < 0x80 ? p[1] : '?') * sc;
    }
    return (int)(pen + 0.5f);
}

static void font_exercise(void) {
    static char ascii[96];
    for (int i = 0; i < 95; i++) ascii[i] = (char)(32 + i);
    for (int scale = 1; scale <= FONT_PROBE_SCALES; scale++) {
        canvas c = {.w = 0, .h = 0, .px = NULL};  // blend() clips every pixel: nothing is drawn, every call is made
        for (int i = 0; i < 95; i++) {
            char pair[3] = {ascii[i], 0, 0};
            for (int j = 0; j < 95; j++) {  // each glyph followed by each (kerning)
                pair[1] = ascii[j];
                ttf_text(&c, 0, 0, pair, scale, (rgb){0, 0, 0}, 0, j == 0);
            }
        }
    }
}

// stb_easy_font emits axis-aligned quads (4 vertices of 16 bytes: x, y, z
// floats and a colour) in font pixels; each is filled at the given scale,
// either upright or turned a quarter turn counter-clockwise.
static void draw_text(canvas *c, int x, int y, const char *s, int scale, rgb col, int up) {
    static char buf[65536];
    int quads = stb_easy_font_print(0, 0, (char *)s, NULL, buf, sizeof buf);
    for (int q = 0; q < quads; q++) {
        const float *v0 = (const float *)(buf + q * 64), *v2 = (const float *)(buf + q * 64 + 32);
        int qx = (int)v0[0], qy = (int)v0[1], qw = (int)(v2[0] - v0[0]), qh = (int)(v2[1] - v0[1]);
        if (!up) canvas_rect(c, x + qx * scale, y + qy * scale, qw * scale, qh * scale, col);
        else canvas_rect(c, x + qy * scale, y - (qx + qw) * scale, qh * scale, qw * scale, col);
    }
}

void canvas_text(canvas *c, int x, int y, const char *s, int scale, rgb col) {
    if (font_ready()) ttf_text(c, x, y, s, scale, col, 0, 1);
    else draw_text(c, x, y, s, scale, col, 0);
}

void canvas_text_up(canvas *c, int x, int y, const char *s, int scale, rgb col) {
    if (font_ready()) ttf_text(c, x, y, s, scale, col, 1, 1);
    else draw_text(c, x, y, s, scale, col, 1);
}

int canvas_text_width(const char *s, int scale) {
    if (font_ready()) return ttf_text(NULL, 0, 0, s, scale, (rgb){0, 0, 0}, 0, 0);
    return stb_easy_font_width((char *)s) * scale;
}

int canvas_text_height(int scale) { return font_ready() ? (int)(font_px(scale) + 0.5f) : 7 * scale; }

static void write_to_file(void *context, void *data, int size) {
    FILE *f = context;
    fwrite(data, 1, (size_t)size, f);  // a short write shows in ferror, which atomic_commit checks
}

int canvas_save_png(const canvas *c, const char *path, const char *what, char *err, size_t errlen) {
    atomic_file af;
    if (atomic_open(&af, path, what, err, errlen) != 0) return -1;
    if (!stbi_write_png_to_func(write_to_file, af.f, c->w, c->h, 3, c->px, c->w * 3)) {
        snprintf(err, errlen, "cannot write %s '%s': the PNG encoder failed", what, path);
        atomic_abort(&af);
        return -1;
    }
    return atomic_commit(&af, what, err, errlen);
}
