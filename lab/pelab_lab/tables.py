"""Each experiment's table (Markdown), CSV and figures, from its tidy tables.

One function per experiment kind; each returns the Markdown body and writes
its CSV and figures beside it. Numbers: mean ± 95% t-interval over seeds
(stats.mean_ci), n given; a metric a run did not produce is '—' or missing,
never 0."""
import math

import numpy as np
import pandas as pd

from . import decay, figures, schema, stats
from .baselines import byte_baselines, uniform_attention
from .runs import SOLVED

LEARNED = 0.95   # exact match at the training sizes for a seed's length generalisation to be read


def _md(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _ordered(df, col):
    return list(dict.fromkeys(df[col]))


def _steps(v):
    return "—" if math.isnan(v) else "not reached" if math.isinf(v) else f"{v:.0f}"


def order(name, t, stem, spec):
    runs, curve = t["runs"], t["curve"]
    runs[["pe", "attn", "seed", "solved", "solve_step", "solve_time", "order_acc", "eval_loss", "steps",
          "train_seconds"]].to_csv(f"{stem}.csv", index=False)
    curve[["pe", "attn", "seed", "step", "val_loss", "order_acc"]].to_csv(f"{stem}_curve.csv", index=False)
    cap = spec.get("cap")
    rows = []
    for pe in _ordered(runs, "pe"):
        for mode in _ordered(runs[runs["pe"] == pe], "attn"):
            g = runs[(runs["pe"] == pe) & (runs["attn"] == mode)].sort_values("seed")
            solved = g["solved"] == 1
            lo, hi = stats.solved_fraction(int(solved.sum()), len(g))
            med, mlo, mhi = stats.median_solve(g["solve_time"], solved)
            seeds = " ".join(f"{v:.0f}" if ok else f"✗{a:.2f}" for v, ok, a in zip(g["solve_step"], solved, g["order_acc"]))
            rows.append([pe, mode, len(g), f"{int(solved.sum())}/{len(g)} [{lo:.2f}, {hi:.2f}]",
                         f"{_steps(med)} [{_steps(mlo)}, {_steps(mhi)}]", seeds])
    figures.order_curves(curve, f"order accuracy during training, {name}", f"{stem}_acc")
    figures.solve_curves(runs, f"fraction of seeds solved against training step, {name} ({runs['seed'].nunique()} seeds)",
                         stem, cap)
    at = runs["solve_at"].dropna()
    thr = f"{at.iloc[0]:g}" if len(at) else f"{SOLVED:g}"
    return "\n".join([
        f"Time to solve: each run trains until order_acc ≥ {thr} at an evaluation point (every "
        f"{spec.get('eval_every')} steps; `--until-solved`), or until the cap of {cap} steps, where it counts as "
        "unsolved (censored). Solved by the cap: with the Clopper–Pearson 95% interval. Median steps to solve: the "
        "first step by which half the seeds had solved (Kaplan–Meier; every unsolved run stops at the same cap, so "
        "it is the plain fraction), with the distribution-free 95% interval from order statistics; 'not reached': "
        "beyond the cap. Per seed: the solve step, or ✗ and the order_acc at the cap. Chance is 0.5 for a model "
        "that answers with one of the two nouns.", "",
        _md(["pe", "attn", "n", "solved by the cap [95%]", "median steps to solve [95%]", "per seed"], rows), "",
        f"![fraction solved]({stem.split('/')[-1]}.png)", "", f"![order accuracy]({stem.split('/')[-1]}_acc.png)"])


def encodings(name, t, stem, spec):
    runs = t["runs"]
    text = runs["data"].iloc[0] if len(runs) else ""
    cats = text == "cats"
    runs[["pe", "seed", "params", "tokens_per_s", "final_loss", "eval_loss", "eval_ppl", "order_acc", "train_seconds"]].to_csv(f"{stem}.csv", index=False)
    header = ["pe", "n", "params", "train tokens/s", "val loss", "val ppl"] + (["order_acc", f"order_acc ≥ {SOLVED}"] if cats else [])
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


def _length_rows(evals, lengths, base):
    rows = []
    for lab in _ordered(evals, "label"):
        g = evals[evals["label"] == lab]
        cells = [lab, g["seed"].nunique()]
        for L in lengths:
            h = g[g["eval_ctx"] == L]
            if h.empty:
                cells.append("")
            elif h["ppl"].notna().any():
                k = int(h["collapsed"].sum())
                cells.append(stats.mean_ci(h["ppl"]).fmt(3) + (f" †{k}" if k else ""))
            else:
                cells.append("— (refused)")
        rows.append(cells)
    return rows + _baseline_rows(base, lengths, 1)


def _baseline_rows(base, lengths, blanks):
    """The yardsticks as table rows: a name, `blanks` empty cells, a value per length."""
    return [[what] + [""] * blanks + [f"{base[L][i]:.3f}" if L in base else "" for L in lengths]
            for i, what in enumerate(("byte unigram (baseline)", "byte bigram (baseline)")) if base]


def _baselines(evals, lengths, stem):
    """Byte-unigram and bigram perplexity at each length (baselines.py), the
    runs' `collapsed` column (ppl above the unigram's at that length), and
    {stem}_baselines.csv; a note for the table."""
    evals["collapsed"] = False
    data = evals["data_path" if "data_path" in evals else "data"].dropna()
    causal = set(evals.get("attn", pd.Series(["causal"]))) == {"causal"}
    base = byte_baselines(data.iloc[0], lengths, evals["eval_tokens"].max()) if len(data) and data.nunique() == 1 and causal else {}
    pd.DataFrame([{"eval_ctx": L, "unigram_ppl": u, "bigram_ppl": b} for L, (u, b) in base.items()],
                 columns=["eval_ctx", "unigram_ppl", "bigram_ppl"]).to_csv(f"{stem}_baselines.csv", index=False)
    if not base:
        return base, ("No baseline rows: the corpus file is not where the runs read it, is not bytes, or the runs "
                      "do not share one corpus and causal attention.")
    uni = evals["eval_ctx"].map(lambda L: base.get(int(L), (math.nan,))[0])
    evals["collapsed"] = evals["ppl"] > uni
    return base, ("Baselines: byte-unigram and byte-bigram models of the training split (Krichevsky–Trofimov "
                  "estimates), scored on the same validation bytes as the runs at each length. †k: k seeds worse "
                  "than the unigram at that length, that is, collapsed there.")


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
    base, base_note = _baselines(evals, lengths, stem)
    evals[["label", "pe", "seed", "eval_ctx", "loss", "ppl", "refused", "collapsed"]].to_csv(f"{stem}.csv", index=False)
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
        "t-interval over seeds; — = refused (a learned table has no rows past its length). " + base_note, "",
        _md(["pe", "n"] + [str(L) for L in lengths], _length_rows(evals, lengths, base)), "",
        f"Extrapolation ratio: perplexity at L over perplexity at {lengths[0]}, per seed (paired), mean ± 95% interval "
        "(1 = no worse than at the training length).", "",
        _md(["pe"] + [f"{L}/{lengths[0]}" for L in lengths[1:]], _ratio_rows(evals, lengths)), "",
        f"![{name}]({stem.split('/')[-1]}.png)"])


