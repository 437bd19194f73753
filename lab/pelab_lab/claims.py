"""The claims ledger, computed: lab/claims.yaml declares each paper's claim
and the comparisons that test it; this module reads the experiments' CSVs in
a results folder, computes every comparison and gives each one, and each
claim, a verdict by one fixed rule (RULE below). docs/claims.md is its
output and is never edited by hand.

  python3 -m pelab_lab.claims lab/claims.yaml RESULTS [--out FILE] [--check FILE]

--check FILE: exit 1, saying which lines differ, when FILE is not what the
results give (CI runs it on the committed results/ and docs/claims.md).
"""
import argparse
import datetime
import difflib
import math
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from . import stats
from .runs import NoColumn, select_rows

RULE = """Every comparison is "A − B", A and B named, on the metric the row names;
paired by seed where both sides are the same seeds on the same data (the
t-interval of the per-seed differences), Welch otherwise, or a one-sample
t-interval against a constant. Within a claim, the comparisons' p-values are
Holm-adjusted (family-wise α = 0.05); the interval shown is the unadjusted
95% interval. Each comparison's verdict:

- **consistent**: the Holm-adjusted p < 0.05 and the estimate lies in the paper's direction;
- **contrary**: the Holm-adjusted p < 0.05 and the estimate lies the other way;
- where the paper claims no difference (A − B = 0): **contrary** when separated from 0, else **inconclusive**
  (a test cannot confirm an equality without a margin the paper does not give);
- where the paper claims a bound, A no better than B (A − B ≥ 0, or ≤ 0): **consistent** when separated
  from 0 on the bound's side, **contrary** when separated on the other, else **inconclusive** (as for an
  equality);
- **inconclusive**: not separated from 0, and the paper's effect is at least the smallest effect this n
  detects with 80% power (or the paper gives no number to compare: its effect is then taken as detectable;
  or its number is in a unit with no honest conversion to the row's metric: "effect not comparable");
- **underpowered**: not separated from 0, and the paper's effect, converted to the row's metric, is smaller
  than what this n detects;
- **not testable here**: a precondition fails. The code applies these to every comparison, whatever the
  declaration says (a declaration may add one, never remove one):
  - *collapse*: both sides are worse than the byte-unigram model at their length on the majority of their
    seeds, judged on each side's absolute perplexity (also where the row compares ratios of lengths);
  - *not learned*: on a read past a task's training sizes, a seed whose model did not learn the training
    sizes (exact match ≥ 0.95) is left out, and said so with its difference; a declaration may require the
    same of the experiment whose checkpoints a row evaluates (learned in EXP);
  - *fewer than 2 pairs* (or runs) remain;
  - *scale*: the claim declares the least scale its mechanism needs (e.g. 3 layers) and pelab's models,
    read from the table's own command, are smaller.

A claim's verdict: contrary if any comparison is contrary; consistent if every testable comparison is;
not testable here if none is testable; otherwise inconclusive if any comparison is, else underpowered.
A claim of existence ("some base other than 10000 helps", declared holds_if: some) is consistent if any
testable comparison is, contrary if every one is contrary. Prose below a claim may explain its verdict,
never change it."""

REDECLARED = "**Re-declared after the data**"
VERDICTS = ("consistent", "contrary", "inconclusive", "underpowered", "not testable here")
ALPHA = stats.ALPHA


class ClaimError(Exception):
    pass


# ---- reading ----

def _read(results, exp):
    path = Path(results) / f"{exp}.csv"
    if not path.is_file():
        raise ClaimError(f"{path}: no such table; make it with `make experiments ONLY={exp}`")
    df = pd.read_csv(path)
    if "ppl" in df and "log_ppl" not in df:
        df["log_ppl"] = np.log(df["ppl"])
    if "acc" in df and "train_range" in df:
        df["train_range"] = df["train_range"].astype(str).str.lower().isin(("1", "true"))
    return df


def _baseline(results, exp):
    path = Path(results) / f"{exp}_baselines.csv"
    if not path.is_file():
        return {}
    b = pd.read_csv(path)
    return dict(zip(b["eval_ctx"].astype(int), b["unigram_ppl"]))


def provenance(results, exp):
    """The line of results/EXP.md that says how and where the table was made."""
    path = Path(results) / f"{exp}.md"
    if not path.is_file():
        return "no table"
    text = path.read_text()
    made = re.search(r"^Made by: (.*?)\.?$", text, re.M)
    for line in text.splitlines():
        m = re.match(r"(Workflow|Command):.*? — (.*?)(;|$)", line)
        if m:
            return m.group(2).strip() + (f"; made by {made.group(1)}" if made else "")
    return "unknown"


def _match(df, sel, where):
    try:
        return select_rows(df, sel)
    except NoColumn as e:
        raise ClaimError(f"{where}: the table has no column '{e.args[0]}' (columns: {', '.join(df.columns)})")


def _one(df, sel, where):
    sub = _match(df, sel, where)
    if sub.empty:
        raise ClaimError(f"{where}: selects no rows ({sel})")
    if sub["seed"].duplicated().any():
        raise ClaimError(f"{where}: several rows per seed ({sel}); name the length, range or arm that tells them apart")
    return sub.set_index("seed")


def _side(df, sel, metric, where):
    """The rows of one side, by seed. A side with `minus: {…}` is the
    per-seed difference of two selections of the same runs (a log ratio when
    the metric is log_ppl: perplexity at L over perplexity at the training
    length, so that fit and extrapolation are told apart)."""
    sel = dict(sel)
    minus = sel.pop("minus", None)
    a = _one(df, sel, where).copy()
    a["_abs"] = a[metric].astype(float)   # the first selection's own value: a ratio row's collapse is judged on it
    if minus is None:
        return a
    b = _one(df, {**sel, **minus}, f"{where} (minus)")
    seeds = a.index.intersection(b.index)
    a = a.loc[seeds].copy()
    a[metric] = a[metric].astype(float) - b.loc[seeds, metric].astype(float)
    if "learned" in a and "learned" in b:
        a["learned"] = a["learned"].astype(bool) & b.loc[seeds, "learned"].astype(bool)
    return a


