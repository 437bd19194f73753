// viz.c — see viz.h.
#include "viz.h"

#include <errno.h>
#include <string.h>

#include "../plot/canvas.h"

#define CELL 18
#define FONT 2

static const rgb WHITE = {255, 255, 255}, BLACK = {20, 20, 20}, GREY = {150, 150, 150};

// White (0) to dark blue (1).
static rgb heat(float a) {
    a = a < 0 ? 0 : a > 1 ? 1 : a;
    return (rgb){(uint8_t)(255 - 235 * a), (uint8_t)(255 - 205 * a), (uint8_t)(255 - 115 * a)};
}

// The tokens the model sees for a probe example: causal stops before the
// answer (the last row predicts it); bidir masks the answer slot.
static int probe_input(const data_t *d, const cats_example *ex, int *tok) {
    int n = d->causal ? ex->answer_pos : ex->len;
    for (int t = 0; t < n; t++) tok[t] = ex->tokens[t];
    if (!d->causal) tok[ex->answer_pos] = d->mask_token;
    return n;
}

static void draw_sentence(canvas *cv, model_t *m, const data_t *d, const cats_example *ex, int y0, int label_w) {
    int tok[CATS_MAX_EXAMPLE], seg[CATS_MAX_EXAMPLE];
    int T = probe_input(d, ex, tok);
    memset(seg, 0, sizeof seg);
    model_acts a;
    int fused = m->attn_fused;
    m->attn_fused = 0;  // the picture needs the (T, T) weights the fused kernel does not keep
    model_acts_alloc(&a, m, 1, T, 1);
    m->attn_fused = fused;
    model_draw_positions(m, &a, 0x5EEDE7A1ULL, 0);  // --rand-pos: one draw for the picture
    model_forward(m, &a, tok, NULL, seg);
    int L = m->cfg.layers, H = m->cfg.heads, panel = T * CELL;
    int gap = 24, head_h = canvas_text_height(FONT) + 8;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            int px = label_w + h * (panel + gap), py = y0 + head_h + l * (panel + label_w + head_h);
            char title[64];
            snprintf(title, sizeof title, "layer %d head %d", l + 1, h + 1);
            canvas_text(cv, px, py - head_h + 2, title, FONT, BLACK);
            const float *att = a.att + (((size_t)l * H + h) * T) * T;
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++) canvas_rect(cv, px + j * CELL, py + i * CELL, CELL - 1, CELL - 1, heat(att[(size_t)i * T + j]));
            for (int t = 0; t < T; t++) {
                const char *w = cats_word(tok[t]);
                if (h == 0) canvas_text(cv, px - canvas_text_width(w, FONT) - 6, py + t * CELL + 3, w, FONT, BLACK);
                canvas_text_up(cv, px + t * CELL + 3, py + panel + 6 + canvas_text_width(w, FONT), w, FONT, BLACK);
            }
        }
    model_acts_free(&a);
}

// The picture's layout, shared by the drawing and viz_attention_size.
typedef struct {
    int T, panel, gap, label_w, head_h, block_h, title_h, W, H;
} layout;

static layout attention_layout(const model_t *m, const data_t *d, const cats_example *ex) {
    layout g;
    g.T = d->causal ? ex->answer_pos : ex->len;
    g.panel = g.T * CELL, g.gap = 24;
    g.label_w = canvas_text_width("chases", FONT) + 16, g.head_h = canvas_text_height(FONT) + 8;
    g.block_h = m->cfg.layers * (g.panel + g.label_w + g.head_h), g.title_h = 3 * canvas_text_height(FONT) + 24;
    g.W = g.label_w + m->cfg.heads * (g.panel + g.gap), g.H = g.title_h + 2 * (g.block_h + g.title_h);
    return g;
}

void viz_attention_size(const model_t *m, const data_t *d, int *w, int *h) {
    cats_example probe[CATS_PROBE_MAX];
    cats_probe(d, probe);
    layout g = attention_layout(m, d, &probe[0]);
    *w = g.W, *h = g.H;
}

int viz_attention_png(model_t *m, const data_t *d, const char *path, char *err, size_t errlen) {
    if (!data_has(d, CORPUS_ORDER_PROBE)) {
        snprintf(err, errlen, "--attn-png draws a cats probe sentence; use --data cats");
        return -1;
    }
    cats_example probe[CATS_PROBE_MAX];
    cats_probe(d, probe);
    const cats_example *pair[2] = {&probe[0], &probe[1]};  // one held-out triple, both orders
    layout g = attention_layout(m, d, pair[0]);
    int label_w = g.label_w, block_h = g.block_h, title_h = g.title_h, W = g.W, Hpx = g.H;
    canvas cv;
    canvas_init(&cv, W, Hpx, WHITE);
    char title[256];
    snprintf(title, sizeof title, "attention weights, pe=%s, %s (rows: queries, columns: keys)", m->cfg.pe,
             m->cfg.causal ? "causal" : "bidirectional");
    canvas_text(&cv, 8, 8, title, FONT, BLACK);
    for (int k = 0; k < 2; k++) {
        int y = title_h + k * (block_h + title_h);
        char sent[256] = "";
        for (int t = 0; t < pair[k]->len; t++) {
            strcat(sent, t == pair[k]->answer_pos ? "[" : "");
            strcat(sent, cats_word(pair[k]->tokens[t]));
            strcat(sent, t == pair[k]->answer_pos ? "] " : " ");
        }
        snprintf(title, sizeof title, "%s order: %.200s", k ? "swapped" : "first", sent);  // a sentence is far shorter
        canvas_text(&cv, 8, y - canvas_text_height(FONT) - 10, title, FONT, k ? GREY : BLACK);
        draw_sentence(&cv, m, d, pair[k], y, label_w);
    }
    int rc = canvas_save_png(&cv, path, "--attn-png", err, errlen);
    canvas_free(&cv);
    return rc;
}
