"""The text corpora of the workflow's `corpus` rule, checked by SHA-256.

Two kinds (lab/config.yaml's `corpora`):
- `url`: a file downloaded (or copied from a local path) as it is;
- `recipe: linux-source`: C source text built from a Debian package, the
  Linux kernel's source (`linux-source-6.1` at a pinned version: the same
  bytes wherever it is made). No network beyond Debian's archive.

The linux-source recipe, as a rule (a test checks it):
- every regular file of the source tree ending in `.c` or `.h`, named by its
  path inside the tree (without the `linux-source-6.1/` prefix);
- each file's key is the SHA-256 of that path; files are taken in key order
  (a mix of the whole tree: drivers, arch, fs, net, kernel …);
- a file is *held out* when its key's first 8 hex digits, as a number, are
  divisible by 10 (about a tenth of the files), else it is *training*;
- training files, in key order, until they hold at least `train_bytes`;
  then held-out files, in key order, cut at the exact byte where ./train's
  split falls (it takes the last tenth of a byte corpus for validation:
  n_train = n - floor(0.1 n)), so the validation split is the held-out files
  and nothing else: disjoint from training by file, not by byte offset;
- a manifest beside the corpus (`.files.tsv`) lists each file, its split and
  its byte range.

Without a network give the workflow a local path instead (text: PATH in the
config, or lab/run --text PATH).

  python3 -m pelab_lab.corpus --src URL|PATH --sha256 HEX --out FILE
  python3 -m pelab_lab.corpus --recipe linux-source --package P --version V \
      --train-bytes N --sha256 HEX --out FILE [--cache DIR]
  python3 -m pelab_lab.corpus --check FILE   # a recipe corpus's split (check_split)
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

VAL_FRACTION = 0.1   # ./train's TEXT_VAL_FRACTION (data/data.c)
HELD_OUT_MODULUS = 10


class CorpusError(Exception):
    pass


def file_key(path):
    """The SHA-256 of a file's path inside the tree: its place in the order."""
    return hashlib.sha256(path.encode()).hexdigest()


def held_out(path):
    return int(file_key(path)[:8], 16) % HELD_OUT_MODULUS == 0


def train_split(n):
    """Tokens ./train trains on in a byte corpus of n bytes (data/data.c)."""
    return n - int(float(n) * VAL_FRACTION)


def val_bytes_for(train):
    """The validation length V that makes ./train's split fall exactly at
    `train`: train_split(train + V) == train."""
    v = train // 9
    for cand in (v - 1, v, v + 1, v + 2):
        if cand >= 0 and train_split(train + cand) == train:
            return cand
    raise CorpusError(f"no validation length puts ./train's split at {train} bytes")


def assemble(files, train_bytes):
    """files: {path: bytes}. -> (corpus bytes, manifest rows (path, split,
    start, end)) by the rule in this module's docstring."""
    order = sorted(files, key=file_key)
    train = [p for p in order if not held_out(p)]
    val = [p for p in order if held_out(p)]
    parts, rows, pos = [], [], 0
    for p in train:
        if pos >= train_bytes:
            break
        parts.append(files[p])
        rows.append((p, "train", pos, pos + len(files[p])))
        pos += len(files[p])
    if pos < train_bytes:
        raise CorpusError(f"the training files hold {pos} bytes, fewer than the {train_bytes} asked")
    need = val_bytes_for(pos)
    got = 0
    for p in val:
        if got >= need:
            break
        chunk = files[p][:need - got]
        parts.append(chunk)
        rows.append((p, "validation", pos + got, pos + got + len(chunk)))
        got += len(chunk)
    if got < need:
        raise CorpusError(f"the held-out files hold {got} bytes, fewer than the {need} the validation split needs")
    return b"".join(parts), rows


