"""RoPE's long-term decay, from the formula (no runs): RoFormer (Su et al.
2021, §3.4.3) writes the rotated q·k of a head as Σ_i h_i e^{i r θ_i} over the
hd/2 pairs, θ_i = base^(−2i/hd), r the relative distance, and bounds its size
by Abel summation: |Σ_i h_i e^{i r θ_i}| ≤ max_i |h_{i+1} − h_i| · Σ_{j=1}^{hd/2}
|S_j(r)|, S_j(r) = Σ_{k<j} e^{i r θ_k}. Their Figure 2 plots the mean
(1/(hd/2)) Σ_j |S_j(r)| against r; it decays with r. This is that mean."""
import numpy as np


def rope_bound(head_size, base, distances):
    """(1/(hd/2)) Σ_{j=1}^{hd/2} |S_j(r)| for each r of distances."""
    half = head_size // 2
    theta = float(base) ** (-2.0 * np.arange(half) / head_size)
    r = np.asarray(distances, dtype=float)[:, None]
    partial = np.cumsum(np.exp(1j * r * theta[None, :]), axis=1)   # S_1 … S_{hd/2}
    return np.abs(partial).mean(axis=1)


def distances(longest):
    """0, 1, 2, … up to longest, thinned geometrically past 64 (a log axis)."""
    near = np.arange(0, min(64, longest) + 1)
    far = np.unique(np.geomspace(64, longest, 200).astype(int)) if longest > 64 else np.array([], dtype=int)
    return np.unique(np.concatenate([near, far]))
