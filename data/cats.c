// cats.c — the built-in synthetic corpus. Each example is a sentence and a
// question whose answer depends on word order:
//   the cat chases the dog . who chases ? the cat .
//   the cat chases the dog . who is chased ? the dog .
// A bag-of-words model sees the same multiset for "the cat chases the dog"
// and "the dog chases the cat", so it cannot answer better than chance.
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

enum { TOK_PAD = 0, TOK_MASK, TOK_THE, TOK_DOT, TOK_WHO, TOK_QMARK, TOK_IS, TOK_FIRST_NOUN };

static const char *const nouns[CATS_NOUNS] = {
    "cat", "dog", "fox", "bird", "mouse", "horse", "cow", "pig", "sheep", "goat", "duck", "frog",
    "bear", "wolf", "lion", "tiger", "rabbit", "snake", "owl", "bee", "ant", "fish", "hen", "deer"};
static const char *const verbs[CATS_VERBS] = {
    "chases", "follows", "pushes", "pulls", "kicks", "likes", "helps", "watches", "calls", "pokes", "hugs", "licks"};
static const char *const participles[CATS_VERBS] = {
    "chased", "followed", "pushed", "pulled", "kicked", "liked", "helped", "watched", "called", "poked", "hugged", "licked"};
static const char *const specials[TOK_FIRST_NOUN] = {"<pad>", "<mask>", "the", ".", "who", "?", "is"};

int cats_pad_token(void) { return TOK_PAD; }

int cats_vocab_size(void) { return TOK_FIRST_NOUN + CATS_NOUNS + 2 * CATS_VERBS; }
int cats_noun(int i) { return TOK_FIRST_NOUN + i; }
int cats_verb(int i) { return TOK_FIRST_NOUN + CATS_NOUNS + i; }
static int cats_participle(int i) { return TOK_FIRST_NOUN + CATS_NOUNS + CATS_VERBS + i; }

const char *cats_word(int t) {
    if (t < 0 || t >= cats_vocab_size()) return "<?>";
    if (t < TOK_FIRST_NOUN) return specials[t];
    t -= TOK_FIRST_NOUN;
    if (t < CATS_NOUNS) return nouns[t];
    t -= CATS_NOUNS;
    return t < CATS_VERBS ? verbs[t] : participles[t - CATS_VERBS];
}

void cats_make_example(int subj, int verb, int obj, int ask_subject, cats_example *ex) {
    int *w = ex->tokens, n = 0;
    w[n++] = TOK_THE;
    w[n++] = cats_noun(subj);
    w[n++] = cats_verb(verb);
    w[n++] = TOK_THE;
    w[n++] = cats_noun(obj);
    w[n++] = TOK_DOT;
    w[n++] = TOK_WHO;
    if (ask_subject) {
        w[n++] = cats_verb(verb);  // who chases ? the <subject> .
    } else {
        w[n++] = TOK_IS;           // who is chased ? the <object> .
        w[n++] = cats_participle(verb);
    }
    w[n++] = TOK_QMARK;
    w[n++] = TOK_THE;
    ex->answer_pos = n;
    ex->answer = cats_noun(ask_subject ? subj : obj);
    w[n++] = ex->answer;
    w[n++] = TOK_DOT;
    ex->len = n;
}

// Chooses the held-out (unordered pair, verb) combinations from the seed.
static void cats_init_held_out(data_t *d) {
    memset(d->held, 0, sizeof d->held);
    rng_t r = {d->seed ^ 0xC0FFEE1234ull};
    int chosen = 0;
    while (chosen < CATS_HELD_OUT) {
        int a = (int)rng_below(&r, CATS_NOUNS), b = (int)rng_below(&r, CATS_NOUNS), v = (int)rng_below(&r, CATS_VERBS);
        if (a == b || d->held[a][b][v]) continue;
        d->held[a][b][v] = d->held[b][a][v] = 1;
        chosen++;
    }
}

static void random_training_example(const data_t *d, rng_t *rng, cats_example *ex) {
    int s, o, v;
    do {
        s = (int)rng_below(rng, CATS_NOUNS);
        o = (int)rng_below(rng, CATS_NOUNS);
        v = (int)rng_below(rng, CATS_VERBS);
    } while (s == o || d->held[s][o][v]);
    cats_make_example(s, v, o, (int)rng_below(rng, 2), ex);
}

