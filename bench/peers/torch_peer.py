"""The PyTorch peer of make bench (issue 58): pelab's model written the way
a PyTorch user writes it for speed — one fused QKV product, RoPE on the
(B, H, T, hs) heads or ALiBi's bias as SDPA's float mask,
scaled_dot_product_attention (causal), a tied head —
loaded with a pelab checkpoint's weights, so that it first proves it computes
the same function: its loss on the validation windows ./train scored equals
./train's within 1e-5 relative.

    $(bench/peers/venv.sh) bench/peers/torch_peer.py check CK ROWS LOSS
      CK: a pelab checkpoint (RoPE, ALiBi or NoPE, causal); ROWS: ./train --load CK
      --eval-rows ROWS --eval-ctx L; LOSS: ./train's loss at L from its --json.

    $(bench/peers/venv.sh) bench/peers/torch_peer.py time CK [eager|compile|bf16 [STEPS [BATCH [BLOCKS]]]]
      training tokens/s on CK's model (its shape; ./train --steps 0 --save CK makes one), AdamW as pelab's:
      the fastest of BLOCKS blocks of STEPS steps (default 10, 8, 3) after 3 warm-up steps (torch.compile
      compiles in them; their time is printed apart).

    $(bench/peers/venv.sh) bench/peers/torch_peer.py steps CK0 DATA SEED STEPS BATCH LR WARMUP LOSS
      the peer trained from ./train's step-0 checkpoint (--steps 0 --save CK0) on ./train's own batches of a
      byte corpus (its generator, reimplemented) with PyTorch's AdamW set as pelab's: its loss at the last step
      against ./train's final_loss (--steps STEPS --warmup WARMUP --batch BATCH --lr LR --seed SEED).
"""
import math
import os
import sys
from pathlib import Path

for _k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # the peer's own process runs its libraries at their best
    os.environ.pop(_k, None)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lab"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pelab_lab import torch as pelab_torch  # noqa: E402  (the checkpoint reader and layout; not its model)
from peer_commands import equality_command, fastest_block, time_args  # noqa: E402


class FastGPT(torch.nn.Module):
    """Pre-LN GPT: LayerNorm (eps 1e-5) → QKV → RoPE → causal attention →
    projection; LayerNorm → GELU (tanh) MLP; final LayerNorm; the token
    embedding as the head. Parameters in pelab's layout, stacked per layer."""

    def __init__(self, cfg, flat):
        super().__init__()
        pe = cfg["pe"]
        if pe not in ("rope", "alibi", "none") or not cfg["causal"]:
            raise ValueError(f"the peer runs causal rope, alibi or none, not {pe} "
                             f"({'causal' if cfg['causal'] else 'bidir'})")
        self.cfg = cfg
        tensors = pelab_torch.unflatten(cfg, np.asarray(flat, np.float32))
        self.p = torch.nn.ParameterDict({n: torch.nn.Parameter(torch.tensor(a)) for n, a in tensors.items()})
        hs = cfg["d"] // cfg["heads"]
        if pe == "rope":
            theta, pos_mul, qmul = pelab_torch.rope_frequencies(cfg, hs, None)
            pos = torch.arange(cfg["ctx"], dtype=torch.float32) * pos_mul
            ang = pos[:, None] * torch.as_tensor(np.asarray(theta, np.float32))[None, :]  # (T, hs/2)
            self.register_buffer("cos", torch.cos(ang), persistent=False)
            self.register_buffer("sin", torch.sin(ang), persistent=False)
            self.qmul = float(qmul)
        if pe == "alibi":  # the causal mask and -m_h (i - j), added to the scores (SDPA's float attn_mask)
            T = cfg["ctx"]
            i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
            bias = -pelab_torch.alibi_slopes(cfg["heads"])[:, None, None] * (i - j).to(torch.float32)
            self.register_buffer("bias", bias.masked_fill(j > i, float("-inf")), persistent=False)

    def rope(self, x):  # (B, H, T, hs): each pair (2m, 2m+1) turned by position × theta_m
        T = x.shape[2]
        a, b = x[..., 0::2], x[..., 1::2]
        c, s = self.cos[:T], self.sin[:T]
        return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)

    def forward(self, tokens, targets=None):
        cfg, P = self.cfg, self.p
        B, T = tokens.shape
        C, H = cfg["d"], cfg["heads"]
        hs = C // H
        x = F.embedding(tokens, P["wte"])
        for l in range(cfg["layers"]):
            h = F.layer_norm(x, (C,), P["ln1w"][l], P["ln1b"][l], eps=1e-5)
            q, k, v = F.linear(h, P["qkvw"][l], P["qkvb"][l]).view(B, T, 3, H, hs).permute(2, 0, 3, 1, 4)
            if cfg["pe"] == "rope":
                q, k = self.rope(q) * self.qmul, self.rope(k)
            if cfg["pe"] == "alibi":
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias[:, :T, :T])
            else:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + F.linear(y.transpose(1, 2).reshape(B, T, C), P["projw"][l], P["projb"][l])
            h = F.layer_norm(x, (C,), P["ln2w"][l], P["ln2b"][l], eps=1e-5)
            x = x + F.linear(F.gelu(F.linear(h, P["fcw"][l], P["fcb"][l]), approximate="tanh"), P["fcprojw"][l],
                             P["fcprojb"][l])
        logits = F.linear(F.layer_norm(x, (C,), P["lnfw"], P["lnfb"], eps=1e-5), P["wte"])
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-1)


