"""Figures from the tidy tables: mean with its 95% t-band, and a thin line
per seed (so that a two-cluster result is seen as two clusters, not as a
mean no seed has); fixed colours per encoding (style.py); labelled log axes;
chance, baseline and training-length lines; PNG and SVG."""
import math
import textwrap

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, ScalarFormatter, NullFormatter

from . import schema, stats
from .baselines import uniform_attention
from .runs import SOLVED
from .style import plt, encoding_style, extension_of, save

_METHOD = plt.get_cmap("tab10").colors


def _band(ax, x, groups, style, label, per_seed, band=True, alpha=0.15, bars_at=None):
    """groups: list over x of arrays of per-seed values (x sorted); band=False
    where so many series share a panel that bands would hide each other;
    bars_at: x positions (e.g. nudged apart) for the 95% intervals as error
    bars instead."""
    est = [stats.mean_ci(g) for g in groups]
    m = np.array([e.mean for e in est])
    lo = np.array([e.lo if e.n > 1 else e.mean for e in est])
    hi = np.array([e.hi if e.n > 1 else e.mean for e in est])
    ax.plot(x, m, label=label, markersize=4, linewidth=1.6, **style)
    if band:
        ax.fill_between(x, lo, hi, color=style["color"], alpha=alpha, linewidth=0)
    elif bars_at is not None:
        ax.errorbar(bars_at, m, yerr=[m - lo, hi - m], fmt="none", ecolor=style["color"], elinewidth=1.1, capsize=2)
    for seed_line in per_seed:
        # solid and visible: where seeds split into two clusters, these lines
        # (not the mean) are the result
        ax.plot(x, seed_line, color=style["color"], linewidth=0.7, alpha=0.5, linestyle="-")


def _log_axis(axis, lo=None, hi=None):
    """Labelled ticks on a log axis: 1-2-5 per decade over a wide range, more
    where the data span less than a decade (else one or no label shows)."""
    span = hi / lo if lo and hi and lo > 0 else 1000
    subs = (1.0, 2.0, 5.0) if span > 30 else (1.0, 2.0, 3.0, 5.0, 7.0) if span > 10 else tuple(range(1, 10))
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    # each tick its own shortest label (a shared number of decimals printed 0.8 and 1.0 both as "1")
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    axis.set_minor_formatter(NullFormatter())


def _per_seed(df, xcol, ycol, xs):
    lines = []
    for _, g in df.groupby("seed"):
        s = g.set_index(xcol)[ycol]
        lines.append([float(s.get(x, math.nan)) for x in xs])
    return lines


def order_curves(curve, title, stem, order=None):
    """order_acc against training step, one panel per attention mode."""
    modes = [m for m in ("causal", "bidir") if m in set(curve["attn"])]
    fig, axes = plt.subplots(1, len(modes), figsize=(6.2 * len(modes), 4.4), squeeze=False, sharey=True)
    labels = order or list(dict.fromkeys(curve["pe"]))
    for ax, mode in zip(axes[0], modes):
        sub = curve[curve["attn"] == mode]
        for i, pe in enumerate(labels):
            g = sub[sub["pe"] == pe]
            if g.empty:
                continue
            xs = sorted(g["step"].unique())
            groups = [g[g["step"] == x]["order_acc"].to_numpy() for x in xs]
            _band(ax, xs, groups, encoding_style(pe, i), pe, _per_seed(g, "step", "order_acc", xs))
        ax.axhline(0.5, color="grey", linewidth=0.8, linestyle=":", label="chance (two nouns)")
        ax.axhline(SOLVED, color="grey", linewidth=0.6, linestyle="--", label=f"solved ({SOLVED:g})")
        ax.set_xlabel("training step")
        ax.set_title(f"{mode} attention")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("order accuracy on held-out triples")
    axes[0][-1].legend(fontsize=7, loc="lower right", ncol=2)
    fig.suptitle(title, fontsize=10)
    return save(fig, stem)


