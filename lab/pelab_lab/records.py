"""Committed run records: the finished --json files of the experiments marked
`records: true` (the scale ladder, many hours of runs), kept in the
repository under lab/records/EXP/ARM/SEED.json so that the workflow resumes
from what landed, in a new run folder, on another machine.

  python3 -m pelab_lab.records seed OUTDIR [TARGETS]  # copy the records the plan still wants into OUTDIR/runs/
  python3 -m pelab_lab.records keep OUTDIR   # copy OUTDIR's finished runs of those experiments into lab/records/

A record is seeded only when the run it records is the run the plan asks for:
each option of the planned run (`--d-model 96`, `--steps 2325`, the corpus
by its checksum …) must be what the record's own config block says, so a
changed budget or size trains again instead of passing an old run off as a
new one. lab/run seeds before Snakemake starts; a seeded file has no
Snakemake metadata, so a change of pelab's source does not rerun it (the
record's `pelab.commit` and `machine` say which code and CPU made it).
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from . import corpus
from . import plan as P

REPO = Path(__file__).resolve().parents[2]
RECORDS = Path(os.environ.get("PELAB_RECORDS") or REPO / "lab" / "records")   # the variable: for the lab's checks


def _same(want, have):
    """An option's text against the record's config value."""
    if isinstance(have, bool):
        return want in (("1", "true") if have else ("0", "false"))
    if isinstance(have, list):
        return [str(x) for x in have] == want.split(",")
    if isinstance(have, (int, float)):
        try:
            return float(want) == float(have)
        except ValueError:
            return False
    return str(have) == want


def mismatch(run, record, corpus_file):
    """Why `record` (a parsed --json) is not the planned `run`, or None."""
    cfg = record.get("config") or {}
    if record.get("interrupted"):
        return "the run was interrupted"
    if cfg.get("seed") != run.seed:
        return f"seed {cfg.get('seed')} is not {run.seed}"
    opts = [corpus_file if o == "{text}" else o for o in run.options]
    i = 0
    while i < len(opts):
        flag = opts[i]
        value = opts[i + 1] if i + 1 < len(opts) and not opts[i + 1].startswith("--") else None
        i += 2 if value is not None else 1
        key = flag.lstrip("-").replace("-", "_")
        if key not in cfg:
            return f"the record has no {flag}"
        if value is not None and not _same(value, cfg[key]):
            return f"{flag} {value} planned, the record has {cfg[key]!r}"
    return None


def recorded_plan(outdir):
    """{key: Run} of the recorded experiments of OUTDIR's merged config, and
    {text name: corpus file in the run folder}."""
    config = yaml.safe_load((Path(outdir) / ".pelab-config.yaml").read_text())
    list_pe = subprocess.run([str(REPO / "train"), "--list-pe"], capture_output=True, text=True, check=True).stdout
    planned = P.plan(config, list_pe)
    runs = {}
    for exp, rs in planned.items():
        if config["experiments"][exp].get("records"):
            runs.update({r.key: r for r in rs})
    corpora = config.get("corpora") or {}
    files = {n: f"corpus/{c['sha256'][:16]}.txt" for n, c in corpora.items() if isinstance(c, dict) and c.get("sha256")}
    return runs, files, config


def _wanted(targets, experiments):
    """Whether Snakemake's targets (none: everything) may need a recorded
    experiment's runs: 'all', 'publish', or a file or rule naming one."""
    names = [t for t in targets if not t.startswith("-") and not t.isdigit()]
    if not names:
        return True
    return any(t in ("all", "publish") or any(e in t for e in experiments) for t in names)


def seed(outdir, targets=()):
    runs, files, config = recorded_plan(outdir)
    recorded = {r.exp for r in runs.values()}
    if not _wanted(list(targets), recorded):
        return 0   # the invocation asks for other experiments: nothing to seed, no corpus to make
    copied = refused = 0
    for key, r in sorted(runs.items()):
        src = RECORDS / f"{key}.json"
        dst = Path(outdir) / "runs" / f"{key}.json"
        if dst.exists() or not src.is_file():
            continue
        try:
            record = json.loads(src.read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"pelab lab: {src}: not a run record ({e}); not used", file=sys.stderr)
            refused += 1
            continue
        why = mismatch(r, record, files.get(r.text or str(config.get("text", "")), "{text}"))
        if why:
            if not refused:   # the first reason; a changed budget refuses them all alike
                print(f"pelab lab: {src}: not the planned run ({why}); it trains again", file=sys.stderr)
            refused += 1
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        copied += 1
    if copied:
        _corpora_for(outdir, [r for k, r in runs.items() if (Path(outdir) / "runs" / f"{k}.json").is_file()], files, config)
    if copied or refused:
        print(f"pelab lab: {copied} run(s) taken from lab/records/, {refused} record(s) not used", file=sys.stderr)
    return 0


def _corpora_for(outdir, runs, files, config):
    """Make the named corpora the seeded runs read, before Snakemake starts:
    a corpus made by a job of the workflow would count as an input updated
    after the runs, and every seeded run would train again."""
    corpora = config.get("corpora") or {}
    for name in sorted({r.text or str(config.get("text", "")) for r in runs if r.uses_text}):
        out = Path(outdir) / files.get(name, "")
        if name not in corpora or out.is_file():
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        print(f"pelab lab: making corpus {name} for the runs taken from lab/records/", file=sys.stderr)
        corpus.main(corpus.command_args(corpora[name], None, corpora[name]["sha256"], str(out)))


def keep(outdir):
    runs, _, _ = recorded_plan(outdir)
    kept = 0
    for key in sorted(runs):
        src = Path(outdir) / "runs" / f"{key}.json"
        dst = RECORDS / f"{key}.json"
        if src.is_file() and not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            kept += 1
    have = sum(1 for k in runs if (RECORDS / f"{k}.json").is_file())
    print(f"lab/records: {kept} new record(s); {have} of {len(runs)} planned runs recorded")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] not in ("seed", "keep") or (argv[0] == "keep" and len(argv) != 2):
        print("usage: python3 -m pelab_lab.records seed OUTDIR [SNAKEMAKE TARGETS AND OPTIONS] | keep OUTDIR",
              file=sys.stderr)
        return 2
    try:
        return seed(argv[1], argv[2:]) if argv[0] == "seed" else keep(argv[1])
    except P.ConfigError as e:   # the workflow would refuse the config in the same words
        print(f"lab config: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
