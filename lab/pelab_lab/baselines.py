"""Yardsticks: for a perplexity, byte-unigram and byte-bigram models of the
training split, scored on exactly the validation tokens that ./train's
evaluation at length L scores (data/data.c: the last 10% of the file is the
validation split; at length L it takes min(eval_tokens / L, (n_val − 1) / L)
non-overlapping windows from its start, each predicting its L next bytes).
Both use the Krichevsky–Trofimov estimate (add ½ to every count over the 256
byte values), fixed in advance: nothing is fitted to the validation split.
A model whose perplexity at a length is worse than the unigram's there has
collapsed at that length: it knows less than the byte frequencies. For
where attention goes (--attn-stats), uniform_attention: what a head that
weighs every key it sees equally gives."""
import math
from pathlib import Path

import numpy as np

VAL_FRACTION = 0.10   # data/data.c TEXT_VAL_FRACTION
ADD = 0.5             # Krichevsky–Trofimov


def _split(data):
    n = len(data)
    return n - int(n * VAL_FRACTION)


def byte_baselines(path, lengths, eval_tokens):
    """{L: (unigram ppl, bigram ppl)} for a byte corpus; {} when the file is
    not there (the table then says so) or is a token shard."""
    p = Path(path)
    if not p.is_file():
        return {}
    raw = p.read_bytes()
    if raw[:4] == (20240520).to_bytes(4, "little"):   # an llm.c shard: GPT-2 tokens, not bytes
        return {}
    b = np.frombuffer(raw, dtype=np.uint8).astype(np.int64)
    n_train = _split(b)
    train = b[:n_train]
    uni = np.bincount(train, minlength=256) + ADD
    uni = np.log(uni / uni.sum())
    pairs = np.bincount(train[:-1] * 256 + train[1:], minlength=256 * 256).reshape(256, 256).astype(float)
    big = np.log((pairs + ADD) / (pairs + ADD).sum(axis=1, keepdims=True))
    n_val = len(b) - n_train
    out = {}
    for L in lengths:
        windows = min(max(int(eval_tokens) // int(L), 1), (n_val - 1) // int(L)) if n_val > 1 else 0
        if windows < 1:
            continue
        idx = n_train + np.arange(windows * int(L))
        prev, tgt = b[idx], b[idx + 1]
        out[int(L)] = (math.exp(-uni[tgt].mean()), math.exp(-big[prev, tgt].mean()))
    return out


def uniform_attention(L, D=None):
    """--attn-stats of causal attention that weighs every key a row sees
    equally, over windows of L: the first token's weight averaged over rows
    i ≥ 1 (1/(i+1)), or (D given) the weight on keys at least D back
    averaged over the rows that have any ((i − D + 1)/(i + 1), i ≥ D)."""
    if D is None:
        return float(np.mean([1 / (i + 1) for i in range(1, L)]))
    return float(np.mean([(i - D + 1) / (i + 1) for i in range(D, L)])) if D < L else math.nan
