// test_data.c — every kind of corpus in the registry (data/corpus.h), each
// from its own example, in both modes: what data.c promises of any corpus.
// A new kind is covered here without an edit.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../data/corpus.h"
#include "test.h"

enum { B = 8, T = 64 };

// Rows hold tokens of the vocabulary and targets that are -1 or tokens (never
// [MASK]), each row at least one target; the same seed gives the same rows
// and the same evaluation windows; the default prompt (if any) is text that
// encodes and decodes.
static int check_kind(const corpus_ops *k, const char *spec, int causal) {
    int fails = 0;
    data_t d, e;
    int vocab;
    size_t bytes;
    char err[512] = "";
    EXPECT(data_describe(spec, causal, &vocab, &bytes, err, sizeof err) == 0, "%s: %s", spec, err);
    test_data_open(&d, spec, causal, 3);
    test_data_open(&e, spec, causal, 3);
    const char *mode = causal ? "causal" : "bidir";
    EXPECT(d.ops == k, "%s (%s): opened as %s", k->name, spec, d.ops->name);
    EXPECT(d.vocab == vocab, "%s %s: data_describe said vocabulary %d, data_open %d", k->name, mode, vocab, d.vocab);
    EXPECT(data_is_path(spec) == k->file, "%s: data_is_path(%s) is %d", k->name, spec, data_is_path(spec));
    EXPECT(!k->file || bytes > 0, "%s: a file of 0 bytes", k->name);
    EXPECT(!data_is_text(&d, d.mask_token), "%s %s: [MASK] counts as text", k->name, mode);
    err[0] = 0;
    EXPECT(data_check_ctx(&d, T, err, sizeof err), "%s %s: ctx %d refused: %s", k->name, mode, T, err);
    static int tok[B * T], tgt[B * T], seg[B * T], tok2[B * T], tgt2[B * T], seg2[B * T];
    for (int round = 0; round < 3; round++) {
        data_next_batch(&d, B, T, tok, tgt, seg);
        data_next_batch(&e, B, T, tok2, tgt2, seg2);
        EXPECT(!memcmp(tok, tok2, sizeof tok) && !memcmp(tgt, tgt2, sizeof tgt) && !memcmp(seg, seg2, sizeof seg),
               "%s %s: the same seed gave other rows", k->name, mode);
        for (int b = 0; b < B; b++) {
            int targets = 0, bad = -1;
            for (int t = 0; t < T && bad < 0; t++) {
                int x = tok[b * T + t], y = tgt[b * T + t];
                if (x < 0 || x >= d.vocab || y < -1 || y >= d.vocab || (y >= 0 && y == d.mask_token)) bad = t;
                targets += y >= 0;
            }
            EXPECT(bad < 0, "%s %s: row %d position %d: token %d target %d (vocabulary %d)", k->name, mode, b, bad,
                   bad < 0 ? 0 : tok[b * T + bad], bad < 0 ? 0 : tgt[b * T + bad], d.vocab);
            EXPECT(targets > 0, "%s %s: row %d has no target", k->name, mode, b);
        }
    }
    size_t w = data_val_windows(&d, T, 4096, err, sizeof err);
    EXPECT(w >= 1, "%s %s: no evaluation window of %d: %s", k->name, mode, T, err);
    if (w >= 1) {
        data_val_row(&d, T, w - 1, tok, tgt, seg);
        data_val_row(&e, T, w - 1, tok2, tgt2, seg2);
        EXPECT(!memcmp(tok, tok2, sizeof(int) * T) && !memcmp(tgt, tgt2, sizeof(int) * T),
               "%s %s: an evaluation window differs between two opens", k->name, mode);
    }
    const char *prompt = data_default_prompt(&d);
    if (prompt) {
        int ids[16];
        int n = data_encode(&d, prompt, ids, 16, err, sizeof err);
        EXPECT(n >= 1, "%s: the default prompt '%s' does not encode: %s", k->name, prompt, err);
        for (int i = 0; i < n; i++) {
            char text[64] = "";
            data_decode(&d, ids[i], text, sizeof text);
            EXPECT(data_is_text(&d, ids[i]) && text[0], "%s: prompt token %d is not text", k->name, ids[i]);
        }
    }
    data_close(&d);
    data_close(&e);
    return fails;
}

static int test_every_corpus_kind(void) {
    int fails = 0;
    char dir[] = "/tmp/pelab-data-XXXXXX";
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp failed");
    for (int i = 0; i < corpus_count(); i++) {
        const corpus_ops *k = corpus_at(i);
        char spec[512];
        EXPECT(k->example && k->example(dir, spec, sizeof spec), "%s: no example", k->name);
        if (!k->example) continue;
        for (int causal = 1; causal >= 0; causal--) fails += check_kind(k, spec, causal);
        if (k->file) unlink(spec);
    }
    rmdir(dir);
    printf("    %d kinds of corpus, each in both modes\n", corpus_count());
    return fails;
}

const test_case data_tests[] = {
    {"data/every_corpus_kind", test_every_corpus_kind},
};
const int n_data_tests = sizeof data_tests / sizeof data_tests[0];