def linux_source_files(deb, share=0.3):
    """{path: bytes} of the .c and .h files of a linux-source .deb whose key
    falls in the first `share` of the key space (enough for any train_bytes
    up to about a third of the tree's source: the rule takes files in key
    order, so the ones it can take are all among these)."""
    bound = int(share * 16 ** 8)
    files = {}
    with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE) as outer_p:
        with tarfile.open(fileobj=outer_p.stdout, mode="r|") as outer:
            for m in outer:
                if not (m.isfile() and m.name.endswith(".tar.xz") and "/usr/src/" in f"/{m.name.lstrip('./')}"):
                    continue
                with tarfile.open(fileobj=outer.extractfile(m), mode="r|xz") as src:
                    for f in src:
                        if not f.isfile() or not f.name.endswith((".c", ".h")):
                            continue
                        path = f.name.split("/", 1)[1] if "/" in f.name else f.name
                        if int(file_key(path)[:8], 16) < bound:
                            files[path] = src.extractfile(f).read()
                break
    if outer_p.returncode not in (0, None) and not files:
        raise CorpusError(f"dpkg-deb could not read {deb}")
    if not files:
        raise CorpusError(f"{deb} holds no source tarball under usr/src/")
    return files


def fetch_deb(package, version, cache):
    """The package's .deb at that version, from Debian's archive through
    apt-get (cached)."""
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"{package}_{version.split(':')[-1]}_*.deb"))
    if found:
        return found[0]
    r = subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=cache, capture_output=True, text=True)
    found = sorted(cache.glob(f"{package}_{version.split(':')[-1]}_*.deb"))
    if r.returncode != 0 or not found:
        raise CorpusError(f"apt-get download {package}={version} failed ({r.stderr.strip().splitlines()[-1:]}); "
                          f"run 'apt-get update' first, or see `apt-cache policy {package}` for the versions the "
                          f"archive has (another version is another corpus: another SHA-256)")
    return found[0]


def write_atomic(path, data):
    tmp = f"{path}.part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def build_recipe(a):
    if a.recipe != "linux-source":
        raise CorpusError(f"unknown corpus recipe '{a.recipe}' (linux-source)")
    deb = fetch_deb(a.package, a.version, a.cache or tempfile.mkdtemp(prefix="pelab-corpus-"))
    data, rows = assemble(linux_source_files(deb), a.train_bytes)
    return data, rows


def check_split(path):
    """Problems with a recipe corpus and its manifest (path + '.files.tsv'),
    or []: the manifest covers the corpus byte for byte, no file is in both
    splits, and ./train's validation split begins exactly where the held-out
    files do."""
    data = Path(path).read_bytes()
    rows = [l.split("\t") for l in Path(f"{path}.files.tsv").read_text().splitlines() if l]
    problems = []
    pos = 0
    for name, split, start, end in rows:
        if int(start) != pos:
            problems.append(f"{name}: starts at {start}, not {pos}")
        pos = int(end)
    if pos != len(data):
        problems.append(f"the manifest covers {pos} bytes of {len(data)}")
    train = {r[0] for r in rows if r[1] == "train"}
    val = {r[0] for r in rows if r[1] == "validation"}
    if train & val:
        problems.append(f"{len(train & val)} file(s) in both splits, e.g. {sorted(train & val)[0]}")
    if any(held_out(n) for n in train) or not all(held_out(n) for n in val):
        problems.append("a file is in the split its key does not give it")
    first_val = min((int(r[2]) for r in rows if r[1] == "validation"), default=len(data))
    if train_split(len(data)) != first_val:
        problems.append(f"./train's validation split begins at byte {train_split(len(data))}, the held-out files at {first_val}")
    return problems


def cache_dir():
    """Where recipes keep the Debian packages they read (outside any run folder)."""
    return os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "pelab", "debs")


def command_args(named, src, sha256, out):
    """This module's arguments that make a corpus: `named` is its entry of
    the config's `corpora` (a recipe or a URL), or None for a local file at
    `src`."""
    if named and named.get("recipe"):
        return ["--recipe", str(named["recipe"]), "--package", str(named.get("package", "linux-source-6.1")),
                "--version", str(named["version"]), "--train-bytes", str(int(named.get("train_bytes", 100_000_000))),
                "--cache", cache_dir(), "--sha256", sha256, "--out", out]
    return ["--src", str(named["url"]) if named else str(src), "--sha256", sha256, "--out", out]


