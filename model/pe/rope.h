// rope.h — the rotation shared by RoPE (rope.c) and xPos (xpos.c).
#ifndef PELAB_ROPE_H
#define PELAB_ROPE_H

// What a context extension is computed from.
typedef struct {
    int hs, ctx;           // head size; the length the model was trained at
    double base;           // --rope-base
    float s;               // the extension's factor (1: none)
    double low, high;      // llama3's band edges (--rope-low-freq-factor, --rope-high-freq-factor)
    const float *factors;  // longrope's per-pair factors (--rope-factors), n_factors of them
    int n_factors;
} rope_ext;

// The context extensions, --rope-scale's choices in order (rope.c's
// ROPE_SCALINGS): freq changes th[0..hs/2) (θ_m = base^(−2m/hs) on entry),
// the positions' multiplier and q's (so the logits') for e->s > 1.
typedef struct {
    const char *name, *summary;
    void (*freq)(const rope_ext *e, double *th, float *pos_mul, float *qmul);
} rope_scaling;
extern const rope_scaling rope_scalings[];
extern const int rope_scaling_count;

// θ_m of each of the hs/2 pairs under row `scaling` of rope_scalings (0 =
// none) at e; positions are multiplied by *pos_mul and the logits by *mscale.
// Every row is the identity at e->s = 1.
void rope_frequencies(const rope_ext *e, int scaling, float *theta, float *pos_mul, float *mscale);
// cs (T, half, 2): cos and sin of t·pos_mul·theta[m].
void rope_angles(float *cs, int T, int half, const float *theta, float pos_mul);
// Rotates pair m of q and k of the token at position t (pos[b·T + t'], or t'
// itself when pos is NULL) by cs row t (dir = −1: the other way); pair m of q
// is multiplied by sq[t·half + m] and of k by sk[t·half + m], or, with sq
// NULL, q by qmul. Scaling and rotation commute: the backward pass is the
// same call with dir = −1.
void rope_apply(float *qkv, int B, int T, int C, int NH, const float *cs, const float *sq, const float *sk,
                float qmul, int dir, const int *pos);

#endif
