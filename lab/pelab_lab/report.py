"""Each experiment's Markdown file (a header saying how it was made, then
its table) and the self-contained HTML report of a run folder."""
import base64
import ctypes
import datetime
import html
import json
import os
import platform
import re
import sys
from pathlib import Path

from . import claims
from .kinds import KINDS
from .runs import tidy



def machine(kernel=""):
    """The machine, and the OpenBLAS kernel of the runs (kernel: the one they
    pinned; otherwise the one OpenBLAS picks here)."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    kernel = kernel or detected_kernel()
    return f"{os.cpu_count()} cores ({model or platform.machine()}{', OpenBLAS kernel ' + kernel if kernel else ''})"


def detected_kernel():
    """The kernel OpenBLAS picks here (the one ./train uses, the same
    library): it decides the last bits of every number (docs/experiments.md)."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return ""


SMOKE = ("**Smoke test, not evidence**: `lab/run --quick` (lab/quick.yaml) runs every experiment on a tiny budget — "
         "a few dozen steps, two seeds — to check that the workflow, its tables and its figures work. Its numbers "
         "say nothing about the encodings; run `make experiments` (or `lab/run` without --quick) for results.")


def experiment_table(plan, stem):
    """plan: an experiment's plan file (the workflow writes plan/EXP.json):
    its name, its spec from the config, each run's --json path and labels,
    and one run's command as a reader types it."""
    name, spec = plan["name"], plan["spec"]
    runs = plan["runs"]
    t = tidy((r["json"], r["labels"]) for r in runs)
    for df in t.values():   # the text corpus by its name, not its file in the run folder
        if "data" in df:
            df["data_path"] = df["data"]   # the file the run read (baselines.py reads it again)
            df["data"] = df["data"].replace(plan.get("corpus") or {})
    body = KINDS[spec["kind"]].table(name, t, stem, spec)
    if plan.get("quick"):
        body = f"\n{SMOKE}\n\n{body}"
    if not runs:   # computed from a formula
        head = [f"# {spec.get('title') or KINDS[spec['kind']].title} ({name})", "",
                f"Workflow: experiment `{name}` of `lab/config.yaml` (`make experiments`) — "
                f"{datetime.date.today().isoformat()}; computed by `lab/pelab_lab/decay.py`, no runs.", ""]
        Path(f"{stem}.md").write_text("\n".join(head) + body + "\n")
        return
    # training runs' time only: an evaluation's --json (from builds before
    # this was fixed) may carry its checkpoint's training time
    secs = t["runs"].loc[t["runs"]["steps"].fillna(0) > 0, "train_seconds"].sum()
    arms = {r["labels"]["arm"] for r in runs}
    seeds = {r["labels"]["seed"] for r in runs}
    head = [f"# {spec.get('title') or KINDS[spec['kind']].title} ({name})", "",
            f"Workflow: experiment `{name}` of `lab/config.yaml` (`make experiments`; `lab/run` for a run folder of "
            f"your own) — {datetime.date.today().isoformat()}, {machine(plan.get('kernel', ''))}; {len(runs)} runs of "
            f"{len(arms)} configurations × {len(seeds)} seeds; "
            + (f"{secs:.0f} s of training and evaluation inside ./train." if secs > 0 else
             f"no training: evaluations of the checkpoints of experiment `{spec.get('from')}`." if spec.get("from") else
             "no training."),
            f"Each run is one `./train` command, e.g. `{plan['example']}`.",
            provenance_line(t["runs"])]
    if isinstance(spec.get("steps"), dict):   # a budget per task
        head.append(("Steps per task (a cap: a run stops once it has learned the training sizes): "
                     if spec.get("until_solved") else "Steps per task: ")
                    + ", ".join(f"{t} {spec['steps'][t]}" for t in spec.get("tasks", []) if t in spec["steps"]) + ".")
    head.append("")
    Path(f"{stem}.md").write_text("\n".join(head) + body + "\n")


def provenance_line(runs):
    """What the runs' own --json files say made them: the machine's kind (its
    CPU family and model, AVX-512 or AVX2, the build's instruction-set level),
    the OpenBLAS kernel, the matrix engine and pelab's commit; every distinct
    value, so that a table made by two builds says so."""
    def values(col):
        v = sorted({str(x) for x in runs.get(col, []) if isinstance(x, str) and x})
        return " / ".join(v) if v else "not recorded"
    return (f"Made by: {values('made_cpu')} ({values('made_kind')}); OpenBLAS kernel {values('made_blas')}; "
            f"engine {values('made_gemm')}; pelab {values('made_commit')}.")


def _inline(text):
    text = html.escape(text)
    text = re.sub(r"`([^`]*)`", r"<code>\1</code>", text)
    return re.sub(r"\*\*([^*]*)\*\*", r"<b>\1</b>", text)


