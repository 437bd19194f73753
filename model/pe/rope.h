// rope.h — the rotation shared by RoPE (rope.c) and xPos (xpos.c).
#ifndef PELAB_ROPE_H
#define PELAB_ROPE_H

// θ_m of each of the hs/2 pairs for the extension `scale` (0 none, 1 pi,
// 2 ntk, 3 yarn) with factor s; positions are multiplied by *pos_mul and the
// logits by *mscale.
void rope_frequencies(int hs, int ctx, double base, int scale, float s, float *theta, float *pos_mul, float *mscale);
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