def sweep(name, t, stem, spec):
    evals = t["evals"]
    lengths = sorted(evals["eval_ctx"].unique())
    base, base_note = _baselines(evals, lengths, stem)
    evals[["sweep", "value", "seed", "eval_ctx", "ppl", "collapsed"]].to_csv(f"{stem}.csv", index=False)
    rows = []
    for sw in _ordered(evals, "sweep"):
        g = evals[evals["sweep"] == sw]
        for v in _ordered(g, "value"):
            h = g[g["value"] == v]
            cells = []
            for L in lengths:
                k = int(h[h["eval_ctx"] == L]["collapsed"].sum())
                cells.append(stats.mean_ci(h[h["eval_ctx"] == L]["ppl"]).fmt(3) + (f" †{k}" if k else ""))
            rows.append([sw, v, h["seed"].nunique()] + cells)
    rows += _baseline_rows(base, lengths, 2)
    figures.sweep_panels(evals, f"one option varied at a time ({evals['seed'].nunique()} seeds)", stem)
    return "\n".join(["Each row changes one option and evaluates at the training length and 8×; mean ± 95% "
                      "t-interval over seeds. " + base_note, "",
                      _md(["sweep", "value", "n"] + [f"ppl at {L}" for L in lengths], rows), "",
                      f"![sweep]({stem.split('/')[-1]}.png)"])


