"""The JAX peer of make bench (issue 58): pelab's model in JAX, the whole
training step under jax.jit (optax: clipping at global norm 1, AdamW with
pelab's settings, weight decay on the matrices and the embedding only),
loaded with a pelab checkpoint's weights, first checked to compute the same
function as ./train.

    $(bench/peers/venv.sh) bench/peers/jax_peer.py check CK ROWS LOSS
      as torch_peer.py's: the loss on ./train --eval-rows's windows against ./train's, within 1e-5 relative
    $(bench/peers/venv.sh) bench/peers/jax_peer.py steps CK0 DATA SEED STEPS BATCH LR WARMUP LOSS
      as torch_peer.py's: trained from ./train's step-0 checkpoint on ./train's batches, the last step's loss
    $(bench/peers/venv.sh) bench/peers/jax_peer.py time CK [jit [STEPS [BATCH [BLOCKS]]]]
      training tokens/s: the fastest of BLOCKS blocks of STEPS steps (default 10, 8, 3) after 3 warm-up steps
      (the first compiles; their time is printed apart)
"""
import os
import sys
from pathlib import Path

for _k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # the peer's own process runs its libraries at their best
    os.environ.pop(_k, None)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lab"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_commands import equality_command, fastest_block, time_args  # noqa: E402
from pelab_lab import torch as pelab_torch  # noqa: E402  (the checkpoint reader, layout and RoPE's frequencies)

DECAYED = ("wte", "qkvw", "projw", "fcw", "fcprojw")  # pelab decays matrices and the embedding, not gains or biases


def load(ck):
    cfg, flat = pelab_torch.read_checkpoint(ck)
    if cfg["pe"] not in ("rope", "alibi", "none") or not cfg["causal"]:
        raise SystemExit(f"jax_peer: runs causal rope, alibi or none, not {cfg['pe']}")
    params = {n: jnp.asarray(a) for n, a in pelab_torch.unflatten(cfg, np.asarray(flat, np.float32)).items()}
    enc = None
    if cfg["pe"] == "rope":
        hs = cfg["d"] // cfg["heads"]
        theta, pos_mul, qmul = pelab_torch.rope_frequencies(cfg, hs, None)
        ang = (np.arange(cfg["ctx"], dtype=np.float32) * np.float32(pos_mul))[:, None] * np.asarray(theta, np.float32)[None]
        enc = (jnp.asarray(np.cos(ang)), jnp.asarray(np.sin(ang)), float(qmul))
    elif cfg["pe"] == "alibi":  # ALiBi's slopes m_h: the scores get -m_h (i - j)
        enc = jnp.asarray(pelab_torch.alibi_slopes(cfg["heads"]).numpy())
    return cfg, params, enc