# ---- computing ----

def _sd_for_power(d):
    d = np.asarray(d, dtype=float)
    return float(d.std(ddof=1)) if len(d) >= 2 else math.nan


def n_needed(effect, sd):
    """Pairs (or runs) a one-sample/paired t-test needs to detect `effect`
    with 80% power at α = 0.05, given the spread seen; NaN when unknown."""
    if effect is None or not np.isfinite(sd) or effect == 0:
        return math.nan
    d = abs(effect) / sd if sd > 0 else math.inf
    if d > 10:   # far beyond any spread: the fewest pairs a t-test takes (the solver fails out there)
        return 2.0
    return float(TTestPower().solve_power(effect_size=d, alpha=ALPHA, power=stats.POWER, alternative="two-sided"))


def _side_of(results, spec, sel, at, where):
    """A side's rows: from the claim's experiment, or from the one its `exp`
    names; with the unigram baseline of that experiment and its name."""
    sel = {**at, **sel}
    exp = sel.pop("exp", spec["experiment"])
    return _side(_read(results, exp), sel, spec["metric"], where), _baseline(results, exp), exp


def collapsed(rows, base):
    """A side is collapsed when its perplexity at its length is worse than the
    byte-unigram model's there on the majority of its seeds; judged on the
    absolute perplexity of the side's own selection (a ratio row's too).
    None when the side has no perplexity or its table no baseline."""
    if "_abs" not in rows or "eval_ctx" not in rows or not base:
        return None
    u = base.get(int(rows["eval_ctx"].iloc[0]))
    if u is None:
        return None
    worse = rows["_abs"].astype(float) > math.log(u)
    return bool(worse.mean() > 0.5)


def _reads_past_training(rows):
    """A task side that reads sizes past the training ones (a length
    generalisation read): only there does 'not learned' apply, since at the
    training sizes learning them is what is measured."""
    return "train_range" in rows and not bool(rows["train_range"].astype(bool).all())


def _learned_seeds(rows):
    return {s for s in rows.index if bool(rows.loc[s, "learned"])}


def _learned_in(results, exp, side_sel, rows):
    """Seeds whose model learned the training sizes in experiment `exp` (a
    declared precondition: the density rows read checkpoints that `exp`
    trained); the side's encoding is its label's first word."""
    ref = _read(results, exp)
    pe = str(side_sel.get("pe", "")).split(" (")[0]
    m = ref[(ref["pe"] == pe) & (ref["range"] == 0)]
    if "task" in side_sel:
        m = m[m["task"] == side_sel["task"]]
    ok = set(m.loc[m["learned"].astype(bool), "seed"])
    return {s for s in rows.index if s in ok}


def compare(results, spec, c, where):
    """One comparison -> dict of numbers, and the precondition that failed
    (or None). The preconditions of RULE are applied here to every
    comparison, whatever the declaration says; a declaration may add
    `learned_in` (the checkpoints' own training experiment) and the claim's
    `needs` (scale), never take one away."""
    metric = spec["metric"]
    at = {**spec.get("at", {}), **c.get("at", {})}
    a, base_a, exp_a = _side_of(results, spec, c["a"], at, f"{where}, A")
    out = {"a": c.get("a_name") or _name(c["a"]), "b": c.get("b_name") or (_name(c["b"]) if "b" in c else f"{c['value']}"),
           "failed": None, "predicts": c.get("predicts", spec["predicts"]), "note": "", "exps": {exp_a}}
    declared = [p for p in spec.get("preconditions", []) if isinstance(p, dict) and "learned_in" in p]
    sides = [(a, {**at, **c["a"]})]
    if "b" in c:
        b, base_b, exp_b = _side_of(results, spec, c["b"], at, f"{where}, B")
        out["exps"].add(exp_b)
        sides.append((b, {**at, **c["b"]}))
    # not learned: a seed whose model did not learn the training sizes is left out of a read past them
    keep = None
    why_lost = []
    where_learned = ""
    for rows, sel in sides:
        ok = set(rows.index)
        if metric == "acc" and "learned" in rows and _reads_past_training(rows):
            ok &= _learned_seeds(rows)
        for d in declared:
            ok &= _learned_in(results, d["learned_in"], sel, rows)
            where_learned = f" (learned in `{d['learned_in']}`)"
        keep = ok if keep is None else keep & ok
    if "b" in c:
        design = c.get("design", spec.get("design", "paired"))
        both = sorted(set(a.index) & set(b.index))
        seeds = [s for s in both if s in keep]
        lost = [s for s in both if s not in keep]
        if lost:
            dl = a.loc[lost, metric].astype(float).to_numpy() - b.loc[lost, metric].astype(float).to_numpy()
            mean = float(np.nanmean(dl)) if np.isfinite(dl).any() else math.nan
            why_lost.append(f"{len(lost)} seed(s) left out, not learned at the training sizes{where_learned}"
                            + (f" (their A − B: mean {_num(mean)})" if np.isfinite(mean) else ""))
        if all(collapsed(rows.loc[[s for s in rows.index if s in keep]], base)
               for rows, base in ((a, base_a), (b, base_b))):
            out["failed"] = "collapse: both sides worse than the byte-unigram model on most seeds"
        va, vb = a.loc[seeds, metric].astype(float), b.loc[seeds, metric].astype(float)
        if design == "paired":
            r = stats.paired(va.to_numpy(), vb.to_numpy())
            sd = _sd_for_power(va.to_numpy() - vb.to_numpy())
        else:
            xa = a.loc[[s for s in a.index if s in keep], metric].astype(float)
            xb = b.loc[[s for s in b.index if s in keep], metric].astype(float)
            r = stats.welch(xa.to_numpy(), xb.to_numpy())
            sd = math.sqrt((np.var(xa, ddof=1) + np.var(xb, ddof=1)) / 2) if len(xa) > 1 and len(xb) > 1 else math.nan
        out.update(design="paired t" if design == "paired" else "Welch t", est=r.diff, lo=r.lo, hi=r.hi,
                   n=r.n_a if design == "paired" else f"{r.n_a} and {r.n_b}", p=r.p, mde=r.mde, sd=sd,
                   n_pairs=min(r.n_a, r.n_b))
    else:
        seeds = [s for s in a.index if s in keep]
        lost = [s for s in a.index if s not in keep]
        if lost:
            why_lost.append(f"{len(lost)} seed(s) left out, not learned at the training sizes")
        va = a.loc[seeds, metric].astype(float)
        d = va.to_numpy() - float(c["value"])
        r = stats.paired(d, np.zeros(len(d)))
        out.update(design="one-sample t", est=r.diff, lo=r.lo, hi=r.hi, n=r.n_a, p=r.p, mde=r.mde,
                   sd=_sd_for_power(d), n_pairs=r.n_a)
    out["note"] = "; ".join(why_lost)
    if out["n_pairs"] < 2 and not out["failed"]:
        out["failed"] = ("not learned: fewer than 2 seeds learned the training sizes" if why_lost
                         else "fewer than 2 seeds to compare")
    if out["failed"] is None and out["sd"] == 0 and np.isfinite(out["est"]):
        out["p"] = 0.0 if out["est"] != 0 else 1.0   # no spread: the difference is exact
    return out