def tasks(name, t, stem, spec):
    task = t["task"]
    train_acc = task[task["range"] == 0].set_index(["task", "pe", "seed"])["acc"]
    task["learned"] = [bool(train_acc.get(k, math.nan) >= LEARNED) for k in zip(task["task"], task["pe"], task["seed"])]
    task[["task", "pe", "seed", "range", "lo", "hi", "train_range", "acc", "learned"]].to_csv(f"{stem}.csv", index=False)
    names, pes = _ordered(task, "task"), _ordered(task, "pe")
    parts = ["Exact-match accuracy over the task's evaluation instances per size range; mean ± 95% t-interval over "
             "seeds, clipped to [0, 1] (a clipped one shown as mean [low, high]); — = refused (no positions that far). A seed's test ranges are read only "
             f"where that seed learned the training sizes (≥ {LEARNED}); (k/n) says how many of the n did, 'not "
             "learned' that none did at this budget."]
    heat = np.full((len(pes), len(names)), math.nan)
    why = np.full((len(pes), len(names)), "", dtype=object)   # a blank cell's reason: not learned, or refused
    def times(r):   # "2×" when every run's range r ends at that multiple of its training sizes' end, else ""
        ends = task.pivot_table(index="path", columns="range", values="hi", aggfunc="first")
        k = (ends[r] / ends[0]).dropna().unique() if r in ends and 0 in ends else []
        return f"{k[0]:g}×" if len(k) == 1 else ""
    ordinal = {1: "first", 2: "second"}
    for r in (0, 1, 2):
        title = ("At the training sizes" if r == 0 else
                 f"At {times(r)} (the {ordinal[r]} test range)" if times(r) else f"At the {ordinal[r]} test range")
        rows = []
        for i, pe in enumerate(pes):
            cells = [pe]
            for j, tk in enumerate(names):
                h = task[(task["pe"] == pe) & (task["task"] == tk) & (task["range"] == r)]
                n_all = len(h)
                if r > 0 and h["acc"].notna().any():
                    h = h[h["learned"]]
                    if h.empty:
                        cells.append("not learned")
                        if r == 1:
                            why[i, j] = "not\nlearned"
                        continue
                if h.empty:
                    cells.append("")
                elif h["acc"].notna().any():
                    e = stats.mean_ci(h["acc"], (0, 1))
                    cells.append(e.fmt(2) if len(h) == n_all else
                                 f"{e.fmt(2) if len(h) > 1 else f'{e.mean:.2f}'} ({len(h)}/{n_all} learned)")
                    if r == 1:
                        heat[i, j] = e.mean
                else:
                    cells.append("—")
                    if r == 1:
                        why[i, j] = "refused"
            rows.append(cells)
        def rng(tk):   # the sizes of this range, or "each run's" where the runs differ (fine-tunes)
            h = task[(task["task"] == tk) & (task["range"] == r)][["lo", "hi"]].drop_duplicates()
            return f"{h.iloc[0]['lo']}–{h.iloc[0]['hi']}" if len(h) == 1 else "each run's training sizes"
        header = ["pe"] + [f"{tk} ({rng(tk)})" for tk in names]
        parts += ["", f"## {title}", "", _md(header, rows)]
    runs = t["runs"]
    if "solve_at" in runs and runs["solve_at"].notna().any() and "task" in runs:
        parts += ["", "## Learned first", "", _learned_first(runs)]
    else:
        parts += ["", "## Learned first", "", _learned_at_budget(task, t["runs"])]
    base = stem.split("/")[-1]
    first = f"{times(1)} the training sizes" if times(1) else "the first test range"
    figures.task_heatmap(heat, pes, names, f"{name}: accuracy at {first}", stem, why)
    figures.task_lengths(task, f"{name}: accuracy against instance size", f"{stem}_length", pes)
    parts += ["", f"![accuracy at {first}]({base}.png)", "", f"![accuracy against size]({base}_length.png)"]
    return "\n".join(parts)


BUDGET_SHARE = 0.9   # a task's budget is met when its best encoding learned it on this share of seeds (9 of 10)


def _budgets(runs):
    """Per task: (cap, [(pe, n, solved, step by which BUDGET_SHARE had solved)]),
    the encodings best first (most seeds solved, then the earlier step)."""
    out = {}
    for tk in _ordered(runs, "task"):
        g = runs[runs["task"] == tk]
        rows = []
        for pe in _ordered(g, "pe"):
            h = g[g["pe"] == pe]
            ok = h["solved"] == 1
            rows.append((pe, len(h), int(ok.sum()), stats.step_by_share(h["solve_time"], ok, BUDGET_SHARE), h))
        rows.sort(key=lambda r: (-r[2] / r[1], r[3]))
        cap = h["cap"].iloc[0] if "cap" in h and h["cap"].notna().any() else h["steps"].max()
        out[tk] = (int(cap), rows)
    return out