// Causal: a stream of examples cut at T+1 tokens, next-token targets, one
// segment. Bidirectional: whole examples packed while they fit, each its own
// segment with its answer slot replaced by [MASK] (the only target); the rest
// is padding, each pad its own segment.
void cats_fill_row(const data_t *d, rng_t *rng, int T, int *tokens, int *targets, int *seg) {
    cats_example ex;
    if (d->causal) {
        int *buf = xmalloc(sizeof(int) * ((size_t)T + CATS_MAX_EXAMPLE + 1));
        int n = 0;
        while (n < T + 1) {
            random_training_example(d, rng, &ex);
            memcpy(buf + n, ex.tokens, sizeof(int) * ex.len);
            n += ex.len;
        }
        for (int t = 0; t < T; t++) {
            tokens[t] = buf[t];
            targets[t] = buf[t + 1];
            seg[t] = 0;
        }
        free(buf);
        return;
    }
    int n = 0, s = 0;
    for (;;) {
        random_training_example(d, rng, &ex);
        if (n + ex.len > T) break;
        for (int k = 0; k < ex.len; k++) {
            tokens[n + k] = k == ex.answer_pos ? TOK_MASK : ex.tokens[k];
            targets[n + k] = k == ex.answer_pos ? ex.answer : -1;
            seg[n + k] = s;
        }
        n += ex.len;
        s++;
    }
    for (; n < T; n++) {
        tokens[n] = TOK_PAD;
        targets[n] = -1;
        seg[n] = -1 - n;
    }
}

int cats_probe(const data_t *d, cats_example *probe) {
    int n = 0;
    for (int a = 0; a < CATS_NOUNS; a++)
        for (int b = a + 1; b < CATS_NOUNS; b++)
            for (int v = 0; v < CATS_VERBS; v++) {
                if (!d->held[a][b][v]) continue;
                for (int q = 0; q < 2; q++) {
                    cats_make_example(a, v, b, q, &probe[n++]);
                    cats_make_example(b, v, a, q, &probe[n++]);
                }
            }
    return n;
}

static int cats_takes(const char *spec, const unsigned char *head, size_t got) {
    (void)head, (void)got;
    return strcmp(spec, "cats") == 0;
}

static int cats_vocab(int causal) {
    (void)causal;  // [MASK] is in the vocabulary in both modes
    return cats_vocab_size();
}

static int cats_open(data_t *d, const char *spec, char *err, size_t errlen) {
    (void)spec, (void)err, (void)errlen;
    d->mask_token = TOK_MASK;
    cats_init_held_out(d);
    return 0;
}

static int cats_check_ctx(const data_t *d, int T, char *err, size_t errlen) {
    (void)d;
    if (T < CATS_MAX_EXAMPLE + 1) {
        snprintf(err, errlen, "--ctx %d is shorter than one cats example and its answer (%d tokens); use --ctx %d or more",
                 T, CATS_MAX_EXAMPLE + 1, CATS_MAX_EXAMPLE + 1);
        return 0;
    }
    return 1;
}

// Evaluation rows are training-like rows from each window's own stream.
static size_t cats_val_windows(const data_t *d, int L, size_t want, char *err, size_t errlen) {
    (void)d, (void)L, (void)err, (void)errlen;
    return want;
}

static void cats_val_row(const data_t *d, rng_t *rng, int L, size_t w, int *tokens, int *targets, int *seg) {
    (void)w;
    cats_fill_row(d, rng, L, tokens, targets, seg);
}

// Words separated by white space.
static int cats_encode(const data_t *d, const char *text, int *out, int max, char *err, size_t errlen) {
    int n = 0;
    for (const char *p = text;;) {
        p += strspn(p, " \t\n");
        size_t len = strcspn(p, " \t\n");
        if (!len) break;
        int tok = -1;
        for (int t = 0; t < d->vocab && tok < 0; t++)
            if (strlen(cats_word(t)) == len && strncmp(cats_word(t), p, len) == 0 && data_is_text(d, t)) tok = t;
        if (tok < 0) {
            snprintf(err, errlen, "--prompt word '%.*s' is not in the cats vocabulary (words like: the cat chases dog . who is chased ?)",
                     len > 60 ? 60 : (int)len, p);
            return -1;
        }
        if (n == max) return data_prompt_too_long(max, err, errlen);
        out[n++] = tok;
        p += len;
    }
    return n;
}

static void cats_decode(const data_t *d, int t, char *buf, size_t buflen) {
    (void)d;
    snprintf(buf, buflen, "%s ", cats_word(t));
}

static int cats_is_text(const data_t *d, int token) {
    (void)d;
    return token != TOK_PAD;
}

static int cats_write_example(const char *dir, char *spec, size_t cap) {
    (void)dir;
    return snprintf(spec, cap, "cats") > 0;
}

const corpus_ops corpus_cats = {
    .name = "cats",
    .caps = CORPUS_ORDER_PROBE,
    .takes = cats_takes,
    .vocab = cats_vocab,
    .open = cats_open,
    .check_ctx = cats_check_ctx,
    .row = cats_fill_row,
    .val_windows = cats_val_windows,
    .val_row = cats_val_row,
    .encode = cats_encode,
    .decode = cats_decode,
    .is_text = cats_is_text,
    .default_prompt = "the",
    .example = cats_write_example,
};