def preflight(config_path, out, timeout=10):
    """Before a workflow is planned: the text corpus it would download can
    be reached (or is already in the run folder). Returns the problem's
    lines, the fix last; [] when there is none."""
    import yaml
    with open(config_path) as f:
        cfg = yaml.safe_load(f) or {}
    name = cfg.get("text")
    c = (cfg.get("corpora") or {}).get(name) if isinstance(name, str) else None
    if not c or not c.get("url"):
        return []   # a local file (the workflow checks it) or a recipe from Debian's archive
    if (Path(out) / "corpus" / f"{str(c.get('sha256', ''))[:16]}.txt").is_file():
        return []
    try:
        with urllib.request.urlopen(urllib.request.Request(c["url"], method="HEAD"), timeout=timeout):
            return []
    except (OSError, ValueError) as e:
        why = getattr(e, "reason", None) or e
        return [f"the text corpus '{name}' of the perplexity experiments is downloaded from {c['url']}, which cannot "
                f"be reached from here ({why}); nothing was run.",
                "Give a local text file instead (any UTF-8 or byte text of 1 MB or more suits):",
                f"  lab/run --text PATH {out}"]


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--preflight"]:   # --preflight MERGED_CONFIG OUTDIR
        problems = preflight(argv[1], argv[2])
        for line in problems:
            print(f"lab/run: {line}" if line is problems[0] else line, file=sys.stderr)
        return 2 if problems else 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", help="a URL, or a local file")
    ap.add_argument("--recipe", help="build the corpus from a Debian package: linux-source")
    ap.add_argument("--package", default="linux-source-6.1")
    ap.add_argument("--version")
    ap.add_argument("--train-bytes", type=int, default=100_000_000)
    ap.add_argument("--cache", help="where the package's .deb is kept (default: a temporary folder)")
    ap.add_argument("--sha256")
    ap.add_argument("--out")
    ap.add_argument("--check", help="check a recipe corpus's split against its manifest, and exit")
    a = ap.parse_args(argv)
    if a.check:
        problems = check_split(a.check)
        for p in problems:
            print(f"pelab lab: {a.check}: {p}", file=sys.stderr)
        if not problems:
            print(f"pelab lab: {a.check}: held out by file; ./train's validation split is the held-out files")
        return 1 if problems else 0
    if not (a.sha256 and a.out):
        sys.exit("pelab lab: give --sha256 and --out (or --check FILE)")
    rows = None
    try:
        if a.recipe:
            if not a.version:
                raise CorpusError("--recipe needs --version (the package version whose bytes the SHA-256 names)")
            data, rows = build_recipe(a)
            src = f"{a.package}={a.version}"
        elif a.src:
            src = a.src
            try:
                if "://" in a.src:
                    with urllib.request.urlopen(a.src, timeout=60) as r:
                        data = r.read()
                else:
                    with open(a.src, "rb") as f:
                        data = f.read()
            except OSError as e:
                raise CorpusError(f"cannot read {a.src} ({e}); without a network, give a local copy: "
                                  f"lab/run --text PATH (or text: PATH in the config)")
        else:
            raise CorpusError("give --src or --recipe")
    except CorpusError as e:
        sys.exit(f"pelab lab: {e}")
    got = hashlib.sha256(data).hexdigest()
    if got != a.sha256:
        sys.exit(f"pelab lab: {src} gives SHA-256 {got}, expected {a.sha256}; not used")
    if rows is not None:
        write_atomic(f"{a.out}.files.tsv", "".join(f"{p}\t{s}\t{b}\t{e}\n" for p, s, b, e in rows).encode())
    write_atomic(a.out, data)


if __name__ == "__main__":
    sys.exit(main())
