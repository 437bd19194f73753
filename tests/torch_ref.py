#!/usr/bin/env python3
"""The tests' side of pelab's PyTorch model (lab/pelab_lab/torch.py, the one
PyTorch model: written from docs/model.md and docs/encodings.md, sharing no
code with ./train): the loss and the gradient of every parameter on a given
batch, for tests/test_torch.c to compare with the C implementation. (make
bench's peers are bench/peers/: PyTorch 2 and JAX from PyPI.)

    torch_ref.py CHECKPOINT BATCH OUT [CHECKPOINT BATCH OUT ...]

BATCH: int32 B, T, then tokens (B*T), targets (B*T, -1 = none), seg (B*T).
OUT:   float64 loss, then float32 gradients in the checkpoint's tensor order.
"""
import os
import struct
import sys

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


def main():
    args = sys.argv[1:]
    if not args or len(args) % 3:
        raise SystemExit(__doc__)
    torch.set_num_threads(1)
    for k in range(0, len(args), 3):
        loss_and_grads(*args[k:k + 3])


if __name__ == "__main__":
    main()
