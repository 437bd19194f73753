"""The lab's commands for runs of your own (any --json files or run folders).

  lab/compare RUNS… --metric M --a K=V[,K=V…] --b K=V[,K=V…] [--at K=V] [--unpaired]
  lab/analyse RUNS… --out DIR [--by COL[,COL…]]

RUNS are --json files or folders (searched for *.json; a workflow run
folder's runs/ and evals/ qualify). Every scalar setting of a run's config
(pe, attn, data, ctx, seed, rope_scale, …) is a column to select on; a run
folder made by the workflow adds exp, arm and label.
"""
import argparse
import sys
from pathlib import Path

import pandas as pd

from . import figures, stats
from .runs import NoColumn, RunFileError, find_json, select_rows, tidy

# metric -> (table, the columns that tell a run's repeated measures apart)
METRICS = {"order_acc": ("runs", []), "final_loss": ("runs", []), "eval_ppl": ("runs", []), "eval_loss": ("runs", []),
           "solve_step": ("runs", []), "tokens_per_s": ("runs", []), "train_seconds": ("runs", []),
           "ppl": ("evals", ["eval_ctx"]), "loss": ("evals", ["eval_ctx"]), "acc": ("task", ["task", "range"]),
           "val_loss": ("curve", ["step"])}


def labels_from_path(p):
    """runs/EXP/ARM/SEED.json (or evals/…) as made by the workflow -> labels."""
    parts = Path(p).parts
    if len(parts) >= 4 and parts[-4] in ("runs", "evals") and Path(p).stem.isdigit():
        return {"exp": parts[-3], "arm": parts[-2], "label": parts[-2]}
    return {}


def load(paths):
    return tidy((p, labels_from_path(p)) for p in find_json(paths))


def parse_selection(text, flag):
    sel = {}
    for item in filter(None, (text or "").split(",")):
        if "=" not in item:
            raise SystemExit(f"compare: {flag} takes KEY=VALUE[,KEY=VALUE…], not '{item}'")
        k, v = item.split("=", 1)
        sel[k.strip()] = v.strip()
    return sel


def select(df, sel, what):
    try:
        return select_rows(df, sel)
    except NoColumn as e:
        raise SystemExit(f"compare: {what}: no column '{e.args[0]}' (columns: {', '.join(sorted(map(str, df.columns)))})")


def one_per_seed(df, metric, side, repeated):
    """The side's values indexed by seed; refuses repeated measures of a run."""
    dup = df[df.duplicated("seed", keep=False)]
    if not dup.empty:
        seed = dup["seed"].iloc[0]
        rows = df[df["seed"] == seed]
        varying = [c for c in rows.columns if c not in ("path", metric) and rows[c].astype(str).nunique() > 1]
        hint = (f"; each run has several values of {metric} ({', '.join(repeated)}): choose one with --at "
                + ",".join(f"{c}=…" for c in repeated)) if repeated else ""
        raise SystemExit(f"compare: side {side} has {len(rows)} rows for seed {seed} (they differ in: "
                         f"{', '.join(varying) or 'nothing'}); they are not independent samples, so they are not "
                         f"pooled{hint}. Narrow the selection.")
    return df.set_index("seed")[metric]


def compare_main(argv):
    ap = argparse.ArgumentParser(prog="lab/compare", description="Compare two selections of runs on one metric: "
                                 "paired by seed when both sides have the same seeds and data, Welch otherwise.")
    ap.add_argument("runs", nargs="+", help="--json files or folders")
    ap.add_argument("--metric", required=True, help="one of: " + ", ".join(METRICS))
    ap.add_argument("--a", required=True, help="side A: KEY=VALUE[,KEY=VALUE…]")
    ap.add_argument("--b", required=True, help="side B: KEY=VALUE[,KEY=VALUE…]")
    ap.add_argument("--at", default="", help="KEY=VALUE for both sides, e.g. eval_ctx=1024")
    ap.add_argument("--unpaired", action="store_true", help="Welch even when the seeds match")
    a = ap.parse_args(argv)
    if a.metric not in METRICS:
        raise SystemExit(f"compare: unknown metric '{a.metric}' (one of: {', '.join(METRICS)})")
    try:
        t = load(a.runs)
    except RunFileError as e:
        raise SystemExit(f"compare: {e}")
    table, repeated = METRICS[a.metric]
    df = t[table]
    if df.empty:
        raise SystemExit(f"compare: no run has {a.metric}")
    at = parse_selection(a.at, "--at")
    sides = {}
    for name, text in (("A", a.a), ("B", a.b)):
        sel = {**parse_selection(text, f"--{name.lower()}"), **at}
        sub = select(df, sel, f"side {name}")
        sub = sub[sub[a.metric].notna()]
        if sub.empty:
            have = "; ".join(f"{k} takes " + ", ".join(sorted(map(str, df[k].dropna().unique()))[:20])
                             for k in sel if k in df.columns)
            raise SystemExit(f"compare: side {name} ({text}) selects no run with {a.metric}"
                             + (f" (in these runs {have})" if have else ""))
        sides[name] = (sub, one_per_seed(sub, a.metric, name, [c for c in repeated if c not in at]))
    (da, va), (db, vb) = sides["A"], sides["B"]
    same_data = set(da["data"].astype(str)) == set(db["data"].astype(str)) and da["data"].nunique() == 1
    paired = not a.unpaired and set(va.index) == set(vb.index) and same_data and len(va) >= 2
    for name, text in (("A", a.a), ("B", a.b)):
        e = stats.mean_ci(sides[name][1])
        print(f"{name} ({text}{', ' + a.at if a.at else ''}): {a.metric} {e.fmt(4)} (mean ± 95% t-interval, n = {e.n})")
    if paired:
        c = stats.paired(va.sort_index(), vb.sort_index())
        how = f"paired by seed (seeds {', '.join(map(str, sorted(va.index)))}; same data)"
    else:
        c = stats.welch(va, vb)
        why = "asked for" if a.unpaired else ("the seeds differ" if set(va.index) != set(vb.index) else
                                             "the data differ" if not same_data else "fewer than 2 pairs")
        how = f"Welch (unpaired: {why})"
    print(f"A − B = {c.diff:.4f}, 95% interval [{c.lo:.4f}, {c.hi:.4f}]; {c.test}, {how}; n = {c.n_a} and {c.n_b}; "
          f"p = {c.p:.3g}")
    print(f"smallest |A − B| this n detects with 80% power (α = 0.05): {c.mde:.4f}")
    print(f"verdict: {c.verdict}" + (" (the interval excludes 0)" if c.verdict == "differ" else
                                     " (the interval includes 0)" if c.verdict == "not told apart" else ""))
    return 0