def rows_loss(model, tok, tgt, batch=16):
    """Mean cross-entropy over the rows' targets (nats per token), as ./train sums them."""
    total, count = 0.0, 0
    with torch.no_grad():
        for b0 in range(0, len(tok), batch):
            t, y = torch.as_tensor(tok[b0:b0 + batch]), torch.as_tensor(tgt[b0:b0 + batch])
            logits, _ = model(t)
            lp = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-1, reduction="sum")
            total += lp.double().item()
            count += int((y >= 0).sum())
    return total / count


def check(ck, rows_path, want):
    cfg, flat = pelab_torch.read_checkpoint(ck)
    model = FastGPT(cfg, flat)
    rows = pelab_torch.read_rows(rows_path)
    L = min(rows)
    tok, tgt, seg = rows[L]
    if (seg != 0).any():
        raise ValueError("the rows have segments; the peer scores one sequence per row")
    got = rows_loss(model, tok, tgt)
    rel = abs(got - want) / abs(want)
    print(f"torch {torch.__version__} {cfg['pe']}: loss at {L} {got:.7f}, ./train {want:.6f}, "
          f"relative difference {rel:.2e} "
          f"({'within' if rel <= 1e-5 else 'OUTSIDE'} 1e-5)")
    return 0 if rel <= 1e-5 else 1


DECAYED = ("wte", "qkvw", "projw", "fcw", "fcprojw")  # pelab decays matrices and the embedding, not gains or biases


def lr_at(lr, warmup, step, total):
    """pelab's schedule (model/model.c lr_schedule): linear warmup, cosine to lr/10 at the last step."""
    if step < warmup:
        return lr * (step + 1) / warmup
    span = total - 1 - warmup
    if span <= 0:
        return lr
    progress = min((step - warmup) / span, 1.0)
    return lr / 10 + 0.5 * (lr - lr / 10) * (1 + math.cos(math.pi * progress))


def batches(data, seed, ctx, B, steps):
    """./train's training rows on a byte corpus (data/data.c): the generator
    seeded seed·0x9E3779B97F4A7C15 + 0x5151, each row at the offset next() mod
    (training split − ctx), the last 10% held out."""
    raw = np.frombuffer(open(data, "rb").read(), dtype=np.uint8).astype(np.int64)
    n_train = len(raw) - int(len(raw) * 0.10)
    span = max(n_train - ctx, 1)
    rng = pelab_torch.Rng(seed * 0x9E3779B97F4A7C15 + 0x5151)
    for _ in range(steps):
        starts = [rng.next() % span for _ in range(B)]
        rows = np.stack([raw[s:s + ctx + 1] for s in starts])
        yield torch.as_tensor(rows[:, :-1]), torch.as_tensor(rows[:, 1:])


def same_steps(ck0, data, seed, steps, B, lr, warmup, want):
    """The peer trained from ./train's step-0 checkpoint on ./train's batches with
    PyTorch's AdamW (pelab's betas, eps, decay groups, clipping, schedule): its
    loss at the last step against ./train's final_loss."""
    cfg, flat = pelab_torch.read_checkpoint(ck0)
    model = FastGPT(cfg, flat)
    groups = [{"params": [p for n, p in model.p.items() if n in DECAYED], "weight_decay": 0.1},
              {"params": [p for n, p in model.p.items() if n not in DECAYED], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8)
    loss = None
    for step, (tok, tgt) in enumerate(batches(data, seed, cfg["ctx"], B, steps)):
        _, loss = model(tok, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for g in opt.param_groups:
            g["lr"] = lr_at(lr, warmup, step, steps)
        opt.step()
    got = float(loss)
    rel = abs(got - want) / abs(want)
    print(f"torch {torch.__version__} {cfg['pe']}: loss at step {steps} {got:.6f}, ./train {want:.6f}, "
          f"relative difference {rel:.2e}")
    return rel


def time_steps(ck, mode, B, steps, blocks, warmup=3):
    """Training tokens/s of the peer in one mode (eager, compile, bf16: eager under
    bf16 autocast) on the model of checkpoint ck (its shape; ./train --steps 0
    makes one): the fastest of `blocks` blocks of `steps` steps after `warmup`
    steps, as pelab's bench keeps its fastest block; and the seconds of those
    warm-up steps (torch.compile's compilation happens there)."""
    torch.manual_seed(1)
    cfg, flat = pelab_torch.read_checkpoint(ck)
    model = FastGPT(cfg, flat)
    V, T = cfg["vocab"], cfg["ctx"]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, foreach=True)
    tok = torch.randint(0, V, (B, T))
    tgt = torch.randint(0, V, (B, T))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "bf16"):
            _, loss = model(tok, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    if mode == "compile":
        step = torch.compile(step)
    elif mode not in ("eager", "bf16"):
        raise ValueError(f"mode {mode}: eager, compile or bf16")
    return fastest_block(step, lambda: None, B * T, steps, blocks, warmup)


if __name__ == "__main__":
    rc = equality_command(sys.argv, check, same_steps)
    if rc is not None:
        sys.exit(rc)
    if len(sys.argv) >= 3 and sys.argv[1] == "time":  # time CK [MODE [STEPS [BATCH [BLOCKS]]]]
        mode, steps, batch, blocks = time_args(sys.argv, "eager")
        tps, warm = time_steps(sys.argv[2], mode, batch, steps, blocks)
        print(f"torch {torch.__version__} {mode}: tokens_per_s {tps:.1f} (threads {torch.get_num_threads()}; "
              f"warm-up {warm:.1f} s)")
        sys.exit(0)
    sys.exit(__doc__)
