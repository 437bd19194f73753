"""What the lab reads from ./train rather than keeping a copy: the results
schema (`./train --list-results`, run/results.c: the fields of a run's
--json, their types, and the --attn-stats distances; `check(d)` says where a
run's JSON departs from it) and the matrix engines (`./train --list-gemm`)."""
import functools
import json
import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class SchemaError(Exception):
    pass


@functools.lru_cache(maxsize=None)
def load(train=None):
    """{"fields": [...], "attn_distances": [...]} from ./train (PELAB_TRAIN, else the repository's)."""
    exe = train or os.environ.get("PELAB_TRAIN") or str(REPO / "train")
    try:
        out = subprocess.run([exe, "--list-results"], capture_output=True, text=True, check=True).stdout
        return json.loads(out)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        raise SchemaError(f"cannot read the results schema from {exe} --list-results ({e}); build it with make train") \
            from None


@functools.lru_cache(maxsize=None)
def engines(train=None):
    """--gemm's choices: "auto", then every engine of ./train --list-gemm (built or not)."""
    exe = train or os.environ.get("PELAB_TRAIN") or str(REPO / "train")
    try:
        out = subprocess.run([exe, "--list-gemm"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SchemaError(f"cannot list the matrix engines with {exe} --list-gemm ({e}); build it with make train") \
            from None
    return ("auto",) + tuple(line.split()[0] for line in out.splitlines() if line.strip())


def attn_distances():
    """The distances D of --attn-stats' attn_far (16, 64, 256 today)."""
    return list(load()["attn_distances"])


def far_columns():
    """The tidy tables' columns of the attention beyond each distance: far_16, …"""
    return [f"far_{D}" for D in attn_distances()]


def _type_ok(value, typ):
    kinds = typ.split("|")
    if value is None:
        return "null" in kinds
    base = kinds[0]
    if base == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if base == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base == "string":
        return isinstance(value, str)
    if base == "bool":
        return isinstance(value, bool)
    if base == "object" or base.startswith("{"):
        return isinstance(value, dict)
    if base == "array" or base.startswith("["):
        return isinstance(value, list)
    return True


def check(d, schema=None, complete=True):
    """The ways a run's JSON object departs from the schema: keys it does not
    name, values of another type, and (complete) top-level fields that are
    always there and are not."""
    schema = schema or load()
    fields = {f["path"]: f for f in schema["fields"]}
    problems = []

    def walk(obj, prefix):
        for key, value in obj.items():
            path = f"{prefix}{key}"
            f = fields.get(path)
            if f is None:
                problems.append(f"{path}: not a field of the results schema")
                continue
            if not _type_ok(value, f["type"]):
                problems.append(f"{path}: {type(value).__name__} {json.dumps(value)[:40]}, the schema says {f['type']}")
                continue
            if f["type"] == "object" and isinstance(value, dict) and path != "config":
                walk(value, f"{path}.")
            if f["type"] == "array" and isinstance(value, list):
                for el in value:
                    if isinstance(el, dict):
                        walk(el, f"{path}[].")
                    else:
                        problems.append(f"{path}[]: an element that is not an object")

    if not isinstance(d, dict):
        return ["the file is not a JSON object"]
    walk(d, "")
    for path, f in fields.items():
        if complete and f["when"] == "always" and "." not in path and "[]" not in path and path not in d:
            problems.append(f"{path}: missing")
    return problems


@functools.lru_cache(maxsize=None)
def options(train=None):
    """{option name: whether it takes a value}, from ./train --help (its
    option table, the encodings' options included): what an experiment's
    args may name."""
    exe = train or os.environ.get("PELAB_TRAIN") or str(REPO / "train")
    try:
        out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SchemaError(f"cannot read the options of {exe} --help ({e}); build it with make train") from None
    found = {}
    for line in out.splitlines():
        m = re.match(r"  --([a-z0-9][a-z0-9-]*)(?: ([A-Z][A-Z0-9:.,]*))?(?:\s|$)", line)
        if m:
            found[m.group(1)] = m.group(2) is not None
    return found