def _name(sel):
    parts = [f"{v}" if k in ("label", "pe", "task") else f"{k} {v}" for k, v in sel.items() if k != "minus"]
    text = ", ".join(parts)
    if "minus" in sel:
        text = f"({text} − {', '.join(f'{k} {v}' for k, v in sel['minus'].items())})"
    return text


def effect_in_metric(value, decl):
    """The paper's effect in the row's metric: its value times the
    declaration's `to_metric` (e.g. per token → per byte); None where the
    paper gives no number or no honest conversion exists (comparable: false)."""
    if value is None or decl.get("comparable", True) is False:
        return None
    return float(value) * float(decl.get("to_metric", 1.0))


def verdict_of(c, predicts, effect, comparable=True):
    if c["failed"]:
        return "not testable here"
    if not comparable and predicts in ("<", ">") and not c["p_holm"] < ALPHA:
        return "inconclusive"   # effect not comparable: no power verdict

    if predicts == "=":   # a claim of no difference: refuted by a separated one, never confirmed by a test
        return "contrary" if c["p_holm"] < ALPHA else "inconclusive"
    if predicts in ("≥", "≤"):   # a bound: decided by a separated difference only, either way
        if c["p_holm"] >= ALPHA:
            return "inconclusive"
        return "consistent" if (c["est"] > 0) == (predicts == "≥") else "contrary"
    if c["p_holm"] < ALPHA:
        return "consistent" if (c["est"] < 0) == (predicts == "<") else "contrary"
    if effect is None or not np.isfinite(c["mde"]) or abs(effect) >= c["mde"]:
        return "inconclusive"
    return "underpowered"


def claim_verdict(vs, holds_if="every"):
    """holds_if 'every' (the default): the claim says each comparison goes the
    paper's way; 'some': it says at least one does (an existence claim: "a
    base other than 10000 helps")."""
    testable = [v for v in vs if v != "not testable here"]
    if not testable:
        return "not testable here"
    if holds_if == "some":
        if "consistent" in testable:
            return "consistent"
        if all(v == "contrary" for v in testable):
            return "contrary"
    else:
        if "contrary" in testable:
            return "contrary"
        if all(v == "consistent" for v in testable):
            return "consistent"
    return "inconclusive" if "inconclusive" in testable else "underpowered"


# ./train's defaults for what a table's example command leaves out
TRAIN_DEFAULTS = {"d-model": 64, "layers": 2, "ctx": 64, "batch": 16}


def pelab_scale(results, exp, seen=()):
    """The scale of experiment exp's models, read from the command its table
    gives as an example (./train's defaults for what it leaves out); an
    evaluation's from the experiment whose checkpoints it loads:
    {d_model, layers, params (non-embedding, 12·d²·layers), ctx, tokens}."""
    path = Path(results) / f"{exp}.md"
    if not path.is_file():
        return {}
    m = re.search(r"e\.g\. `([^`]*)`", path.read_text())
    if not m:
        return {}
    words = shlex.split(m.group(1))
    opts = {w[2:]: words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("--")}
    load = opts.get("load", "")
    lm = re.match(r"runs/([A-Za-z0-9_-]+)/", load)
    if lm and lm.group(1) != exp and lm.group(1) not in seen:
        return pelab_scale(results, lm.group(1), seen + (exp,))
    num = lambda k: int(float(opts.get(k, TRAIN_DEFAULTS.get(k, 0)) or 0))
    d, layers, ctx = num("d-model"), num("layers"), num("ctx")
    out = {"d_model": d, "layers": layers, "params": 12 * d * d * layers, "ctx": ctx}
    if "steps" in opts and not str(opts.get("data", "")).startswith("task:") and opts.get("data"):
        out["tokens"] = num("steps") * num("batch") * ctx
    return out


def scale_shortfall(needs, scales):
    """What the sides' models lack of the claim's `needs` (e.g. layers ≥ 3), or ''."""
    short = []
    for key, want in needs.items():
        have = min((s.get(key, 0) for s in scales if s), default=0)
        if have < want:
            short.append(f"{key} {have} < {want}, the least the paper's mechanism needs")
    return "; ".join(short)


def scale_text(sc):
    if not sc:
        return "—"
    parts = [f"{sc['params'] / 1e6:.2g}M non-embedding parameters", f"{sc['layers']} layers", f"ctx {sc['ctx']}"]
    if sc.get("tokens"):
        parts.append(f"{sc['tokens'] / 1e6:.2g}M training tokens")
    return ", ".join(parts)


