"""Each experiment's table (Markdown), CSV and figures, from its tidy tables.

One function per experiment kind; each returns the Markdown body and writes
its CSV and figures beside it. Numbers: mean ± 95% t-interval over seeds
(stats.mean_ci), n given; a metric a run did not produce is '—' or missing,
never 0."""
import math

import numpy as np
import pandas as pd

from . import figures, stats
from .runs import SOLVED


def _md(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _ordered(df, col):
    return list(dict.fromkeys(df[col]))


def order(name, t, stem, spec):
    runs, curve = t["runs"], t["curve"]
    runs[["pe", "attn", "seed", "order_acc", "eval_loss", "solve_step", "train_seconds"]].to_csv(f"{stem}.csv", index=False)
    curve[["pe", "attn", "seed", "step", "val_loss", "order_acc"]].to_csv(f"{stem}_curve.csv", index=False)
    rows = []
    for pe in _ordered(runs, "pe"):
        for mode in _ordered(runs[runs["pe"] == pe], "attn"):
            g = runs[(runs["pe"] == pe) & (runs["attn"] == mode)].sort_values("seed")
            solved = g["solve_step"].notna()
            lo, hi = stats.solved_fraction(int(solved.sum()), len(g))
            med = f"{g.loc[solved, 'solve_step'].median():.0f}" if solved.any() else "—"
            rows.append([pe, mode, f"{int(solved.sum())}/{len(g)} [{lo:.2f}, {hi:.2f}]", med,
                         stats.mean_ci(g["order_acc"], (0, 1)).fmt(3),
                         " ".join(f"{v:.2f}" for v in g["order_acc"])])
    figures.order_curves(curve, f"order accuracy during training, {name} ({runs['seed'].nunique()} seeds)", stem)
    return "\n".join([
        f"Solved: order_acc ≥ {SOLVED} at some point of the curve (every {spec.get('eval_every')} steps), with the "
        "Clopper–Pearson 95% interval of the solved fraction; steps to solve: the first such step, median over the "
        "solved seeds. Final order_acc: mean ± 95% t-interval over seeds, clipped to [0, 1]. Chance is 0.5 for a model "
        "that answers with one of the two nouns.", "",
        _md(["pe", "attn", "solved [95%]", "median steps to solve", "final order_acc", "per seed"], rows), "",
        f"![order]({stem.split('/')[-1]}.png)"])


def encodings(name, t, stem, spec):
    runs = t["runs"]
    text = runs["data"].iloc[0] if len(runs) else ""
    cats = text == "cats"
    runs[["pe", "seed", "params", "tokens_per_s", "final_loss", "eval_loss", "eval_ppl", "order_acc", "train_seconds"]].to_csv(f"{stem}.csv", index=False)
    header = ["pe", "n", "params", "train tokens/s", "val loss", "val ppl"] + (["order_acc", "solved (≥ 0.95)"] if cats else [])
    rows = []
    for pe in _ordered(runs, "pe"):
        g = runs[runs["pe"] == pe]
        r = [pe, len(g), f"{g['params'].iloc[0]:.0f}", stats.mean_ci(g["tokens_per_s"]).fmt(0),
             stats.mean_ci(g["eval_loss"]).fmt(4), stats.mean_ci(g["eval_ppl"]).fmt(3)]
        if cats:
            r += [stats.mean_ci(g["order_acc"], (0, 1)).fmt(3), f"{int((g['order_acc'] >= SOLVED).sum())}/{len(g)}"]
        rows.append(r)
    return ("Mean ± 95% t-interval over seeds; tokens/s is per run with the runs sharing the machine."
            + ("" if cats else " No order accuracy: the corpus is not cats.") + "\n\n" + _md(header, rows))


def _length_rows(evals, lengths):
    rows = []
    for lab in _ordered(evals, "label"):
        g = evals[evals["label"] == lab]
        cells = [lab, g["seed"].nunique()]
        for L in lengths:
            h = g[g["eval_ctx"] == L]
            if h.empty:
                cells.append("")
            elif h["ppl"].notna().any():
                cells.append(stats.mean_ci(h["ppl"]).fmt(3))
            else:
                cells.append("— (refused)")
        rows.append(cells)
    return rows


def _ratio_rows(evals, lengths):
    """ppl at L over ppl at the training length, per seed (paired), as a mean
    with its interval: how much worse a model gets with length, apart from
    how well it fits."""
    rows = []
    L0 = lengths[0]
    for lab in _ordered(evals, "label"):
        g = evals[evals["label"] == lab].pivot_table(index="seed", columns="eval_ctx", values="ppl")
        if L0 not in g:
            continue
        cells = [lab]
        for L in lengths[1:]:
            cells.append(stats.mean_ci(g[L] / g[L0]).fmt(2) if L in g else "— (refused)")
        rows.append(cells)
    return rows


def length(name, t, stem, spec):
    evals = t["evals"]
    lengths = sorted(evals["eval_ctx"].unique())
    evals[["label", "pe", "seed", "eval_ctx", "loss", "ppl", "refused"]].to_csv(f"{stem}.csv", index=False)
    text = evals["data"].iloc[0].split("/")[-1] if len(evals) else ""
    seeds = evals["seed"].nunique()
    if spec["kind"] == "finetune":
        long = spec["long"]
        figures.length_curves(evals, f"RoPE trained at {lengths[0]} on {text}, fine-tuned at {long} ({seeds} seeds)",
                              stem, lengths[0], _ordered(evals, "label"), style=figures.finetune_style, also_marked=long)
        what = (f"base: RoPE trained at {lengths[0]} for {spec['steps']} steps; base-eval (x): the same checkpoint "
                f"evaluated with `--rope-scale x`; fine-tuned (x): `--init` the base, `--ctx {long} --steps "
                f"{spec['ft_steps']} --lr {spec['ft_lr']} --warmup {spec['ft_steps'] // 10} --rope-scale x` (factor "
                f"{long}/{lengths[0]}, kept at every evaluation). ")
    else:
        figures.length_curves(evals, f"trained at {lengths[0]} on {text}, evaluated longer ({seeds} seeds)",
                              stem, lengths[0], _ordered(evals, "label"))
        what = "Rows named `x (s)` evaluate the same checkpoints with `--rope-scale s`. "
    return "\n".join([
        what + "Perplexity over non-overlapping windows of each length, each scored on its own; mean ± 95% "
        "t-interval over seeds; — = refused (a learned table has no rows past its length).", "",
        _md(["pe", "n"] + [str(L) for L in lengths], _length_rows(evals, lengths)), "",
        f"Extrapolation ratio: perplexity at L over perplexity at {lengths[0]}, per seed (paired), mean ± 95% interval "
        "(1 = no worse than at the training length).", "",
        _md(["pe"] + [f"{L}/{lengths[0]}" for L in lengths[1:]], _ratio_rows(evals, lengths)), "",
        f"![{name}]({stem.split('/')[-1]}.png)"])


def sweep(name, t, stem, spec):
    evals = t["evals"]
    evals[["sweep", "value", "seed", "eval_ctx", "ppl"]].to_csv(f"{stem}.csv", index=False)
    lengths = sorted(evals["eval_ctx"].unique())
    rows = []
    for sw in _ordered(evals, "sweep"):
        g = evals[evals["sweep"] == sw]
        for v in _ordered(g, "value"):
            h = g[g["value"] == v]
            rows.append([sw, v, h["seed"].nunique()] + [stats.mean_ci(h[h["eval_ctx"] == L]["ppl"]).fmt(3) for L in lengths])
    figures.sweep_panels(evals, f"one option varied at a time ({evals['seed'].nunique()} seeds)", stem)
    return "\n".join(["Each row changes one option and evaluates at the training length and 8×; mean ± 95% "
                      "t-interval over seeds.", "",
                      _md(["sweep", "value", "n"] + [f"ppl at {L}" for L in lengths], rows), "",
                      f"![sweep]({stem.split('/')[-1]}.png)"])


def tasks(name, t, stem, spec):
    task = t["task"]
    task[["task", "pe", "seed", "lo", "hi", "train_range", "acc"]].to_csv(f"{stem}.csv", index=False)
    names, pes = _ordered(task, "task"), _ordered(task, "pe")
    parts = ["Exact-match accuracy over the task's evaluation instances per size range; mean ± 95% t-interval over "
             "seeds, clipped to [0, 1]; — = refused (no positions that far)."]
    heat = np.full((len(pes), len(names)), math.nan)
    for r, title in ((0, "At the training sizes"), (1, "At 2× (the first test range)"), (2, "At 4× (the second test range)")):
        rows = []
        for i, pe in enumerate(pes):
            cells = [pe]
            for j, tk in enumerate(names):
                h = task[(task["pe"] == pe) & (task["task"] == tk) & (task["range"] == r)]
                if h.empty:
                    cells.append("")
                elif h["acc"].notna().any():
                    e = stats.mean_ci(h["acc"], (0, 1))
                    cells.append(e.fmt(2))
                    if r == 1:
                        heat[i, j] = e.mean
                else:
                    cells.append("—")
            rows.append(cells)
        rng = lambda tk: task[(task["task"] == tk) & (task["range"] == r)][["lo", "hi"]].iloc[0]
        header = ["pe"] + [f"{tk} ({rng(tk)['lo']}–{rng(tk)['hi']})" for tk in names]
        parts += ["", f"## {title}", "", _md(header, rows)]
    base = stem.split("/")[-1]
    figures.task_heatmap(heat, pes, names, f"{name}: accuracy at 2× the training sizes", stem)
    figures.task_lengths(task, f"{name}: accuracy against instance size", f"{stem}_length", pes)
    parts += ["", f"![accuracy at 2×]({base}.png)", "", f"![accuracy against size]({base}_length.png)"]
    return "\n".join(parts)


BUILDERS = {"order": order, "encodings": encodings, "length": length, "finetune": length, "sweep": sweep, "tasks": tasks}


def outputs(kind, stem):
    """The files BUILDERS[kind] writes for an experiment whose files start with stem."""
    figs = lambda s: [f"{s}.png", f"{s}.svg"]
    return {"order": [f"{stem}.md", f"{stem}.csv", f"{stem}_curve.csv"] + figs(stem),
            "encodings": [f"{stem}.md", f"{stem}.csv"],
            "length": [f"{stem}.md", f"{stem}.csv"] + figs(stem),
            "finetune": [f"{stem}.md", f"{stem}.csv"] + figs(stem),
            "sweep": [f"{stem}.md", f"{stem}.csv"] + figs(stem),
            "tasks": [f"{stem}.md", f"{stem}.csv"] + figs(stem) + figs(f"{stem}_length")}[kind]