def _learned_first(runs, budgets=None):
    """The budget rule, per task: did the best encoding learn the training
    sizes on nine seeds in ten within the cap? A task where none did is
    reported, not judged (its test ranges are read only for the seeds that
    learned)."""
    thr = runs["solve_at"].dropna().iloc[0]
    rows = []
    for tk, (cap, enc) in (budgets or _budgets(runs)).items():
        pe, n, k, step, _ = enc[0]
        met = k >= BUDGET_SHARE * n
        lo, hi = stats.solved_fraction(k, n)
        rows.append([tk, cap, pe, f"{k}/{n} [{lo:.2f}, {hi:.2f}]", _steps(step),
                     "met" if met else f"not met: no encoding learned it on {BUDGET_SHARE:.0%} of the seeds"])
    return "\n".join([
        f"Each run trained until task_acc at the training sizes reached {thr:g} at an evaluation point "
        "(`--until-solved`), or to its task's cap. The budget is met where the task's best encoding (most seeds "
        f"learned) learned it on at least {BUDGET_SHARE:.0%} of the seeds; where it is not, the task was not learned "
        "at an affordable budget, and its test ranges say nothing about length generalisation.", "",
        _md(["task", "cap (steps)", "best encoding", "learned [95%]", f"step by which {BUDGET_SHARE:.0%} had",
             "budget"], rows)])


def _learned_at_budget(task, runs):
    """The budget rule for runs of a fixed number of steps: per task, did its
    best encoding learn the training sizes (exact match ≥ LEARNED at the end)
    on nine seeds in ten?"""
    steps = runs.set_index("path")["steps"] if "steps" in runs and "path" in runs else None
    first = task[task["range"] == 0]
    rows = []
    for tk in _ordered(first, "task"):
        g = first[first["task"] == tk]
        best = max(_ordered(g, "pe"), key=lambda pe: g[g["pe"] == pe]["learned"].mean())
        h = g[g["pe"] == best]
        k, n = int(h["learned"].sum()), len(h)
        lo, hi = stats.solved_fraction(k, n)
        budget = sorted({int(steps[p]) for p in g["path"] if steps is not None and p in steps}) if steps is not None else []
        rows.append([tk, ", ".join(map(str, budget)) or "?", best, f"{k}/{n} [{lo:.2f}, {hi:.2f}]",
                     "met" if k >= BUDGET_SHARE * n else f"not met: no encoding learned it on {BUDGET_SHARE:.0%} of the seeds"])
    return "\n".join([
        f"Each run trained its task's budget; a seed learned the task when its exact match at the training sizes was "
        f"≥ {LEARNED} at the end. The budget is met where the task's best encoding (most seeds learned) learned it on "
        f"at least {BUDGET_SHARE:.0%} of the seeds; where it is not, the task was not learned at this budget, and its "
        "test ranges say little about length generalisation.", "",
        _md(["task", "steps", "best encoding", "learned [95%]", "budget"], rows)])


def task_budget(name, t, stem, spec):
    """Learning curves that choose each task's budget (the tasks experiment's caps)."""
    runs, curve, task = t["runs"], t["curve"], t["task"]
    final = task[task["range"] == 0].set_index(["task", "pe", "seed"])["acc"]
    runs = runs.assign(acc=[final.get(k, math.nan) for k in zip(runs["task"], runs["pe"], runs["seed"])])
    runs[["task", "pe", "seed", "cap", "solved", "solve_step", "solve_time", "acc", "steps", "train_seconds"]] \
        .to_csv(f"{stem}.csv", index=False)
    curve[["task", "pe", "seed", "step", "task_acc"]].to_csv(f"{stem}_curve.csv", index=False)
    thr = runs["solve_at"].dropna().iloc[0] if runs["solve_at"].notna().any() else LEARNED
    rows, budgets = [], _budgets(runs)
    for tk, (cap, enc) in budgets.items():
        for pe, n, k, step, h in enc:
            h = h.sort_values("seed")
            ok = h["solved"] == 1
            lo, hi = stats.solved_fraction(k, n)
            med, mlo, mhi = stats.median_solve(h["solve_time"], ok)
            seeds = " ".join(f"{v:.0f}" if y else f"✗{a:.2f}" for v, y, a in zip(h["solve_step"], ok, h["acc"]))
            rows.append([tk, pe, n, f"{k}/{n} [{lo:.2f}, {hi:.2f}]", f"{_steps(med)} [{_steps(mlo)}, {_steps(mhi)}]",
                         _steps(step), seeds])
    caps = {tk: cap for tk, (cap, _) in budgets.items()}
    figures.solve_curves(runs, f"share of seeds that learned the training sizes against training step, {name}",
                         stem, caps, panel="task", share=BUDGET_SHARE)
    figures.task_curves(curve, f"exact match at the training sizes during training, {name}", f"{stem}_acc", thr)
    base = stem.split("/")[-1]
    return "\n".join([
        _learned_first(runs, budgets), "",
        "## Every encoding", "",
        "Learned by the cap: with the Clopper–Pearson 95% interval. Median steps to learn: the first step by which "
        "half the seeds had (every unlearned run stops at its task's cap, so it is the plain fraction), with the "
        "distribution-free 95% interval from order statistics; 'not reached': beyond the cap. Per seed: the step "
        f"it learned at, or ✗ and its exact match at the training sizes at the cap (over --task-eval instances).", "",
        _md(["task", "pe", "n", "learned by the cap [95%]", "median steps [95%]", f"step by which {BUDGET_SHARE:.0%} had",
             "per seed"], rows), "",
        f"![share of seeds learned]({base}.png)", "", f"![learning curves]({base}_acc.png)"])


