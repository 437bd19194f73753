#!/usr/bin/env python3
"""The tests' side of pelab's PyTorch model (lab/pelab_lab/torch.py, the one
PyTorch model: written from docs/model.md and docs/encodings.md, sharing no
code with ./train): the loss and the gradient of every parameter on a given
batch, for tests/test_torch.c to compare with the C implementation, and the
PyTorch training step make bench times.

    torch_ref.py CHECKPOINT BATCH OUT [CHECKPOINT BATCH OUT ...]
    torch_ref.py --bench V C L H T B STEPS THREADS     training tokens/s

BATCH: int32 B, T, then tokens (B*T), targets (B*T, -1 = none), seg (B*T).
OUT:   float64 loss, then float32 gradients in the checkpoint's tensor order.
"""
import os
import struct
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))
from pelab_lab import torch as pt  # noqa: E402  (after the path is set)


def loss_and_grads(ck, batch, out):
    model, _ = pt.load(ck)
    raw = open(batch, "rb").read()
    B, T = struct.unpack_from("<2i", raw, 0)
    arr = np.frombuffer(raw, dtype="<i4", offset=8).reshape(3, B, T)
    tokens, targets, seg = (torch.tensor(a.astype(np.int64)) for a in arr)
    _, loss = model(tokens, targets, seg)
    loss.backward()
    with open(out, "wb") as f:
        f.write(struct.pack("<d", loss.item()))
        f.write(model.flat_grads().detach().numpy().astype("<f4").tobytes())


def bench(V, C, L, H, T, B, steps, threads):
    """Trains the model (RoPE) with torch.optim.AdamW on random bytes and
    prints its training tokens/s (forward, backward, optimiser): the fastest
    of 3 blocks of `steps` steps after 2 warm-up steps."""
    torch.set_num_threads(threads)
    cfg = pt.resolve_options(dict(vocab=V, ctx=T, d=C, layers=L, heads=H, causal=1, pe="rope", base_ctx=0, rand_pos=0), {})
    g = torch.Generator().manual_seed(1)
    flat = torch.cat([(torch.ones(s) if n.startswith("ln") and n.endswith("w") else torch.randn(s, generator=g) * 0.02)
                      .reshape(-1) for n, s in pt.layout(cfg)])
    model = pt.PelabModel(cfg, flat.numpy()).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    tokens = torch.randint(0, V, (B, T), generator=g)
    targets = torch.randint(0, V, (B, T), generator=g)

    def step():
        opt.zero_grad(set_to_none=True)
        _, loss = model(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(2):
        step()
    # the fastest of 3 blocks, as pelab's bench takes its own figure
    best = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        best = max(best, steps * B * T / (time.perf_counter() - t0))
    print(f"tokens_per_s {best:.1f}")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--bench":
        bench(*(int(a) for a in args[1:9]))
        return
    if not args or len(args) % 3:
        raise SystemExit(__doc__)
    torch.set_num_threads(1)
    for k in range(0, len(args), 3):
        loss_and_grads(*args[k:k + 3])


if __name__ == "__main__":
    main()