def evaluate(claims, results, missing=None):
    """Every claim's comparisons and verdicts; `missing` collects the
    comparisons that could not be computed (and why)."""
    missing = [] if missing is None else missing
    out = []
    for cl in claims:
        where = f"claim {cl['id']}"
        comps = []
        for i, c in enumerate(cl["comparisons"]):
            try:
                comps.append(compare(results, cl, c, f"{where}, comparison {i + 1}"))
            except ClaimError as err:   # a table not (yet) made by the workflow, or without the columns it needs
                missing.append(str(err))
                comps.append({"a": c.get("a_name") or _name(c["a"]), "b": c.get("b_name") or _name(c.get("b", {})),
                              "predicts": c.get("predicts", cl["predicts"]), "design": "—", "n": "—",
                              "est": math.nan, "lo": math.nan, "hi": math.nan, "mde": math.nan, "sd": math.nan,
                              "p": math.nan, "failed": f"not computed: {str(err).split(': ', 1)[-1]}"})
        scale = {e: pelab_scale(results, e) for e in sorted({x for c in comps for x in c.get("exps", ())})}
        for c in comps:   # the claim's declared scale precondition, before Holm: a comparison it fails is not in the family
            short = scale_shortfall(cl.get("needs") or {}, [scale[e] for e in sorted(c.get("exps", ()))])
            if short and not c["failed"]:
                c["failed"] = f"scale: {short}"
        ok = [c for c in comps if not c["failed"] and np.isfinite(c["p"])]
        if ok:
            adj = multipletests([c["p"] for c in ok], alpha=ALPHA, method="holm")[1]
            for c, p in zip(ok, adj):
                c["p_holm"] = float(p)
        pe_decl = cl.get("paper_effect") or {}
        comparable = pe_decl.get("comparable", True)
        for c, decl in zip(comps, cl["comparisons"]):
            effect = effect_in_metric(decl.get("paper_effect", pe_decl.get("value")), pe_decl)
            c["paper_effect"] = effect
            c.setdefault("p_holm", math.nan)
            if not c["failed"] and not np.isfinite(c["p_holm"]):
                c["failed"] = "no spread and no difference to test"
            c["verdict"] = verdict_of(c, c["predicts"], effect, comparable)
            c["n_for_paper"] = n_needed(effect, c["sd"]) if effect is not None else math.nan
        verdict = claim_verdict([c["verdict"] for c in comps], cl.get("holds_if", "every"))
        out.append({**cl, "results": comps, "verdict": verdict, "made": provenance(results, cl["experiment"]),
                    "scale": scale, "tables": {e: provenance(results, e) for e in scale}})
    return out


# ---- across model sizes (experiment scale) ----

SCALE_EXP = "scale"
LADDER_CTX = 64   # the ladder's training length these claims' comparisons map onto (the extrapolation table's)
TRENDS = ("holds at every size", "grows with size", "shrinks with size", "flips", "no trend detected")


def _ladder_table(results, size, train_ctx):
    """results/scale.csv's runs of one size trained at train_ctx, as an
    extrapolation-like table (label = pe, eval_ctx = factor × train_ctx)
    with its baselines, so that a claim's comparisons (_at_length) select
    from it."""
    df = pd.read_csv(Path(results) / f"{SCALE_EXP}.csv")
    g = df[(df["size"] == size) & (df["train_ctx"] == train_ctx)].copy()
    g["label"] = g["pe"]
    g["eval_ctx"] = (g["factor"] * train_ctx).astype(int)
    g["log_ppl"] = np.log(g["ppl"])
    base = Path(results) / f"{SCALE_EXP}_baselines.csv"
    b = pd.read_csv(base) if base.is_file() else pd.DataFrame(columns=["eval_ctx", "unigram_ppl", "bigram_ppl"])
    b = b[b["eval_ctx"].isin(g["factor"].unique() * train_ctx)].copy()
    return g, b