def loss_curves(curve, title, stem, by="label"):
    """The validation loss (and the training loss of the step, dashed)
    against training step, one line per configuration: the mean over its
    runs with its 95% band and a thin line per seed."""
    fig, ax = plt.subplots(figsize=(7.0, 4.4))
    for i, lab in enumerate(dict.fromkeys(curve[by])):
        g = curve[(curve[by] == lab) & curve["val_loss"].notna()]
        if g.empty:
            continue
        xs = sorted(g["step"].unique())
        style = encoding_style(str(lab), i)
        _band(ax, xs, [g[g["step"] == x]["val_loss"].to_numpy() for x in xs], style, f"{lab} (validation)",
              _per_seed(g, "step", "val_loss", xs))
        tr = g.groupby("step")["train_loss"].mean()
        ax.plot(tr.index, tr.to_numpy(), linestyle="--", linewidth=0.8, color=style.get("color"), alpha=0.7,
                label=f"{lab} (training, that step)")
    ax.set_xlabel("training step")
    ax.set_ylabel("loss (nats/token)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return save(fig, stem)


def solve_curves(runs, title, stem, cap=None, panel="attn", share=None):
    """Fraction of seeds solved against training step (Kaplan–Meier, a step
    function; stats.solved_by), one panel per attention mode (or per value
    of another column, e.g. task), log steps. cap: the steps every run could
    train (one number, or {panel value: number}); share: a line at that
    fraction (a budget rule's)."""
    keys = ([m for m in ("causal", "bidir") if m in set(runs["attn"])] if panel == "attn"
            else list(dict.fromkeys(runs[panel])))
    ncol = min(3, len(keys)) if panel != "attn" else len(keys)
    nrow = math.ceil(len(keys) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(6.2 * ncol if ncol < 3 else 15, 4.4 * nrow), squeeze=False,
                             sharey=True)
    labels = list(dict.fromkeys(runs["pe"]))
    caps = cap if isinstance(cap, dict) else {k: cap for k in keys}
    for ax, key in zip(axes.flat, keys):
        sub = runs[runs[panel] == key]
        top = caps.get(key) or float(np.nanmax(sub["solve_time"])) if len(sub) else 1
        first = float(np.nanmin(sub["solve_time"])) if len(sub) else 1
        start = max(1.0, min(first, top) / 2)   # nothing can solve before the first evaluation point
        grid = np.unique(np.concatenate([np.geomspace(start, top, 200).round(), sub["solve_time"].dropna().to_numpy()]))
        grid = grid[(grid >= start) & (grid <= top)]
        shown = [pe for pe in labels if not sub[sub["pe"] == pe].empty]
        for i, pe in enumerate(labels):
            g = sub[sub["pe"] == pe]
            if g.empty:
                continue
            frac, lo, hi = stats.solved_by(g["solve_time"], g["solved"] == 1, grid)
            st = encoding_style(pe, i)
            ax.step(grid, frac, where="post", color=st["color"], linestyle=st.get("linestyle", "-"), linewidth=1.6,
                    label=f"{pe} ({int((g['solved'] == 1).sum())}/{len(g)})")
            if len(shown) <= 6:
                ax.fill_between(grid, lo, hi, step="post", color=st["color"], alpha=0.12, linewidth=0)
        if caps.get(key):
            ax.axvline(caps[key], color="grey", linewidth=0.8, linestyle=":", label=f"cap ({caps[key]} steps)")
        if share:
            ax.axhline(share, color="grey", linewidth=0.6, linestyle="--", label=f"{share:g} of the seeds")
        ax.set_xscale("log")
        ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000)
                 if len(grid) and grid[0] <= t <= grid[-1] * 1.01]
        ax.set_xticks(ticks, [f"{t // 1000}k" if t >= 1000 else str(t) for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("training step")
        ax.set_title(f"{key} attention" if panel == "attn" else str(key))
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="center right" if panel == "attn" else "upper left", ncol=2)   # each panel's own counts
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("fraction of seeds solved" + (" (95% band)" if len(labels) <= 6 else ""))
    fig.suptitle(title, fontsize=10)
    return save(fig, stem)


def task_curves(curve, title, stem, threshold):
    """task_acc at the training sizes against training step, a panel per
    task: the learning curves (a run's curve ends where it solved)."""
    tasks = list(dict.fromkeys(curve["task"]))
    ncol = min(3, len(tasks))
    nrow = math.ceil(len(tasks) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(15 if ncol == 3 else 6.2 * ncol, 4.4 * nrow), squeeze=False,
                             sharey=True)
    labels = list(dict.fromkeys(curve["pe"]))
    for ax, tk in zip(axes.flat, tasks):
        sub = curve[curve["task"] == tk]
        for i, pe in enumerate(labels):
            g = sub[sub["pe"] == pe]
            if g.empty:
                continue
            xs = sorted(g["step"].unique())
            # a solved run stops: past its last point it stays at its last accuracy (it is learned)
            wide = g.pivot_table(index="step", columns="seed", values="task_acc").reindex(xs).ffill()
            groups = [wide.loc[x].dropna().to_numpy() for x in xs]
            _band(ax, xs, groups, encoding_style(pe, i), pe, [list(wide[c]) for c in wide.columns], band=len(labels) <= 4)
        ax.axhline(threshold, color="grey", linewidth=0.6, linestyle="--", label=f"learned ({threshold:g})")
        ax.set_title(str(tk))
        ax.set_xlabel("training step")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[len(tasks):]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("exact match at the training sizes")
    fig.suptitle(title, fontsize=10)
    return save(fig, stem)


def finetune_style(label, index):
    """The fine-tuning table's lines: one colour per extension method, dashed
    before fine-tuning (base, base-eval), solid after."""
    method = extension_of(label) or "none"
    colour = {"none": "#000000", "pi": _METHOD[0], "ntk": _METHOD[2], "yarn": _METHOD[4]}.get(method, _METHOD[6])
    return {"color": colour, "marker": "o" if label.startswith("fine-tuned") else "x",
            "linestyle": "-" if label.startswith("fine-tuned") else "--"}


def length_curves(evals, title, stem, train_ctx, labels, style=encoding_style, also_marked=None):
    """Perplexity against evaluation length, log-log, one line per label;
    also_marked: a second length to mark (a fine-tuning length)."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for i, lab in enumerate(labels):
        g = evals[(evals["label"] == lab) & evals["ppl"].notna()]
        if g.empty:
            continue
        xs = sorted(g["eval_ctx"].unique())
        groups = [g[g["eval_ctx"] == x]["ppl"].to_numpy() for x in xs]
        # bands only where few series share the axes: fourteen overlapping
        # bands hide every line (the thin per-seed lines still show spread)
        _band(ax, xs, groups, style(lab, i), lab, _per_seed(g, "eval_ctx", "ppl", xs), band=len(labels) <= 6)
    ax.axvline(train_ctx, color="grey", linewidth=0.8, linestyle=":", label=f"training length ({train_ctx})")
    if also_marked:
        ax.axvline(also_marked, color="grey", linewidth=0.8, linestyle="-.", label=f"fine-tuning length ({also_marked})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())
    _log_axis(ax.yaxis, *ax.get_ylim())
    ax.set_xlabel("evaluation length (tokens)")
    ax.set_ylabel("validation perplexity (mean" + (", 95% band" if len(labels) <= 6 else "") + "; thin: seeds)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(title, fontsize=10)
    return save(fig, stem)


def sweep_panels(runs_long, title, stem):
    """One panel per sweep: perplexity at each evaluation length against the value."""
    sweeps = list(dict.fromkeys(runs_long["sweep"]))
    fig, axes = plt.subplots(1, len(sweeps), figsize=(3.6 * len(sweeps), 3.8), squeeze=False)
    for ax, sw in zip(axes[0], sweeps):
        g = runs_long[runs_long["sweep"] == sw]
        for i, L in enumerate(sorted(g["eval_ctx"].unique())):
            h = g[(g["eval_ctx"] == L) & g["ppl"].notna()]
            xs = sorted(h["value"].astype(float).unique())
            groups = [h[h["value"].astype(float) == x]["ppl"].to_numpy() for x in xs]
            per_seed = _per_seed(h.assign(value=h["value"].astype(float)), "value", "ppl", xs)
            _band(ax, xs, groups, encoding_style(f"length {L}", i), f"ppl at {L}", per_seed)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _log_axis(ax.yaxis, *ax.get_ylim())
        values = sorted(g["value"].astype(float).unique())
        ax.set_xticks(values, [f"{v:g}" for v in values])   # the swept values, and only they
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(sw)
        ax.grid(alpha=0.3, which="both")
        ax.set_title(sw, fontsize=9)
    axes[0][0].set_ylabel("perplexity (mean, 95% band)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return save(fig, stem)


def task_heatmap(matrix, rows, cols, title, stem, why=None):
    """Mean accuracy, encodings × tasks, with a colour bar; a cell without a
    number is grey and says why (why[i, j]: 'not learned' or 'refused')."""
    fig, ax = plt.subplots(figsize=(1.2 * len(cols) + 3.6, 0.32 * len(rows) + 1.8))
    ax.set_facecolor("#d9d9d9")
    im = ax.imshow(np.ma.masked_invalid(matrix), cmap="viridis", vmin=0, vmax=1, aspect="auto")
    if why is not None:
        for (i, j), w in np.ndenumerate(why):
            if w:
                ax.text(j, i, w, ha="center", va="center", fontsize=5, color="#404040")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for (i, j), v in np.ndenumerate(matrix):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6, color="white" if v < 0.6 else "black")
    fig.colorbar(im, ax=ax, label="exact match (mean of seeds)")
    ax.set_title(title, fontsize=10)
    return save(fig, stem)


def task_lengths(task, title, stem, encodings):
    """Accuracy against instance size, one panel per task, one line per encoding."""
    tasks = list(dict.fromkeys(task["task"]))
    ncol = min(4, len(tasks))
    nrow = math.ceil(len(tasks) / ncol)
    # wide enough for the title and a legend of many series even with one task
    fig, axes = plt.subplots(nrow, ncol, figsize=(max(3.6 * ncol, 8.0), 3.2 * nrow + (1.0 if ncol == 1 else 0)),
                             squeeze=False, sharey=True)
    for k, t in enumerate(tasks):
        ax = axes[k // ncol][k % ncol]
        g = task[(task["task"] == t) & task["acc"].notna()]
        for i, pe in enumerate(encodings):
            h = g[g["pe"] == pe]
            if h.empty:
                continue
            xs = sorted(h["hi"].unique())
            groups = [h[h["hi"] == x]["acc"].to_numpy() for x in xs]
            _band(ax, xs, groups, encoding_style(pe, i), pe, [], band=len(encodings) <= 4)
        train_hi = task[(task["task"] == t) & task["train_range"]]["hi"].max()
        ax.axvline(train_hi, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(t, fontsize=9)
        ax.set_xlabel("largest instance size of the range")
        ax.grid(alpha=0.3)
    for k in range(len(tasks), nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
    axes[0][0].set_ylabel("exact match (mean" + (", 95% band)" if len(encodings) <= 4 else " over seeds)"))
    axes[0][0].legend(fontsize=6, ncol=2)
    fig.suptitle(textwrap.fill(title + " (dotted: largest training size)", 110), fontsize=10)
    return save(fig, stem)


def evaluations(evals, title, stem, long_ctx, window, labels, probes):
    """The panels an evaluate experiment has data for, side by side:
    - context use (a window): loss with the full window minus loss with at
      most `window` tokens of context at long_ctx, per encoding (mean, 95%
      interval, a tick per seed; below 0: the encoding uses the context past
      the window);
    - where attention goes (--attn-stats): the weight at distances ≥ D at
      long_ctx, mean over layers, heads and seeds, per encoding;
    - the position probe (--probe-positions): held-out R² at the input and
      after each block, per encoding (mean over seeds; thin: seeds)."""
    g = evals[evals["eval_ctx"] == long_ctx]
    dists_all = schema.attn_distances()
    has_far = any(f"far_{D}" in g and g[f"far_{D}"].notna().any() for D in dists_all)
    panels = [p for p, ok in (("window", bool(window)), ("far", has_far), ("probe", bool(probes))) if ok]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(6 * max(1, len(panels)), 0.32 * len(labels) + 2.6),
                             squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for y, lab in enumerate(labels):
            h = g[g["label"] == lab]
            st = encoding_style(lab, y)
            if lab.endswith(" bidir"):   # an order experiment's two modes: the same colour, bidirectional dashed
                st = {**st, "linestyle": "--", "markerfacecolor": "white"}
            if panel == "window":
                d = (h["loss"] - h["window_loss"]).dropna().to_numpy()
                e = stats.mean_ci(d)
                if e.n:
                    lo, hi = (e.lo, e.hi) if e.n > 1 else (e.mean, e.mean)
                    ax.errorbar([e.mean], [y], xerr=[[e.mean - lo], [hi - e.mean]], color=st["color"],
                                marker=st["marker"], capsize=3, markersize=5)
                    ax.plot(d, [y] * len(d), linestyle="none", marker="|", color=st["color"], alpha=0.6)
            elif panel == "far":
                dists = [D for D in dists_all if D < long_ctx and h[f"far_{D}"].notna().any()]
                if dists:
                    ax.plot(dists, [h[f"far_{D}"].mean() for D in dists], label=lab, markersize=4, **st)
            else:
                p0 = evals[(evals["label"] == lab) & (evals["eval_ctx"] == evals["eval_ctx"].min())]
                xs = list(range(len(probes)))
                groups = [p0[c].dropna().to_numpy() for c in probes]
                if any(len(v) for v in groups):
                    per_seed = [[float(r[c]) for c in probes] for _, r in p0.iterrows()]
                    _band(ax, xs, groups, st, lab, per_seed, band=len(labels) <= 6)
        if panel == "window":
            ax.axvline(0, color="grey", linewidth=0.8)
            ax.set_yticks(list(range(len(labels))), labels, fontsize=8)
            ax.invert_yaxis()
            ax.set_xlabel(f"loss with the full {long_ctx} − loss with ≤ {window} tokens of context (nats; < 0: uses it)")
            ax.grid(alpha=0.3, axis="x")
            ax.set_title(f"does the model use context past {window}? (mean, 95% interval; ticks: seeds)", fontsize=9)
        elif panel == "far":
            if "attn" not in evals or (evals["attn"] == "causal").all():
                ax.plot(dists_all, [uniform_attention(long_ctx, D) for D in dists_all], color="black",
                        linestyle=":", linewidth=1.2, label="uniform attention")
            ax.set_xscale("log", base=2)
            ax.set_xticks(dists_all, [str(D) for D in dists_all])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_ylim(0, 1.3)   # a share of the weight; linear, so that a share of 0 shows as 0; the legend above 1
            ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
            ax.set_xlabel("distance D (tokens)")
            ax.set_ylabel(f"attention weight at distance ≥ D, at {long_ctx}\n(mean over layers, heads, seeds)")
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7, ncol=4, loc="upper center")
            ax.set_title("where the attention goes", fontsize=9)
        else:
            ax.set_xticks(list(range(len(probes))), ["input"] + [f"block {i}" for i in range(1, len(probes))])
            ax.axhline(0, color="grey", linewidth=0.8)
            low = ax.get_ylim()[0]
            ax.set_ylim(max(-0.5, min(-0.1, low)), 1.02)   # a probe worse than the mean is worse than useless
            ax.set_ylabel("held-out R² of a linear probe of the position\n(mean" +
                          (", 95% band" if len(labels) <= 6 else "") + "; thin: seeds" +
                          ("; axis cut at −0.5" if low < -0.5 else "") + ")")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, ncol=2)
            ax.set_title("does the model know where a token is?", fontsize=9)
    fig.suptitle(title, fontsize=10)
    return save(fig, stem)


def rope_decay(frame, sizes, bases, title, stem, train_ctx=None):
    """RoFormer's bound against relative distance: a panel per head size, a
    line per base (log distance axis)."""
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4.2), squeeze=False, sharey=False)
    for ax, hs in zip(axes[0], sizes):
        for i, b in enumerate(bases):
            g = frame[(frame["head_size"] == hs) & (frame["base"] == b) & (frame["distance"] > 0)]
            r, v = g["distance"].to_numpy(), g["bound"].to_numpy()
            c = np.concatenate([[0.0], np.cumsum(v)])
            # its mean over distances within a factor 1.25 either side: the trend under the oscillation
            lo = np.searchsorted(r, r / 1.25, side="left")
            hi = np.searchsorted(r, r * 1.25, side="right")
            colour = _METHOD[i % len(_METHOD)]
            ax.plot(r, v, color=colour, linewidth=0.4, alpha=0.25)
            ax.plot(r, (c[hi] - c[lo]) / (hi - lo), color=colour, linewidth=1.8, label=f"base {b:g}")
        if train_ctx:
            ax.axvline(train_ctx, color="grey", linewidth=0.8, linestyle=":", label=f"training length ({train_ctx})")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_ylim(0, None)
        ax.set_xlabel("relative distance r (tokens)")
        ax.set_ylabel("(1/(hd/2)) Σ_j |S_j(r)|\n(thick: mean over r/1.25 … 1.25 r; thin: each r)")
        ax.set_title(f"head size {hs} ({hs // 2} frequencies)", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return save(fig, stem)


def scale_panels(evals, title, stem):
    """The ladder at a glance, one row of panels per training length: the loss
    at the training length against non-embedding parameters (log-log), and
    the extrapolation ratio ppl(16×) / ppl(1×) against them; one line per
    encoding, mean with its 95% interval (a band, or with many encodings
    error bars nudged apart along x), thin lines per seed."""
    ctxs = sorted(evals["train_ctx"].unique())
    fig, axes = plt.subplots(len(ctxs), 2, figsize=(11, 4.2 * len(ctxs)), squeeze=False)
    span = (evals["params"].min() / 1.3, evals["params"].max() * 1.3)   # one x range for every panel
    for row, L0 in zip(axes, ctxs):
        g = evals[evals["train_ctx"] == L0]
        labels = list(dict.fromkeys(g["pe"]))
        band = len(labels) <= 6
        for i, pe in enumerate(labels):
            h = g[g["pe"] == pe]
            nudge = 1.01 ** (i - (len(labels) - 1) / 2)   # each encoding's bars a little apart on the log axis
            xs = sorted(h["params"].unique())
            one = h[h["factor"] == 1]
            _band(row[0], xs, [one[one["params"] == x]["loss"].to_numpy() for x in xs], encoding_style(pe, i), pe,
                  _per_seed(one, "params", "loss", xs), band=band, bars_at=np.array(xs) * nudge)
            far = h[(h["factor"] == 16) & h["log_ratio"].notna()]
            if not far.empty:
                fx = sorted(far["params"].unique())
                ratio = far.assign(ratio=np.exp(far["log_ratio"]))
                _band(row[1], fx, [ratio[ratio["params"] == x]["ratio"].to_numpy() for x in fx], encoding_style(pe, i), pe,
                      _per_seed(ratio, "params", "ratio", fx), band=band, bars_at=np.array(fx) * nudge)
        row[1].axhline(1, color="grey", linewidth=0.8, linestyle=":")
        for ax, ylabel in ((row[0], f"validation loss at {L0} (nats per byte)"),
                           (row[1], f"ppl at {16 * L0} / ppl at {L0}")):
            ax.set_xscale("log")
            ax.set_xlim(*span)
            ax.set_yscale("log")
            _log_axis(ax.yaxis, *ax.get_ylim())
            ax.set_xlabel("non-embedding parameters")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3, which="both")
        row[0].set_title(f"trained at {L0}: loss against size", fontsize=9)
        row[1].set_title(f"trained at {L0}: extrapolation to 16× against size", fontsize=9)
        row[0].legend(fontsize=7, ncol=2)   # the left panel has every encoding (learned has no ratio)
    fig.suptitle(title, fontsize=10)
    return save(fig, stem)