def md_to_html(md, folder):
    """The Markdown our tables and the ledger use (headings, paragraphs of
    one or more lines, "- " lists, pipe tables, images) as HTML, images
    inlined as data: URLs."""
    out, block = [], {"kind": None, "lines": []}

    def flush():
        kind, lines = block["kind"], block["lines"]
        if kind == "p":
            out.append(f"<p>{_inline(' '.join(lines))}</p>")
        elif kind == "ul":
            out.append("<ul>" + "".join(f"<li>{_inline(' '.join(i))}</li>" for i in lines) + "</ul>")
        elif kind == "table":
            rows = [[c.strip() for c in r.strip().strip("|").split("|")] for r in lines if not re.fullmatch(r"\|(-+\|)+", r.strip())]
            out.append("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in rows[0]) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in rows[1:]) + "</table>")
        block["kind"], block["lines"] = None, []

    def add(kind, line):
        if block["kind"] != kind:
            flush()
            block["kind"] = kind
        block["lines"].append(line)

    for line in md.splitlines():
        m = re.fullmatch(r"!\[([^\]]*)\]\(([^)]*)\)", line.strip())
        if line.startswith("|"):
            add("table", line)
        elif m:
            flush()
            p = Path(folder) / m.group(2)
            data = base64.b64encode(p.read_bytes()).decode() if p.is_file() else ""
            out.append(f'<figure><img alt="{html.escape(m.group(1))}" src="data:image/png;base64,{data}"></figure>')
        elif line.startswith("#"):
            flush()
            level = min(len(line) - len(line.lstrip("#")) + 1, 4)
            out.append(f"<h{level}>{_inline(line.lstrip('#').strip())}</h{level}>")
        elif line.startswith("- "):
            add("ul", [line[2:]])
        elif line.startswith("  ") and line.strip() and block["kind"] == "ul":
            block["lines"][-1].append(line.strip())
        elif line.strip():
            add("p", line.strip())
        else:
            flush()
    flush()
    return "\n".join(out)


def ledger(folder):
    """The claims ledger (lab/claims.yaml) computed from this folder's tables:
    a claim whose experiment this run folder did not make is not testable."""
    decl = Path(__file__).resolve().parents[1] / "claims.yaml"
    return claims.render(claims.evaluate(claims.load_claims(decl), folder), "lab/claims.yaml")


def html_report(plan, out):
    """plan: the workflow's plan/report.json (the experiments, the skipped
    ones with why, the text corpus, the experiments that draw attention)."""
    folder = Path(out).parent
    parts = [f"<h1>pelab experiments</h1><p>{_inline(machine(plan.get('kernel', '')))}; made {datetime.datetime.now().isoformat(timespec='seconds')}; "
             f"text corpus: <code>{html.escape(str(plan['text']))}</code>.</p>"]
    if plan["skipped"]:
        parts.append("<p>Skipped here: " + "; ".join(f"{html.escape(e)} ({html.escape(w)})"
                                                    for e, w in plan["skipped"].items()) + ".</p>")
    parts.append("<ul>" + "".join(f'<li><a href="#{e}">{e}</a></li>' for e in plan["exps"] + ["claims"]) + "</ul>")
    for e in plan["exps"]:
        parts.append(f'<section id="{e}">' + md_to_html((folder / f"{e}.md").read_text(), folder) + "</section>")
        for png in sorted(folder.glob("attn_*.png")) if e in plan["pictures"] else []:
            data = base64.b64encode(png.read_bytes()).decode()
            parts.append(f'<figure><img alt="{png.stem}" src="data:image/png;base64,{data}"><figcaption>{png.stem}</figcaption></figure>')
    if plan.get("quick"):   # a banner atop the page and no verdicts: a smoke test is not evidence
        parts.insert(0, '<p style="background:#fff3cd;border:2px solid #d39e00;padding:.6em;font-size:1.1em">'
                     + _inline(SMOKE).replace("**", "") + "</p>")
        parts.append('<section id="claims"><h2>Claims</h2><p>No verdicts: the ledger judges the papers\' claims from '
                     "real budgets, and this run folder is a smoke test (<code>--quick</code>).</p></section>")
    else:
        parts.append('<section id="claims">' + md_to_html(ledger(folder), folder) + "</section>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%}code{background:#f4f4f4}")
    Path(out).write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>pelab experiments</title>"
                         f"<style>{style}</style></head><body>{''.join(parts)}</body></html>\n")


def main(argv):
    """The workflow's table and report jobs:
      python3 -m pelab_lab.report table plan/EXP.json results/EXP
      python3 -m pelab_lab.report html plan/report.json results/report.html"""
    if len(argv) != 3 or argv[0] not in ("table", "html"):
        raise SystemExit(main.__doc__)
    with open(argv[1]) as f:
        plan = json.load(f)
    (experiment_table if argv[0] == "table" else html_report)(plan, argv[2])


if __name__ == "__main__":
    main(sys.argv[1:])