def evaluate(name, t, stem, spec):
    evals, attn = t["evals"], t["attn"]
    lengths = sorted(evals["eval_ctx"].unique())
    base, base_note = _baselines(evals, lengths, stem)
    W = spec.get("window")
    probes = sorted((c for c in evals if c.startswith("probe_r2_")), key=lambda c: int(c.rsplit("_", 1)[1]))
    # long form: a row per run, length and context (full, or the window), so
    # that the ledger selects either side by its columns
    cols = ["label", "pe"] + [c for c in ("attn",) if c in evals] + ["seed", "eval_ctx", "context", "loss", "ppl",
            "collapsed", "sink", "sink_excess"] + schema.far_columns() + probes
    # the sink's weight above what uniform causal attention gives the first token (the ledger's sink claim)
    evals = evals.assign(sink_excess=[s - uniform_attention(int(L)) if a == "causal" else math.nan
                                      for s, L, a in zip(evals["sink"], evals["eval_ctx"],
                                                         evals["attn"] if "attn" in evals else ["causal"] * len(evals))])
    full = evals.assign(context="full")
    rows = [full]
    if W and evals["window_loss"].notna().any():
        win = evals[evals["window_loss"].notna()].assign(context=f"window {W}", loss=lambda d: d["window_loss"],
                                                         ppl=lambda d: d["window_ppl"])
        win[["sink", "sink_excess"] + schema.far_columns() + probes] = math.nan
        rows.append(win)
    long = pd.concat(rows, ignore_index=True)
    long[[c for c in cols if c in long]].to_csv(f"{stem}.csv", index=False)
    acols = ["label", "seed", "eval_ctx", "layer", "head", "sink"] + schema.far_columns()
    (attn[acols] if len(attn) else pd.DataFrame(columns=acols)).to_csv(f"{stem}_attn.csv", index=False)
    labels = _ordered(evals, "label")
    longer = [L for L in lengths if W and L > W]
    header, rows = ["pe", "n"], []
    for L in lengths:
        header.append(f"ppl at {L}")
        if L in longer:
            header += [f"ppl at {L}, ≤ {W} context", f"full − ≤ {W} at {L} (loss)"]
    for lab in labels:
        g = evals[evals["label"] == lab]
        cells = [lab, g["seed"].nunique()]
        for L in lengths:
            h = g[g["eval_ctx"] == L].sort_values("seed")
            k = int(h["collapsed"].sum())
            cells.append(stats.mean_ci(h["ppl"]).fmt(3) + (f" †{k}" if k else "") if h["ppl"].notna().any() else "— (refused)")
            if L in longer:
                cells.append(stats.mean_ci(h["window_ppl"]).fmt(3))
                c = stats.paired(h["loss"], h["window_loss"])
                sg = lambda v: f"{v:+.4f}".replace("-", "−")
                cells.append("—" if math.isnan(c.diff) else
                             f"{sg(c.diff)} [{sg(c.lo)}, {sg(c.hi)}]" if not math.isnan(c.lo) else sg(c.diff))
        rows.append(cells)
    rows += [r[:2] + sum(([c] + ([""] * 2 if L in longer else []) for L, c in zip(lengths, r[2:])), [])
             for r in _baseline_rows(base, lengths, 1)]
    parts = [f"The checkpoints of experiment `{spec.get('from')}` (the same seeds, so every comparison here is paired "
             "by seed: one model, the same validation targets), evaluated again. ppl at L: non-overlapping windows of L "
             "scored on their own, as in the extrapolation table."
             + (f" ≤ {W} context: the same windows and targets, each target scored with at most {W} tokens of context "
                f"(`--eval-window {W}`: sub-windows of {W} every {max(1, W // 8)} tokens, so a target past the first "
                f"{W} has {W - max(1, W // 8) + 1}–{W}). full − ≤ {W}: the loss with the full window minus the loss "
                f"with ≤ {W}, per seed, mean [95% interval]: below 0 the model uses context past {W}, above 0 the "
                "longer context harms it." if W else "")
             + " " + base_note, "",
             _md(header, rows)]
    if len(attn) and evals["sink"].notna().any():
        dists = [D for D in schema.attn_distances() if evals[f"far_{D}"].notna().any()]
        arows = []
        for lab in labels:
            g = evals[evals["label"] == lab]
            cells = [lab, g["seed"].nunique()]
            for L in lengths:
                cells.append(stats.mean_ci(g[g["eval_ctx"] == L]["sink"], (0, 1)).fmt(3))
            for D in dists:
                cells.append(stats.mean_ci(g[g["eval_ctx"] == lengths[-1]][f"far_{D}"], (0, 1)).fmt(3))
            arows.append(cells)
        causal = "attn" not in evals or (evals["attn"] == "causal").all()
        if causal:   # what a head spreading its weight evenly over the keys it sees would give
            arows.append(["uniform attention (baseline)", ""] + [f"{uniform_attention(L):.3f}" for L in lengths]
                         + [f"{uniform_attention(lengths[-1], D):.3f}" for D in dists])
        parts += ["", "Where the attention goes (`--attn-stats`): the weight on the window's first token (the sink), "
                  "averaged over the query rows after it, and the weight on keys at least D tokens away, averaged over "
                  "the rows that have such keys; each the mean over layers and heads, then mean ± 95% interval over "
                  f"seeds; per layer and head in `{stem.split('/')[-1]}_attn.csv`."
                  + (" Uniform attention: the same measures for a head that weighs every key it sees equally (causal: "
                     "row i sees i + 1 keys), the line between attending more and less than evenly." if causal else ""),
                  "",
                  _md(["pe", "n"] + [f"sink at {L}" for L in lengths] + [f"at ≥ {D}, at {lengths[-1]}" for D in dists],
                      arows)]
    if probes and evals[probes].notna().any().any():
        prow = []
        for lab in labels:
            g = evals[(evals["label"] == lab) & (evals["eval_ctx"] == lengths[0])]
            prow.append([lab, g["seed"].nunique()] + [stats.mean_ci(g[c]).fmt(3) for c in probes])
        parts += ["", f"Position probe (`--probe-positions`) at {lengths[0]}: a linear least-squares probe of each "
                  "token's index in its window from the input (token embedding plus any absolute encoding) and from "
                  "each block's output, fitted on the even validation windows and scored on the odd ones: held-out "
                  "R² (1: the position is read exactly; 0: no better than the mean position; it can be below 0), "
                  "mean ± 95% interval over seeds. What the tokens themselves say about their place shows at the "
                  "input.", "",
                  _md(["pe", "n", "input"] + [f"block {c.rsplit('_', 1)[1]}" for c in probes[1:]], prow)]
    evals[["label", "seed", "eval_ctx"] + probes].to_csv(f"{stem}_probe.csv", index=False)
    figures.evaluations(evals, f"{name}: {spec.get('from')}'s checkpoints, trained at {lengths[0]} "
                        f"({evals['seed'].nunique()} seeds)", stem, lengths[-1], W, labels, probes)
    parts += ["", f"![{name}]({stem.split('/')[-1]}.png)"]
    return "\n".join(parts)