def _at_length(decl, train_ctx):
    """A claim's declaration (or a part of it) read at the same multiples of
    train_ctx as it reads of LADDER_CTX: every eval_ctx scaled by
    train_ctx / LADDER_CTX (256 at a training length of 64 is 1024 at 256)."""
    if isinstance(decl, dict):
        return {k: (v * train_ctx // LADDER_CTX if k == "eval_ctx" and isinstance(v, int) else _at_length(v, train_ctx))
                for k, v in decl.items()}
    if isinstance(decl, list):
        return [_at_length(v, train_ctx) for v in decl]
    return decl


def _ladder_lengths(c, at):
    """The lengths a comparison reads (its sides' eval_ctx and minus), or None
    when it reads another experiment's table."""
    out = set()
    for side in (c.get("a"), c.get("b")):
        if not side:
            continue
        sel = {**at, **side}
        if "exp" in sel:
            return None
        out.add(sel.get("eval_ctx"))
        if "minus" in sel:
            out.add(sel["minus"].get("eval_ctx"))
    return out


def slope_ci(x, y):
    """(slope, lo, hi, smallest detectable slope) of y on x (stats.slope_ci)."""
    return stats.slope_ci(x, y)[:4]


def trend_verdict(verdicts, slope, lo, hi, predicts):
    """One comparison's trend with size, by rule: flips where it is
    consistent at one size and contrary at another; else grows (or shrinks)
    where the slope of the per-seed difference against log N is separated
    from 0 in (against) the paper's direction; else holds at every size where
    every size is consistent; else no trend detected."""
    if "consistent" in verdicts and "contrary" in verdicts:
        return "flips"
    if np.isfinite(lo) and (lo > 0 or hi < 0) and predicts in ("<", ">", "≤", "≥"):
        toward = (slope < 0) == (predicts in ("<", "≤"))
        return "grows with size" if toward else "shrinks with size"
    if verdicts and all(v == "consistent" for v in verdicts):
        return "holds at every size"
    return "no trend detected"


def across_sizes(claims, results, train_ctx=LADDER_CTX):
    """For each claim declared `across_sizes: true`: every comparison that
    reads lengths the ladder has (1×, 4×, 16× of 64), judged at each size of
    results/scale.csv trained at train_ctx (at the same multiples of it) by
    the same rule (a claim's own Holm family at each size), and its trend
    with size. None when the ladder's table is absent, [] when no size was
    trained at train_ctx."""
    path = Path(results) / f"{SCALE_EXP}.csv"
    if not path.is_file():
        return None
    df = pd.read_csv(path)
    df = df[df["train_ctx"] == train_ctx]
    if df.empty:
        return []
    sizes = list(df.drop_duplicates("size").sort_values("params")["size"])
    params = dict(zip(df["size"], df["params"]))
    ladder = set(df["factor"].unique() * train_ctx)
    out = []
    for cl in claims:
        if not cl.get("across_sizes"):
            continue
        cl = {**cl, "at": _at_length(cl.get("at", {}), train_ctx),
              "comparisons": _at_length(cl["comparisons"], train_ctx)}
        keep = [(i, c) for i, c in enumerate(cl["comparisons"])
                if (L := _ladder_lengths(c, cl.get("at", {}))) is not None and L <= ladder]
        if not keep:
            out.append({"claim": cl, "rows": [], "sizes": sizes})
            continue
        per_size = {}
        for size in sizes:
            with __import__("tempfile").TemporaryDirectory() as d:
                g, b = _ladder_table(results, size, train_ctx)
                g.to_csv(Path(d) / f"{cl['experiment']}.csv", index=False)
                b.to_csv(Path(d) / f"{cl['experiment']}_baselines.csv", index=False)
                spec = {**cl, "comparisons": [c for _, c in keep], "needs": {}}
                per_size[size] = evaluate([spec], d)[0]["results"]
        rows = []
        for k, (i, c) in enumerate(keep):
            cells = [per_size[s][k] for s in sizes]
            # the per-seed differences at every size, against log N
            if all(str(x.get("failed") or "").startswith("not computed") for x in cells):
                continue   # an encoding the ladder does not train
            xs, ys = [], []
            for s, cell in zip(sizes, cells):
                if cell["verdict"] == "not testable here":
                    continue   # a size where a precondition fails adds nothing to the trend
                g, _ = _ladder_table(results, s, train_ctx)
                try:
                    a = _side(g, {**cl.get("at", {}), **c["a"]}, cl["metric"], "ladder")
                    if "b" in c:
                        bb = _side(g, {**cl.get("at", {}), **c["b"]}, cl["metric"], "ladder")
                        seeds = sorted(set(a.index) & set(bb.index))
                        d = a.loc[seeds, cl["metric"]].astype(float) - bb.loc[seeds, cl["metric"]].astype(float)
                    else:
                        d = a[cl["metric"]].astype(float) - float(c["value"])
                except ClaimError:
                    continue
                d = d[np.isfinite(d)]
                xs += [math.log(params[s])] * len(d)
                ys += list(d)
            sl, lo, hi, mds = slope_ci(xs, ys)
            testable = [x["verdict"] for x in cells if x["verdict"] != "not testable here"]
            trend = (trend_verdict(testable, sl, lo, hi, cells[0]["predicts"]) if len(testable) > 1
                     else "no trend: one size")
            rows.append({"a": cells[0]["a"], "b": cells[0]["b"], "predicts": cells[0]["predicts"], "cells": cells,
                         "slope": sl, "lo": lo, "hi": hi, "mds": mds, "trend": trend})
        out.append({"claim": cl, "rows": rows, "sizes": sizes, "params": params,
                    "skipped": len(cl["comparisons"]) - len(rows)})
    return out


def ladder_trends(claims, results):
    """across_sizes at each training length of results/scale.csv, shortest
    first ({train_ctx: [...]}); None when the ladder's table is absent."""
    path = Path(results) / f"{SCALE_EXP}.csv"
    if not path.is_file():
        return None
    ctxs = sorted(int(x) for x in pd.read_csv(path)["train_ctx"].unique())
    return {ctx: across_sizes(claims, results, ctx) for ctx in ctxs}


def _sizes_table(t):
    """One claim's comparisons across the sizes trained at one length."""
    head = ["A − B", "paper"] + [f"{s} (N {t['params'][s]:,})" for s in t["sizes"]] + ["slope per ln N [95%]",
                                                                                       "detectable slope", "trend"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t["rows"]:
        cells = [f"{_num(c['est'])} [{_num(c['lo'])}, {_num(c['hi'])}] {c['verdict']}"
                 + (f" ({c['failed'].split(':')[0]})" if c["failed"] else "") for c in r["cells"]]
        lines.append(f"| {r['a']} − {r['b']} | {r['predicts']} 0 | " + " | ".join(cells)
                     + f" | {_num(r['slope'], 4)} [{_num(r['lo'], 4)}, {_num(r['hi'], 4)}] | {_num(r['mds'], 4)} | "
                     f"**{r['trend']}** |")
    return lines


def render_sizes(trends):
    """The ledger's section on the ladder (trends: ladder_trends)."""
    lines = ["", "## Across model sizes", ""]
    if trends is None or LADDER_CTX not in trends:
        return lines + ["The model-size ladder's table (`results/scale.csv`, `make experiments ONLY=scale`) is not "
                        "published yet: no claim is judged across sizes."]
    longer = {ctx: {t["claim"]["id"]: t for t in ts} for ctx, ts in trends.items() if ctx != LADDER_CTX}
    lines += ["The claims declared `across_sizes` judged again on the model-size ladder (experiment `scale`: the "
              "Linux kernel's C source, trained at 64 bytes, read at 4× and 16×), at each size by the rule above "
              "(each size its own Holm family), and their trend with size: the slope of the per-seed difference "
              "against the natural log of the non-embedding parameters N (least squares over every seed of every "
              "size, its 95% interval, and the smallest slope the design detects with 80% power). Trend, by rule: "
              "**flips** where a comparison is consistent at one size and contrary at another; else **grows** "
              "(or **shrinks**) with size where the slope is separated from 0 in (against) the paper's direction; "
              "else **holds at every size** where every size is consistent; else **no trend detected**. A "
              "comparison at 2× (128) has no ladder counterpart (the ladder reads 1×, 4× and 16×) and is left out; "
              "so is one that reads another experiment's table. The fit describes the sizes trained, not beyond, and "
              "it is a straight line in ln N: an effect that rises and then falls across sizes shows as a small "
              "slope or none, so read the trend with the per-size cells beside it."]
    for ctx in longer:
        lines += ["", f"The sizes the ladder also trains at {ctx} bytes are judged again there, each comparison at the "
                      f"same multiples of the training length (a comparison at 256 and 64 above reads "
                      f"{256 * ctx // LADDER_CTX} and {ctx} there), in a second table under each claim."]
    for t in trends[LADDER_CTX]:
        cl = t["claim"]
        lines += ["", f"### {cl['paper']}", ""]
        if not t["rows"]:
            lines.append("No comparison of this claim reads lengths and encodings the ladder has.")
            continue
        if t.get("skipped"):
            lines += [f"{t['skipped']} of its {len(cl['comparisons'])} comparisons read lengths, tables or encodings "
                      "the ladder does not have.", ""]
        lines += _sizes_table(t)
        for ctx, by_id in longer.items():
            lt = by_id.get(cl["id"])
            if lt and lt["rows"]:
                lines += ["", f"Trained at {ctx}:", ""] + _sizes_table(lt)
    return lines


# ---- declarations against the data ----

HYPOTHESIS = ("experiment", "metric", "predicts", "at", "comparisons", "preconditions", "holds_if", "needs")


def _comparison_text(c, predicts):
    b = _name(c["b"]) if "b" in c else f"value {c.get('value')}"
    return f"{_name(c['a'])} − {b} {c.get('predicts', predicts)} 0"


def hypothesis_changes(old, new):
    """What changed in a claim's hypothesis between two declarations, as
    (before, after) texts; [] when nothing that decides a verdict did."""
    # the rule's own preconditions were once declared by name; now applied to every comparison, naming
    # them or not changes nothing
    old, new = ({**d, "preconditions": [p for p in d.get("preconditions") or [] if p not in ("learned", "not_collapsed")] or None}
                for d in (old, new))
    if all(old.get(k) == new.get(k) for k in HYPOTHESIS):
        return []
    out = []
    for k in ("experiment", "metric", "predicts", "at", "preconditions", "holds_if", "needs"):
        if old.get(k) != new.get(k):
            out.append((f"{k} {old.get(k)!r}", f"{k} {new.get(k)!r}"))
    before = [_comparison_text(c, old.get("predicts")) for c in old.get("comparisons") or []]
    after = [_comparison_text(c, new.get("predicts")) for c in new.get("comparisons") or []]
    gone, came = [c for c in before if c not in after], [c for c in after if c not in before]
    if gone or came:
        out.append(("; ".join(gone) or "—", "; ".join(came) or "—"))
    return out


def _git(root, *args):
    r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def declaration_history(claims_file, results):
    """{claim id: [(table date, before, after)]}: every change of a claim's
    hypothesis made after its table was first committed, from git's history
    of the declarations (each commit of claims_file, then the working tree).
    None where there is no history to read (not a git checkout, a shallow
    clone, or a results folder outside the repository)."""
    claims_file, results = Path(claims_file).resolve(), Path(results).resolve()
    root = _git(claims_file.parent, "rev-parse", "--show-toplevel")
    if root is None or (_git(root.strip(), "rev-parse", "--is-shallow-repository") or "").strip() != "false":
        return None
    root = Path(root.strip())
    try:
        rel, rel_results = claims_file.relative_to(root), results.relative_to(root)
    except ValueError:
        return None
    versions = []
    for line in (_git(root, "log", "--reverse", "--format=%H %ct", "--", str(rel)) or "").split("\n"):
        if not line.strip():
            continue
        commit, when = line.split()
        try:
            doc = yaml.safe_load(_git(root, "show", f"{commit}:{rel}") or "")
        except yaml.YAMLError:
            continue
        versions.append((commit, int(when), {c["id"]: c for c in (doc or {}).get("claims", []) if isinstance(c, dict) and "id" in c}))
    now = {c["id"]: c for c in yaml.safe_load(claims_file.read_text()).get("claims", [])}
    versions.append((None, None, now))   # the working tree: later than any commit
    births = {}

    def birth(exp):
        """When the data of exp's table first existed: the commit that first
        added its CSV, and the day its first committed results/EXP.md says the
        table was made (from the start of that day: the order of two changes
        within a day is not recorded); None while the table is not committed."""
        if exp not in births:
            out = _git(root, "log", "--diff-filter=A", "--format=%H %cs", "--", str(rel_results / f"{exp}.csv")) or ""
            first = out.split("\n")[-2].split() if out.strip() else None
            day = None
            out = _git(root, "log", "--diff-filter=A", "--format=%H", "--", str(rel_results / f"{exp}.md")) or ""
            if out.split():
                m = re.search(r"— (\d{4}-\d{2}-\d{2})", _git(root, "show", f"{out.split()[-1]}:{rel_results / exp}.md") or "")
                day = m.group(1) if m else None
            births[exp] = None if not first else (first[0], min(filter(None, (day, first[1]))))
        return births[exp]

    def made_after(b, commit, when):
        """Was a change (a commit at time `when`; None: the working tree) made after the data?"""
        if commit is None:
            return True
        if _git(root, "merge-base", "--is-ancestor", b[0], commit) is not None and b[0] != commit:
            return True
        start = datetime.datetime.fromisoformat(b[1]).replace(tzinfo=datetime.timezone.utc).timestamp()
        return when >= start

    history = {}
    for (_, _, prev), (commit, when, cur) in zip(versions, versions[1:]):
        for cid, new in cur.items():
            old = prev.get(cid)
            if old is None:
                continue
            b = birth(new.get("experiment", ""))
            if b is None or not made_after(b, commit, when):
                continue
            for before, after in hypothesis_changes(old, new):
                history.setdefault(cid, []).append((f"on or after the day its table `{new['experiment']}` was made, {b[1]}",
                                                    before, after))
    return history


# ---- writing ----

def _num(v, digits=3):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "—"
    return f"{v:.{digits}f}".replace("-", "−")


def _p(v):
    return "—" if not np.isfinite(v) else ("< 0.001" if v < 0.001 else f"{v:.3f}")


def machine_of(made):
    """The machine part of a table's provenance ('2 cores (AMD EPYC, OpenBLAS kernel Haswell)'), or ''."""
    by = re.search(r"made by (.*?); OpenBLAS kernel (\S+);", made or "")
    if by:   # the runs' own record: the CPU, its kind and the build level
        return f"{by.group(1)}, OpenBLAS kernel {by.group(2)}"
    m = re.search(r"\d+ cores \(.*?kernel \w+\)", made or "")
    return m.group(0) if m else ""


def is_quote(claim):
    """A claim that quotes the paper carries its sentence in double quotes."""
    return bool(re.search(r'"[^"]{12,}"', claim))


def effect_text(e):
    pe = e.get("paper_effect") or {}
    text = pe.get("note", "the paper gives no number pelab can compare")
    if pe.get("value") is None:
        return text
    unit = pe.get("unit", e["metric"])
    text += f" — {_num(pe['value'], 4)} in {unit}"
    if pe.get("comparable", True) is False:
        return text + f"; not comparable with pelab's {e['metric']} ({pe.get('conversion', 'no honest conversion')}): no power verdict"
    conv = effect_in_metric(pe["value"], pe)
    if pe.get("to_metric", 1.0) != 1.0:
        text += f"; in pelab's {e['metric']}: {_num(conv, 4)} ({pe.get('conversion', '')})"
    return text


def render(evaluated, claims_file, history=None, trends=None):
    history = history or {}
    lines = ["# The claims ledger", "",
             f"Generated by `make claims` (`python3 -m pelab_lab.claims {claims_file} results`) from the "
             "experiments' tables in `results/`; every claim, its source in the paper, the comparisons that test "
             f"it and their preconditions are declared in `{claims_file}`. Do not edit this file: edit the "
             "declarations, or remake the experiments (`make experiments ONLY=EXP`) and run `make claims`. CI "
             "fails when this file is not what the committed results give.", "", "## The rule", "", RULE, "",
             "## Summary", "",
             "| # | paper | claim (the paper's words, or a paraphrase) | pelab's test | scale: the paper's / pelab's | verdict |",
             "|---|---|---|---|---|---|"]
    for i, e in enumerate(evaluated, 1):
        para = "" if is_quote(e["claim"]) else " *(a paraphrase: the paper's sentence is not quoted)*"
        sc = e["scale"].get(e["experiment"]) or next((v for v in e["scale"].values() if v), {})
        lines.append(f"| {i} | {e['paper']} | {e['claim']} ({e['source']}){para} | experiment `{e['experiment']}`, "
                     f"{len(e['results'])} comparison(s) of {e['metric']} | {e.get('paper_scale', 'not stated')} / "
                     f"{scale_text(sc)} | **{e['verdict']}** |")
    lines += ["", "## Verdicts at a glance", "", "| verdict | claims | which |", "|---|---|---|"]
    seen = {e["verdict"] for e in evaluated}
    for v in list(VERDICTS) + sorted(seen - set(VERDICTS)):
        rows = [f"{i} {e['paper']}" for i, e in enumerate(evaluated, 1) if e["verdict"] == v]
        if rows:
            lines.append(f"| {v} | {len(rows)} | {'; '.join(rows)} |")
    tables = {}
    for e in evaluated:
        tables.update(e["tables"])
    lines += ["", "## Where the tables were made", "",
              "Each table's machine and date as its results/EXP.md records them (the machine's name, its core "
              "count and the OpenBLAS kernel its runs pinned); a comparison whose two sides come from tables made "
              "on different machines is marked in its row.", "", "| table | made |", "|---|---|"]
    lines += [f"| `{t}` | {made} |" for t, made in sorted(tables.items())]
    for i, e in enumerate(evaluated, 1):
        needs = e.get("needs") or {}
        lines += ["", f"## {i}. {e['paper']}: {e['verdict']}", "",
                  f"**Claim** ({e['source']}): {e['claim']}"
                  + ("" if is_quote(e["claim"]) else " *(a paraphrase: the paper's sentence is not quoted here)*"), "",
                  f"**pelab's reading**: {e.get('reading', 'the comparisons below, in the directions they state')}"
                  + (" (the claim holds if any comparison goes the paper's way)" if e.get("holds_if") == "some" else ""), "",
                  f"**Scale**: the paper's: {e.get('paper_scale', 'not stated')}; pelab's: "
                  + "; ".join(f"`{x}` {scale_text(sc)}" for x, sc in e["scale"].items())
                  + (f"; the paper's mechanism needs {', '.join(f'{k} ≥ {v}' for k, v in needs.items())}" if needs else ""), "",
                  f"**Paper's effect**: {effect_text(e)}", "",
                  f"**pelab's setting**: {e['setting']}", "",
                  f"**Test**: experiment `{e['experiment']}` (`make experiments ONLY={e['experiment']}`; table made "
                  f"{e['made']}), metric {e['metric']}"
                  + ("; declared preconditions: " + ", ".join(f"learned in `{p['learned_in']}`" for p in e["preconditions"])
                     if e.get("preconditions") else "") + "."]
        for when, before, after in history.get(e["id"], []):
            lines += ["", f"{REDECLARED} ({when}): {before} → {after}"]
        lines += ["", "| A − B | paper | design | n | estimate [95%] | smallest detectable (80%) | n for the paper's effect | "
                  "Holm p | verdict |", "|---|---|---|---|---|---|---|---|---|"]
        for c in e["results"]:
            why = f" ({c['failed']})" if c["failed"] else ""
            if not c["failed"] and c["verdict"] == "inconclusive" and (e.get("paper_effect") or {}).get("comparable", True) is False:
                why = " (effect not comparable)"
            machines = sorted({machine_of(e["tables"].get(x, "")) for x in c.get("exps", ())})
            cross = f"; across tables made on different machines ({' / '.join(machines)})" if len(machines) > 1 else ""
            note = f"; {c['note']}" if c.get("note") else ""
            pe_txt = f" ({_num(c['paper_effect'], 4)})" if c.get("paper_effect") is not None else ""
            lines.append(f"| {c['a']} − {c['b']} | {c['predicts']} 0{pe_txt} | {c['design']}{note}{cross} | {c['n']} | {_num(c['est'])} "
                         f"[{_num(c['lo'])}, {_num(c['hi'])}] | {_num(c['mde'])} | "
                         f"{'—' if not np.isfinite(c['n_for_paper']) else math.ceil(c['n_for_paper'])} | "
                         f"{_p(c['p_holm'])} | {c['verdict']}{why} |")
        if e.get("note"):
            lines += ["", e["note"].strip()]
    lines += render_sizes(trends)
    return "\n".join(lines) + "\n"


FIELDS = ("id", "paper", "source", "claim", "setting", "experiment", "metric", "predicts", "comparisons")


def load_claims(path):
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ClaimError(f"{path}: {e}")
    claims = doc.get("claims") if isinstance(doc, dict) else None
    if not isinstance(claims, list) or not claims:
        raise ClaimError(f"{path}: no 'claims' list")
    ids = set()
    for cl in claims:
        missing = [f for f in FIELDS if f not in cl]
        if missing:
            raise ClaimError(f"{path}: claim {cl.get('id', '?')} lacks {', '.join(missing)}")
        if cl["id"] in ids:
            raise ClaimError(f"{path}: claim id {cl['id']} twice")
        ids.add(cl["id"])
        for pre in cl.get("preconditions", []):
            if not (isinstance(pre, dict) and set(pre) == {"learned_in"}):
                raise ClaimError(f"{path}: claim {cl['id']}: a declared precondition is {{learned_in: EXP}}; collapse, "
                                 "not learned and fewer than 2 pairs apply to every comparison and cannot be declared "
                                 f"(nor switched off), not {pre!r}")
        if cl.get("holds_if", "every") not in ("every", "some"):
            raise ClaimError(f"{path}: claim {cl['id']}: holds_if is 'every' or 'some'")
        if not isinstance(cl.get("needs", {}), dict) or not all(isinstance(v, (int, float)) for v in cl.get("needs", {}).values()):
            raise ClaimError(f"{path}: claim {cl['id']}: needs maps a scale (layers, params, ctx, d_model) to a number")
        pe = cl.get("paper_effect") or {}
        if pe.get("value") is not None and "unit" not in pe:
            raise ClaimError(f"{path}: claim {cl['id']}: a paper_effect with a value needs its unit, and to_metric "
                             "(the factor to the row's metric) or comparable: false")
        for c in cl["comparisons"]:
            if c.get("predicts", cl["predicts"]) not in ("<", ">", "=", "≥", "≤"):
                raise ClaimError(f"{path}: claim {cl['id']}: predicts is '<', '>', '=', '≥' or '≤' (the sign of A − B "
                                 "the paper expects, no difference, or a bound)")
            if "a" not in c or ("b" not in c and "value" not in c):
                raise ClaimError(f"{path}: claim {cl['id']}: a comparison needs a and b (or a and value)")
    return claims


def main(argv=None):
    warnings.filterwarnings("ignore", category=RuntimeWarning)   # statsmodels' power solver at n = 2–3
    ap = argparse.ArgumentParser(prog="pelab_lab.claims", description="The claims ledger from the results' tables.")
    ap.add_argument("claims")
    ap.add_argument("results")
    ap.add_argument("--out", help="write the ledger here (default: standard output)")
    ap.add_argument("--check", help="exit 1 when this file differs from the ledger the results give")
    a = ap.parse_args(argv)
    missing = []
    try:
        history = declaration_history(a.claims, a.results)
        claims = load_claims(a.claims)
        text = render(evaluate(claims, a.results, missing), a.claims, history, ladder_trends(claims, a.results))
    except ClaimError as e:
        print(f"claims: {e}", file=sys.stderr)
        return 2
    if missing:
        print(f"claims: {len(missing)} comparison(s) not computed (not testable here), e.g. {missing[0]}", file=sys.stderr)
    if a.check:
        have = Path(a.check).read_text() if Path(a.check).is_file() else ""
        if history is None:   # no git history here (a shallow clone): everything but the re-declarations is checked
            print("claims: no git history of the declarations here; the re-declarations are not checked", file=sys.stderr)
            def drop(t):   # each re-declaration is a paragraph: its line and the blank line before it
                ls = t.split("\n")
                return "\n".join(l for i, l in enumerate(ls) if not l.startswith(REDECLARED)
                                 and not (l == "" and i + 1 < len(ls) and ls[i + 1].startswith(REDECLARED)))
            have, text = drop(have), drop(text)
        if have != text:
            diff = list(difflib.unified_diff(have.splitlines(), text.splitlines(), a.check, "from the results", lineterm=""))
            print(f"claims: {a.check} is not what {a.results} gives ({len(diff)} diff lines); run `make claims`:",
                  file=sys.stderr)
            print("\n".join(diff[:40]), file=sys.stderr)
            return 1
        print(f"claims: {a.check} is current")
        return 0
    if a.out:
        Path(a.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
