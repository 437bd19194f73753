"""Runs' --json files into tidy tables (pandas), with a JSON parser.

Four tables, one row per observation:
  runs   one row per run: what it was (from its own config, plus the
         workflow's labels when it has them) and what it measured once;
  evals  one row per run and evaluation length (ppl; refused rows kept, with
         their reason, and no number);
  curve  one row per run and --eval-every point;
  task   one row per run and size range of a task;
  attn   one row per run, evaluation length, layer and head (--attn-stats):
         the weight on the first token (sink) and at distances ≥ D (far_D).
A metric a run did not produce is missing (NaN), never 0.
"""
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import schema

SOLVED = 0.99   # order_acc at which the order task counts as solved: ./train's --until-solved on cats


class RunFileError(Exception):
    pass


def _no_constant(name):
    raise ValueError(f"a {name} literal, which ./train never writes (a value that is not a number is null)")


def read_run(path):
    """A run's --json, checked against ./train's results schema (schema.py):
    one line naming the file and what is wrong, never a traceback."""
    try:
        with open(path) as f:
            d = json.load(f, parse_constant=_no_constant)
    except OSError as e:
        raise RunFileError(f"{path}: cannot read ({e.strerror})")
    except json.JSONDecodeError as e:
        raise RunFileError(f"{path}: not a pelab --json file ({e.msg} at line {e.lineno})")
    except (ValueError, RecursionError) as e:
        raise RunFileError(f"{path}: not a pelab --json file ({e})")
    if not isinstance(d, dict) or "config" not in d:
        raise RunFileError(f"{path}: not a pelab --json file (no config)")
    problems = schema.check(d, complete=False)
    if problems:
        more = f" (and {len(problems) - 2} more)" if len(problems) > 2 else ""
        raise RunFileError(f"{path}: not as ./train writes --json: {'; '.join(problems[:2])}{more}")
    return d