def rope_decay(name, t, stem, spec):
    """RoFormer's bound against distance for each head size and base: from
    the formula, no runs (decay.py)."""
    sizes, bases, longest = spec.get("head_sizes", [16, 64]), spec.get("bases", [10000]), int(spec.get("longest", 4096))
    rs = np.arange(0, longest + 1)
    frame = pd.DataFrame([{"head_size": hs, "base": b, "distance": int(r), "bound": v}
                          for hs in sizes for b in bases for r, v in zip(rs, decay.rope_bound(hs, b, rs))])
    frame[frame["distance"].isin(decay.distances(longest))].to_csv(f"{stem}.csv", index=False)
    # the bound oscillates with r: its mean over each band of distances shows the trend
    bands = [(1, 16)] + [(a + 1, 4 * a) for a in (16, 64, 256, 1024, 4096, 16384) if 4 * a <= longest]
    rows = []
    for hs in sizes:
        for b in bases:
            g = frame[(frame["head_size"] == hs) & (frame["base"] == b)].set_index("distance")["bound"]
            rows.append([hs, f"{b:g}", f"{g.loc[0]:.2f}"] + [f"{g.loc[lo:hi].mean():.2f}" for lo, hi in bands])
    figures.rope_decay(frame[frame["distance"] > 0], sizes, bases, "RoPE's long-term decay (RoFormer §3.4.3): the "
                       "bound's mean against relative distance", stem, spec.get("train_ctx"))
    return "\n".join([
        "No runs: RoFormer's bound (Su et al. 2021, §3.4.3, their Figure 2) on the size of a RoPE head's score, "
        "(1/(hd/2)) Σ_{j=1}^{hd/2} |S_j(r)| with S_j(r) = Σ_{k<j} e^{i r θ_k} and θ_k = base^(−2k/hd), at relative "
        "distance r, for each head size hd and base of `--rope-base` in pelab's sweep: (hd/2 + 1)/2 at r = 0, and "
        "the score's size at r is at most hd/2 · max|h_{i+1} − h_i| times it. It oscillates with r, so the table "
        "gives its mean over bands of distances.", "",
        _md(["head size", "base", "r = 0"] + [f"r {lo}–{hi}" for lo, hi in bands], rows), "",
        f"![rope decay]({stem.split('/')[-1]}.png)"])


