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
import difflib
import math
import re
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
  detects with 80% power (or the paper gives no number to compare: its effect is then taken as detectable);
- **underpowered**: not separated from 0, and the paper's effect is smaller than what this n detects;
- **not testable here**: a precondition fails (the models did not learn the task at the training sizes,
  both sides are worse than the byte-unigram model there, or fewer than 2 pairs).

A claim's verdict: contrary if any comparison is contrary; consistent if every testable comparison is;
not testable here if none is testable; otherwise inconclusive if any comparison is, else underpowered.
Prose below a claim may explain its verdict, never change it."""

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
    for line in path.read_text().splitlines():
        m = re.match(r"(Workflow|Command):.*? — (.*?)(;|$)", line)
        if m:
            return m.group(2).strip()
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
    a = _one(df, sel, where)
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
    """A side's rows: from the claim's experiment, or from the one its `exp` names."""
    sel = {**at, **sel}
    exp = sel.pop("exp", spec["experiment"])
    return _side(_read(results, exp), sel, spec["metric"], where), _baseline(results, exp)


def compare(results, spec, c, where):
    """One comparison -> dict of numbers and a precondition failure (or None)."""
    metric = spec["metric"]
    at = {**spec.get("at", {}), **c.get("at", {})}
    a, base = _side_of(results, spec, c["a"], at, f"{where}, A")
    out = {"a": c.get("a_name") or _name(c["a"]), "b": c.get("b_name") or (_name(c["b"]) if "b" in c else f"{c['value']}"),
           "failed": None, "predicts": c.get("predicts", spec["predicts"])}
    pre = spec.get("preconditions", [])
    if "b" in c:
        b, _ = _side_of(results, spec, c["b"], at, f"{where}, B")
        design = c.get("design", spec.get("design", "paired"))
        seeds = sorted(set(a.index) & set(b.index))
        if "learned" in pre:
            seeds = [s for s in seeds if bool(a.loc[s, "learned"]) and bool(b.loc[s, "learned"])]
            lost = len(set(a.index) & set(b.index)) - len(seeds)
            out["note"] = f"{lost} seed(s) dropped: not learned at the training sizes" if lost else ""
        if "not_collapsed" in pre and base and "eval_ctx" in a and "eval_ctx" in b:
            La, Lb = int(a["eval_ctx"].iloc[0]), int(b["eval_ctx"].iloc[0])
            if a[metric].mean() >= math.log(base.get(La, math.inf)) and b[metric].mean() >= math.log(base.get(Lb, math.inf)):
                out["failed"] = "both sides worse than the byte-unigram model (collapsed)"
        va, vb = a.loc[seeds, metric].astype(float), b.loc[seeds, metric].astype(float)
        if design == "paired":
            r = stats.paired(va.to_numpy(), vb.to_numpy())
            sd = _sd_for_power(va.to_numpy() - vb.to_numpy())
        else:
            xa, xb = a[metric].astype(float), b[metric].astype(float)
            r = stats.welch(xa.to_numpy(), xb.to_numpy())
            sd = math.sqrt((np.var(xa, ddof=1) + np.var(xb, ddof=1)) / 2) if len(xa) > 1 and len(xb) > 1 else math.nan
        out.update(design="paired t" if design == "paired" else "Welch t", est=r.diff, lo=r.lo, hi=r.hi,
                   n=r.n_a if design == "paired" else f"{r.n_a} and {r.n_b}", p=r.p, mde=r.mde, sd=sd,
                   n_pairs=min(r.n_a, r.n_b))
    else:
        va = a[metric].astype(float)
        if "learned" in pre:
            va = va[a["learned"].astype(bool)]
        d = va.to_numpy() - float(c["value"])
        r = stats.paired(d, np.zeros(len(d)))
        out.update(design="one-sample t", est=r.diff, lo=r.lo, hi=r.hi, n=r.n_a, p=r.p, mde=r.mde,
                   sd=_sd_for_power(d), n_pairs=r.n_a)
    if out["n_pairs"] < 2 and not out["failed"]:
        out["failed"] = "fewer than 2 seeds to compare"
    if out["failed"] is None and out["sd"] == 0 and np.isfinite(out["est"]):
        out["p"] = 0.0 if out["est"] != 0 else 1.0   # no spread: the difference is exact
    return out


def _name(sel):
    parts = [f"{v}" if k in ("label", "pe", "task") else f"{k} {v}" for k, v in sel.items() if k != "minus"]
    text = ", ".join(parts)
    if "minus" in sel:
        text = f"({text} − {', '.join(f'{k} {v}' for k, v in sel['minus'].items())})"
    return text


def verdict_of(c, predicts, effect):
    if c["failed"]:
        return "not testable here"
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


def claim_verdict(vs):
    testable = [v for v in vs if v != "not testable here"]
    if not testable:
        return "not testable here"
    if "contrary" in testable:
        return "contrary"
    if all(v == "consistent" for v in testable):
        return "consistent"
    return "inconclusive" if "inconclusive" in testable else "underpowered"


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
        ok = [c for c in comps if not c["failed"] and np.isfinite(c["p"])]
        if ok:
            adj = multipletests([c["p"] for c in ok], alpha=ALPHA, method="holm")[1]
            for c, p in zip(ok, adj):
                c["p_holm"] = float(p)
        claim_effect = (cl.get("paper_effect") or {}).get("value")
        for c, decl in zip(comps, cl["comparisons"]):
            effect = decl.get("paper_effect", claim_effect)
            c["paper_effect"] = effect
            c.setdefault("p_holm", math.nan)
            if not c["failed"] and not np.isfinite(c["p_holm"]):
                c["failed"] = "no spread and no difference to test"
            c["verdict"] = verdict_of(c, c["predicts"], effect)
            c["n_for_paper"] = n_needed(effect, c["sd"]) if effect is not None else math.nan
        out.append({**cl, "results": comps, "verdict": claim_verdict([c["verdict"] for c in comps]),
                    "made": provenance(results, cl["experiment"])})
    return out


# ---- writing ----

def _num(v, digits=3):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "—"
    return f"{v:.{digits}f}".replace("-", "−")


def _p(v):
    return "—" if not np.isfinite(v) else ("< 0.001" if v < 0.001 else f"{v:.3f}")


def render(evaluated, claims_file):
    lines = ["# The claims ledger", "",
             f"Generated by `make claims` (`python3 -m pelab_lab.claims {claims_file} results`) from the "
             "experiments' tables in `results/`; every claim, its source in the paper, the comparisons that test "
             f"it and their preconditions are declared in `{claims_file}`. Do not edit this file: edit the "
             "declarations, or remake the experiments (`make experiments ONLY=EXP`) and run `make claims`. CI "
             "fails when this file is not what the committed results give.", "", "## The rule", "", RULE, "",
             "## Summary", "", "| # | paper | claim (the paper's terms) | pelab's test | verdict |", "|---|---|---|---|---|"]
    for i, e in enumerate(evaluated, 1):
        lines.append(f"| {i} | {e['paper']} | {e['claim']} ({e['source']}) | experiment `{e['experiment']}`, "
                     f"{len(e['results'])} comparison(s) of {e['metric']} | **{e['verdict']}** |")
    lines += ["", "## Verdicts at a glance", "", "| verdict | claims | which |", "|---|---|---|"]
    seen = {e["verdict"] for e in evaluated}
    for v in list(VERDICTS) + sorted(seen - set(VERDICTS)):
        rows = [f"{i} {e['paper']}" for i, e in enumerate(evaluated, 1) if e["verdict"] == v]
        if rows:
            lines.append(f"| {v} | {len(rows)} | {'; '.join(rows)} |")
    for i, e in enumerate(evaluated, 1):
        pe = e.get("paper_effect") or {}
        lines += ["", f"## {i}. {e['paper']}: {e['verdict']}", "",
                  f"**Claim** ({e['source']}): {e['claim']}", "",
                  f"**Paper's effect**: {pe.get('note', 'the paper gives no number pelab can compare')}"
                  + (f" (taken as {_num(pe['value'], 4)} in {e['metric']})" if pe.get("value") is not None else ""), "",
                  f"**pelab's setting**: {e['setting']}", "",
                  f"**Test**: experiment `{e['experiment']}` (`make experiments ONLY={e['experiment']}`; table made "
                  f"{e['made']}), metric {e['metric']}"
                  + (f"; preconditions: {', '.join(e['preconditions'])}" if e.get("preconditions") else "") + ".", "",
                  "| A − B | paper | design | n | estimate [95%] | smallest detectable (80%) | n for the paper's effect | "
                  "Holm p | verdict |", "|---|---|---|---|---|---|---|---|---|"]
        for c in e["results"]:
            why = f" ({c['failed']})" if c["failed"] else ""
            note = f"; {c['note']}" if c.get("note") else ""
            pe_txt = f" ({_num(c['paper_effect'], 4)})" if c.get("paper_effect") is not None else ""
            lines.append(f"| {c['a']} − {c['b']} | {c['predicts']} 0{pe_txt} | {c['design']}{note} | {c['n']} | {_num(c['est'])} "
                         f"[{_num(c['lo'])}, {_num(c['hi'])}] | {_num(c['mde'])} | "
                         f"{'—' if not np.isfinite(c['n_for_paper']) else math.ceil(c['n_for_paper'])} | "
                         f"{_p(c['p_holm'])} | {c['verdict']}{why} |")
        if e.get("note"):
            lines += ["", e["note"].strip()]
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
        text = render(evaluate(load_claims(a.claims), a.results, missing), a.claims)
    except ClaimError as e:
        print(f"claims: {e}", file=sys.stderr)
        return 2
    if missing:
        print(f"claims: {len(missing)} comparison(s) not computed (not testable here), e.g. {missing[0]}", file=sys.stderr)
    if a.check:
        have = Path(a.check).read_text() if Path(a.check).is_file() else ""
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