def _num(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d or d[k] is None:
            return math.nan
        d = d[k]
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else math.nan


def _time_to_solve(d, points):
    """The order task (or a task run's training sizes, --until-solved on a
    task) as a time to event: solve_step (NaN when unsolved),
    solved, and solve_time (the solve step, or the step the run was censored
    at: its cap). From --until-solved's record when the run has one, else
    from the curve at SOLVED; all NaN for a run that measured no order."""
    order = d.get("order") or d.get("task_solve") or {}   # a task run's --until-solved reads task_acc
    nan = {"solve_step": math.nan, "solved": math.nan, "solve_time": math.nan, "solve_at": math.nan}
    if "until_solved" in order:
        step, cap = _num(order, "solved_step"), _num(order, "cap")
        solved = not math.isnan(step)
        return {"solve_step": step, "solved": float(solved), "solve_time": step if solved else cap,
                "solve_at": _num(order, "until_solved")}
    accs = [(p.get("step"), _num(p, "order_acc")) for p in points if not math.isnan(_num(p, "order_acc"))]
    if not accs:
        return nan
    first = next((float(s) for s, a in accs if a >= SOLVED), math.nan)
    solved = not math.isnan(first)
    return {"solve_step": first, "solved": float(solved), "solve_time": first if solved else float(accs[-1][0]),
            "solve_at": SOLVED}


def tidy(records):
    """records: iterable of (path, labels) where labels is a dict of columns
    (exp, arm, label, seed and the experiment's own, e.g. task) or {}."""
    runs, evals, curve, task, attn = [], [], [], [], []
    for path, labels in records:
        d = read_run(path)
        if d.get("interrupted"):   # written at a stop signal: a part of a training, not evaluated
            print(f"pelab lab: {path}: left out, its run was interrupted ({d['interrupted'].get('signal')} after step "
                  f"{d['interrupted'].get('step')}); resume it to finish", file=sys.stderr)
            continue
        c = d["config"]
        # every scalar setting of the run is a column (pe, attn, data, ctx,
        # seed, rope_scale, …), so that any of them can select runs
        base = {k: v for k, v in c.items() if isinstance(v, (str, int, float, bool)) or v is None}
        base.update({"exp": "", "arm": "", "label": c.get("pe")})
        base.update(labels)
        base["path"] = str(path)
        made = d.get("pelab") or {}
        m = made.get("machine") or {}
        # where and by what the run was made: a table's provenance (report.py)
        base.update({"made_cpu": m.get("cpu"), "made_kind": m.get("kind"), "made_blas": m.get("blas_kernel"),
                     "made_gemm": m.get("gemm"), "made_commit": made.get("commit")})
        row = dict(base)
        row.update({"params": _num(d, "params"), "steps": _num(d, "train", "steps"),
                    "final_loss": _num(d, "train", "final_loss"), "tokens_per_s": _num(d, "train", "tokens_per_s"),
                    "train_seconds": _num(d, "train", "seconds"), "order_acc": _num(d, "order", "acc"),
                    "order_n": _num(d, "order", "n")})
        points = d.get("curve") or []
        for p in points:
            curve.append({**base, "step": p.get("step"), "train_loss": _num(p, "train_loss"),
                          "val_loss": _num(p, "val_loss"), "order_acc": _num(p, "order_acc"),
                          "task_acc": _num(p, "task_acc")})
        row.update(_time_to_solve(d, points))
        first = (d.get("eval") or [{}])[0]
        row["eval_loss"], row["eval_ppl"] = _num(first, "loss"), _num(first, "ppl")
        runs.append(row)
        for e in d.get("eval") or []:
            row = {**base, "eval_ctx": e.get("ctx"), "loss": _num(e, "loss"), "ppl": _num(e, "ppl"),
                   "refused": e.get("error"), "window": _num(e, "window"), "window_loss": _num(e, "window_loss"),
                   "window_ppl": _num(e, "window_ppl")}
            probe = e.get("probe_r2")
            for l, v in enumerate(probe if isinstance(probe, list) else []):
                row[f"probe_r2_{l}"] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
            heads = _attn_rows(e)
            for col in ["sink"] + schema.far_columns():   # the mean over layers and heads
                vals = [h[col] for h in heads if not math.isnan(h[col])]
                row[col] = float(np.mean(vals)) if vals else math.nan
            evals.append(row)
            attn += [{**base, "eval_ctx": e.get("ctx"), **h} for h in heads]
        for i, t in enumerate(d.get("task") or []):
            task.append({**base, "task": labels.get("task", str(c.get("data", "")).removeprefix("task:")),
                         "range": i, "lo": t.get("lo"), "hi": t.get("hi"), "train_range": bool(t.get("train")),
                         "acc": _num(t, "acc"), "n": _num(t, "n"), "refused": t.get("error")})
    cols = lambda rows: pd.DataFrame(rows)
    return {"runs": cols(runs), "evals": cols(evals), "curve": cols(curve), "task": cols(task), "attn": cols(attn)}


def _attn_rows(e):
    """An evaluation's --attn-stats as rows per layer and head (none without them)."""
    sink, far = e.get("attn_sink"), e.get("attn_far") or {}
    if not isinstance(sink, list):
        return []
    val = lambda v: float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
    rows = []
    for l, heads in enumerate(sink):
        for h, v in enumerate(heads):
            r = {"layer": l, "head": h, "sink": val(v)}
            for D in schema.attn_distances():
                grid = far.get(str(D))
                r[f"far_{D}"] = val(grid[l][h]) if isinstance(grid, list) and l < len(grid) and h < len(grid[l]) else math.nan
            rows.append(r)
    return rows


# A refusal that depends on the machine, not on the run (the evaluation did
# not fit in the memory available then): never kept as a result.
MACHINE_REFUSALS = ("of memory available",)


def machine_refusals(d):
    """The refusals of a run's JSON that another attempt could overturn."""
    errs = [e.get("error") for e in (d.get("eval") or []) + (d.get("task") or []) if isinstance(e, dict)]
    return [e for e in errs if e and any(m in e for m in MACHINE_REFUSALS)]


def accept_main(argv):
    """python3 -m pelab_lab.runs JSON: exit 3 (and say why) when the run is
    not a result to keep: the workflow's run rules fail the job then, so that
    Snakemake drops it and runs it again next time."""
    for path in argv:
        try:
            d = read_run(path)
        except RunFileError as e:
            print(f"pelab lab: {e}", file=sys.stderr)
            return 3
        missing = schema.check(d)
        if missing:
            print(f"pelab lab: {path}: not as ./train writes --json: {missing[0]}", file=sys.stderr)
            return 3
        if d.get("interrupted"):
            print(f"pelab lab: {path}: the run was interrupted; the job fails so that it runs again", file=sys.stderr)
            return 3
        errs = machine_refusals(d)
        if errs:
            print(f"pelab lab: {path}: an evaluation was refused for lack of memory, which is not a result of the "
                  f"run; the job fails so that it runs again: {errs[0]}", file=sys.stderr)
            return 3
    return 0


class NoColumn(KeyError):
    pass


def select_rows(df, sel):
    """The rows where every column of sel has its value. A number matches a
    number column by value (100000 is 100000.0 where NaNs made the column
    float; 0.1 within rounding); a boolean matches True/False however the
    CSV spelled it; anything else compares as text."""
    out = df
    for k, v in sel.items():
        if k not in df.columns:
            raise NoColumn(k)
        col = out[k]
        num = None
        if not isinstance(v, bool):
            try:
                num = float(v)
            except (TypeError, ValueError):
                pass
        if num is not None and pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            out = out[np.isclose(col.astype(float), num, rtol=1e-9, atol=0)]
        elif isinstance(v, bool) or pd.api.types.is_bool_dtype(col):
            out = out[col.astype(str).str.lower() == str(v).lower()]
        else:
            out = out[col.astype(str) == str(v)]
    return out


def find_json(paths):
    """Files and folders -> the --json files among them (folders searched)."""
    out = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out += sorted(q for q in p.rglob("*.json") if q.is_file())
        elif p.is_file():
            out.append(p)
        else:
            raise RunFileError(f"{p}: no such file or folder")
    if not out:
        raise RunFileError("no --json files among " + " ".join(str(p) for p in paths))
    return out


if __name__ == "__main__":
    sys.exit(accept_main(sys.argv[1:]))