def layer_norm(x, w, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * w + b


def make_loss(cfg, enc):
    """The loss of pelab's model; enc: RoPE's (cos, sin, q multiplier), ALiBi's slopes, or None (NoPE)."""
    C, H, L = cfg["d"], cfg["heads"], cfg["layers"]
    hs = C // H

    def turn(x, T):  # (B, H, T, hs): each pair (2m, 2m+1) turned by position × theta_m
        c, s = enc[0][:T], enc[1][:T]
        a, b = x[..., 0::2], x[..., 1::2]
        return jnp.stack((a * c - b * s, a * s + b * c), axis=-1).reshape(x.shape)

    def loss(P, tok, tgt):
        B, T = tok.shape
        x = P["wte"][tok]
        mask = jnp.tril(jnp.ones((T, T), bool))
        dist = (jnp.arange(T)[:, None] - jnp.arange(T)[None, :]).astype(jnp.float32)
        for l in range(L):
            h = layer_norm(x, P["ln1w"][l], P["ln1b"][l])
            qkv = (h @ P["qkvw"][l].T + P["qkvb"][l]).reshape(B, T, 3, H, hs).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            if cfg["pe"] == "rope":
                q, k = turn(q, T) * enc[2], turn(k, T)
            s = q @ k.swapaxes(-1, -2) / np.float32(np.sqrt(hs))
            if cfg["pe"] == "alibi":
                s = s - enc[:, None, None] * dist
            s = jnp.where(mask, s, -jnp.inf)
            y = jax.nn.softmax(s, axis=-1) @ v
            x = x + y.transpose(0, 2, 1, 3).reshape(B, T, C) @ P["projw"][l].T + P["projb"][l]
            h = layer_norm(x, P["ln2w"][l], P["ln2b"][l])
            x = x + jax.nn.gelu(h @ P["fcw"][l].T + P["fcb"][l], approximate=True) @ P["fcprojw"][l].T + P["fcprojb"][l]
        logits = layer_norm(x, P["lnfw"], P["lnfb"]) @ P["wte"].T
        lp = jax.nn.log_softmax(logits, axis=-1)
        keep = tgt >= 0
        nll = -jnp.take_along_axis(lp, jnp.where(keep, tgt, 0)[..., None], axis=-1)[..., 0]
        return jnp.where(keep, nll, 0.0).sum(), keep.sum()

    return loss


def check(ck, rows_path, want):
    cfg, P, enc = load(ck)
    f = jax.jit(make_loss(cfg, enc))
    rows = pelab_torch.read_rows(rows_path)
    L = min(rows)
    tok, tgt, seg = rows[L]
    total, count = 0.0, 0
    for b0 in range(0, len(tok), 16):
        s, n = f(P, jnp.asarray(tok[b0:b0 + 16]), jnp.asarray(tgt[b0:b0 + 16]))
        total += float(s)
        count += int(n)
    got = total / count
    rel = abs(got - want) / abs(want)
    print(f"jax {jax.__version__} {cfg['pe']}: loss at {L} {got:.7f}, ./train {want:.6f}, "
          f"relative difference {rel:.2e} "
          f"({'within' if rel <= 1e-5 else 'OUTSIDE'} 1e-5)")
    return 0 if rel <= 1e-5 else 1


def schedule(lr, warmup, total):
    """pelab's learning rate at each step (model/model.c lr_schedule)."""
    def at(step):
        step = jnp.asarray(step, jnp.float32)
        warm = lr * (step + 1) / warmup
        span = max(total - 1 - warmup, 1)
        progress = jnp.clip((step - warmup) / span, 0.0, 1.0)
        return jnp.where(step < warmup, warm, lr / 10 + 0.5 * (lr - lr / 10) * (1 + jnp.cos(jnp.pi * progress)))
    return at


def optimiser(P, lr):
    return optax.chain(optax.clip_by_global_norm(1.0),
                       optax.adamw(lr, b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.1, mask={n: n in DECAYED for n in P}))


def make_step(cfg, enc, opt):
    """The whole training step (loss, gradients, clipping, AdamW) under jax.jit."""
    loss = make_loss(cfg, enc)
    mean_loss = lambda P, tok, tgt: (lambda s, n: s / n)(*loss(P, tok, tgt))

    @jax.jit
    def step(P, state, tok, tgt):
        value, grads = jax.value_and_grad(mean_loss)(P, tok, tgt)
        updates, state = opt.update(grads, state, P)
        return optax.apply_updates(P, updates), state, value
    return step


def same_steps(ck0, data, seed, steps, B, lr, warmup, want):
    """As torch_peer.py steps: from ./train's step-0 checkpoint on its own batches."""
    from torch_peer import batches  # the same rows as ./train's (the generator reimplemented once)
    cfg, P, enc = load(ck0)
    opt = optimiser(P, schedule(lr, warmup, steps))
    state, step = opt.init(P), make_step(cfg, enc, opt)

    value = None
    for tok, tgt in batches(data, seed, cfg["ctx"], B, steps):
        P, state, value = step(P, state, jnp.asarray(tok.numpy()), jnp.asarray(tgt.numpy()))
    got = float(value)
    rel = abs(got - want) / abs(want)
    print(f"jax {jax.__version__} {cfg['pe']}: loss at step {steps} {got:.6f}, ./train {want:.6f}, "
          f"relative difference {rel:.2e}")
    return rel


def time_steps(ck, steps, B, blocks, warmup=3):
    """Training tokens/s of the jitted step: the fastest of `blocks` blocks of `steps` steps after `warmup` steps
    (the first compiles; their seconds are returned apart), as torch_peer.py's."""
    cfg, P, enc = load(ck)
    V, T = cfg["vocab"], cfg["ctx"]
    opt = optimiser(P, 3e-3)
    state, step = opt.init(P), make_step(cfg, enc, opt)

    key = np.random.default_rng(1)
    tok = jnp.asarray(key.integers(0, V, (B, T)))
    tgt = jnp.asarray(key.integers(0, V, (B, T)))
    carry = [P, state, None]

    def one():
        carry[0], carry[1], carry[2] = step(carry[0], carry[1], tok, tgt)

    return fastest_block(one, lambda: carry[2].block_until_ready(), B * T, steps, blocks, warmup)


if __name__ == "__main__":
    rc = equality_command(sys.argv, check, same_steps)
    if rc is not None:
        sys.exit(rc)
    if len(sys.argv) >= 3 and sys.argv[1] == "time":  # time CK [jit [STEPS [BATCH [BLOCKS]]]]
        mode, steps, batch, blocks = time_args(sys.argv, "jit")
        if mode != "jit":
            sys.exit(f"jax_peer.py time: mode {mode}: the JAX peer has one, jit")
        tps, warm = time_steps(sys.argv[2], steps, batch, blocks)
        print(f"jax {jax.__version__} jit: tokens_per_s {tps:.1f} (devices {jax.devices()}; warm-up {warm:.1f} s)")
        sys.exit(0)
    sys.exit(__doc__)