def _cell(values, digits):
    """mean ± half-width of its 95% interval; one run's value alone (n says how many)."""
    ci = stats.mean_ci(values)
    if ci.n == 0:
        return "—"
    return f"{ci.mean:.{digits}f}" if ci.n < 2 else ci.fmt(digits)


def summary_table(t, by, sources):
    """summary.md's table: one row per configuration, best first (by the
    perplexity at the first evaluation length, else the final loss): n, the
    perplexity at each length and the other metrics, each the mean ± its 95%
    t-interval over the configuration's runs."""
    runs, ev = t["runs"], t["evals"]
    lengths = sorted(int(x) for x in ev.loc[ev["ppl"].notna(), "eval_ctx"].unique()) if "ppl" in ev else []
    metrics = [m for m in ("final_loss", "order_acc", "solve_step") if m in runs and runs[m].notna().any()]
    evs = {k if isinstance(k, tuple) else (k,): g for k, g in ev.groupby(by, sort=False, dropna=False)} if lengths else {}
    rows = []
    for key, g in runs.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        e = evs.get(key)
        per_len = [e.loc[e["eval_ctx"] == L, "ppl"] if e is not None else [] for L in lengths]
        rank_by = stats.mean_ci(per_len[0]).mean if lengths else stats.mean_ci(g["final_loss"]).mean
        tps = g["tokens_per_s"].dropna() if "tokens_per_s" in g else []
        cells = ([str(k) for k in key] + [str(len(g))] + [_cell(v, 3) for v in per_len]
                 + [_cell(g[m], 0 if m == "solve_step" else 4) for m in metrics]
                 + [f"{tps.mean():.0f}" if len(tps) else "—"])
        rows.append((rank_by if rank_by == rank_by else float("inf"), cells))
    rows.sort(key=lambda r: r[0])
    head = ["rank"] + by + ["n"] + [f"ppl at {L}" for L in lengths] + metrics + ["tokens/s"]
    lines = [f"# {len(runs)} runs from {' '.join(sources)}", "",
             "Each configuration's runs: the mean ± the half-width of its 95% t-interval (one run: its value); best "
             f"first by {'the perplexity at ' + str(lengths[0]) if lengths else 'the final training loss'}; — = not "
             "measured by these runs; tokens/s: the mean throughput.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join([str(i)] + cells) + " |" for i, (_, cells) in enumerate(rows, 1)]
    return lines


def analyse_main(argv):
    ap = argparse.ArgumentParser(prog="lab/analyse", description="The lab's tables and figures for runs of your own.")
    ap.add_argument("runs", nargs="+", help="--json files or folders")
    ap.add_argument("--out", required=True, help="folder for the CSVs, summary.md and figures")
    ap.add_argument("--by", default="label", help="columns that name a configuration (default: label, i.e. the "
                                                  "workflow's arm, else the encoding)")
    a = ap.parse_args(argv)
    try:
        t = load(a.runs)
    except RunFileError as e:
        raise SystemExit(f"analyse: {e}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    by = a.by.split(",")
    runs = t["runs"]
    for c in by:
        if c not in runs.columns:
            raise SystemExit(f"analyse: no column '{c}'")
    for name, df in t.items():
        if not df.empty:
            df.to_csv(out / f"{name}.csv", index=False)
    lines = summary_table(t, by, a.runs)
    ev = t["evals"]
    if not ev.empty and ev["eval_ctx"].nunique() > 1:
        ev = ev.assign(label=ev[by].astype(str).agg(" ".join, axis=1))
        figures.length_curves(ev, "perplexity against evaluation length", str(out / "lengths"),
                              int(runs["ctx"].min()), list(dict.fromkeys(ev["label"])))
        lines += ["", "![lengths](lengths.png)"]
    cu = t["curve"]
    if not cu.empty and "val_loss" in cu and cu["val_loss"].notna().any():
        cu_l = cu.assign(label=cu[by].astype(str).agg(" ".join, axis=1))
        figures.loss_curves(cu_l, "validation loss during training (each configuration: mean, 95% band, seeds)",
                            str(out / "loss"))
        lines += ["", "![loss](loss.png)"]
    if not cu.empty and cu["order_acc"].notna().any():
        figures.order_curves(cu, "order accuracy during training", str(out / "order"))
        lines += ["", "![order](order.png)"]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("compare", "analyse"):
        raise SystemExit("usage: python3 -m pelab_lab.cli compare|analyse …")
    return {"compare": compare_main, "analyse": analyse_main}[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