def _slope(x, y):
    """OLS slope of y on x with its 95% interval and n: (slope, lo, hi, n)."""
    slope, lo, hi, _, n = stats.slope_ci(x, y)
    return slope, lo, hi, n


def scale_frame(evals):
    """One row per run and evaluation length, with the ladder's columns:
    size, params (non-embedding), train_ctx, factor (eval_ctx / train_ctx),
    log_ppl, and the per-run extrapolation ratio log ppl(L) − log ppl(train)."""
    e = evals.copy()
    e["factor"] = (e["eval_ctx"] / e["train_ctx"]).round().astype(int)
    e["log_ppl"] = np.log(e["ppl"])
    base = e[e["factor"] == 1].set_index(["pe", "size", "train_ctx", "seed"])["log_ppl"]
    keys = list(zip(e["pe"], e["size"], e["train_ctx"], e["seed"]))
    e["log_ratio"] = e["log_ppl"] - [base.get(k, math.nan) for k in keys]
    return e


def scale(name, t, stem, spec):
    evals = scale_frame(t["evals"])
    lengths = sorted(evals["eval_ctx"].unique())
    base, base_note = _baselines(evals, lengths, stem)
    evals[["pe", "size", "params", "d_model", "layers", "train_ctx", "steps", "tokens", "seed", "eval_ctx", "factor",
           "loss", "ppl", "window_ppl", "log_ratio", "refused", "collapsed"]].to_csv(f"{stem}.csv", index=False)
    sizes = (evals[["size", "params", "d_model", "layers", "steps", "tokens"]].drop_duplicates("size")
             .sort_values("params"))
    runs = t["runs"]
    lr = {sz: g["lr"].iloc[0] for sz, g in runs.groupby("size")} if "lr" in runs else {}
    secs = runs.groupby(["size", "train_ctx"])["train_seconds"].sum() / 3600 if "train_seconds" in runs else {}
    budget = [[r.size, r.d_model, r.layers, f"{r.params:,}", f"{r.steps:,}", f"{r.tokens:,}",
               f"{r.tokens / r.params:.1f}", f"{lr.get(r.size, math.nan):.4g}",
               ", ".join(f"ctx {c}: {secs.get((r.size, c), math.nan):.2f}" for c in sorted(evals[evals["size"] == r.size]["train_ctx"].unique())),
               ", ".join(f"{evals[(evals['size'] == r.size) & (evals['train_ctx'] == c)]['seed'].nunique()}"
                         for c in sorted(evals[evals["size"] == r.size]["train_ctx"].unique()))]
              for r in sizes.itertuples()]
    parts = [
        f"The model-size ladder: {len(sizes)} sizes × {evals['pe'].nunique()} encodings, each run trained on the "
        "corpus's training files and scored on its held-out files at 1×, 4× and 16× its training length (the "
        "full window, and a sliding window of the training length). Tokens per size by the stated rule: "
        f"{float(spec.get('tokens', 0)):,.0f} · (N / N_smallest)^{float(spec.get('tokens_exponent', 1 / 3)):.4g}, N the non-embedding "
        f"parameters (12·d²·layers); lr = {spec.get('lr')} · (64 / d)^{spec.get('lr_exponent', 0.5)}. CPU hours: the "
        "runs' own training and evaluation time, one thread each. " + base_note, "",
        _md(["size", "d", "layers", "N", "steps", "tokens", "tokens per N", "lr", "CPU hours", "seeds"], budget)]
    for L0 in sorted(evals["train_ctx"].unique()):
        g = evals[evals["train_ctx"] == L0]
        szs = [s for s in sizes["size"] if s in set(g["size"])]
        for f, what in ((1, f"Perplexity at the training length ({L0}), mean ± 95% t-interval over seeds"),
                        (4, f"Extrapolation ratio at 4× ({4 * L0}): ppl(4×) / ppl(1×) per seed, mean ± 95% interval"),
                        (16, f"Extrapolation ratio at 16× ({16 * L0}): ppl(16×) / ppl(1×) per seed, mean ± 95% interval")):
            rows = []
            for pe in _ordered(g, "pe"):
                cells = [pe]
                for sz in szs:
                    h = g[(g["pe"] == pe) & (g["size"] == sz) & (g["factor"] == f)]
                    if f == 1:
                        k = int(h["collapsed"].sum())
                        cells.append(stats.mean_ci(h["ppl"]).fmt(3) + (f" †{k}" if k else ""))
                    else:
                        cells.append(stats.mean_ci(np.exp(h["log_ratio"])).fmt(2) if h["log_ratio"].notna().any()
                                     else "— (refused)")
                rows.append(cells)
            parts += ["", what + ".", "", _md(["pe"] + szs, rows)]
    fit_rows, fits, beyond_rows = [], [], []
    beyond = 10.0   # how far past the largest size the fitted lines are read (extrapolation)
    for L0 in sorted(evals["train_ctx"].unique()):
        g = evals[evals["train_ctx"] == L0]
        if g["size"].nunique() < 2:
            continue
        n_far = beyond * float(g["params"].max())
        for pe in _ordered(g, "pe"):
            h = g[g["pe"] == pe]
            one = h[h["factor"] == 1]
            a, alo, ahi, n = _slope(np.log(one["params"]), np.log(one["loss"]))
            row = {"pe": pe, "train_ctx": L0, "n": n, "loss_exponent": a, "loss_exponent_lo": alo, "loss_exponent_hi": ahi}
            cells = [pe, L0, n, f"{-a:.3f} [{-ahi:.3f}, {-alo:.3f}]" if np.isfinite(a) else "—"]
            # the same lines read at beyond × the largest N: exp of the fitted log loss, as a perplexity; the ratio
            ppl = [math.exp(math.exp(v)) for v in stats.fit_at(np.log(one["params"]), np.log(one["loss"]), math.log(n_far))]
            row.update({"far_params": n_far, "far_ppl": ppl[0], "far_ppl_lo": ppl[1], "far_ppl_hi": ppl[2]})
            far = [pe, L0, f"{ppl[0]:.2f} [{ppl[1]:.2f}, {ppl[2]:.2f}]" if np.isfinite(ppl[0]) else "—"]
            for f in (4, 16):
                r = h[h["factor"] == f]
                b, blo, bhi, m = _slope(np.log(r["params"]), r["log_ratio"])
                row.update({f"ratio{f}_slope": b, f"ratio{f}_slope_lo": blo, f"ratio{f}_slope_hi": bhi})
                cells.append(f"{b:+.3f} [{blo:+.3f}, {bhi:+.3f}]" if np.isfinite(b) else "—")
                q = [math.exp(v) for v in stats.fit_at(np.log(r["params"]), r["log_ratio"], math.log(n_far))]
                row.update({f"far_ratio{f}": q[0], f"far_ratio{f}_lo": q[1], f"far_ratio{f}_hi": q[2]})
                far.append(f"{q[0]:.2f} [{q[1]:.2f}, {q[2]:.2f}]" if np.isfinite(q[0]) else "—")
            fits.append(row)
            fit_rows.append(cells)
            beyond_rows.append(far)
    pd.DataFrame(fits).to_csv(f"{stem}_fit.csv", index=False)
    if fit_rows:
        parts += ["", "Trends with size, per encoding: the power law loss ∝ N^−α fitted by least squares to every run's "
                  "loss at the training length (log loss on log N; α with its 95% interval), and the slope of the log "
                  "extrapolation ratio against log N (0: the ratio does not change with size; negative: larger models "
                  "extrapolate better). A fit over the sizes this table has, not beyond them.", "",
                  _md(["pe", "train ctx", "runs", "α (loss ∝ N^−α)", "slope of log ratio 4×", "slope of log ratio 16×"],
                      fit_rows),
                  "", f"**Extrapolation, not measurement.** The same lines read at {beyond:g}× the largest model trained "
                  f"at each length (N = {beyond * evals['params'].max():,.0f} at the largest): the perplexity at the "
                  "training length and the extrapolation ratios the fitted trends give there, each with the 95% "
                  "interval of the fitted line (not of one run). No model of that size was trained; the interval "
                  "assumes the trend stays a straight line in log N, which nothing here tests.", "",
                  _md(["pe", "train ctx", f"ppl at {beyond:g}× N", f"ratio 4× at {beyond:g}× N",
                       f"ratio 16× at {beyond:g}× N"], beyond_rows)]
    figures.scale_panels(evals, f"{name}: loss and extrapolation against model size", stem)
    parts += ["", f"![{name}]({stem.split('/')[-1]}.png)"]
    return "\n".join(parts)

