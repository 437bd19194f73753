"""Fetches a named text corpus and checks its SHA-256 (the workflow's
`corpus` rule). Without a network, give the workflow a local path instead
(text: PATH in the config, or lab/run --text PATH)."""
import argparse
import hashlib
import os
import sys
import urllib.request


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--src", required=True, help="a URL, or a local file")
    ap.add_argument("--sha256", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        if "://" in a.src:
            with urllib.request.urlopen(a.src, timeout=60) as r:
                data = r.read()
        else:
            with open(a.src, "rb") as f:
                data = f.read()
    except OSError as e:
        sys.exit(f"pelab lab: cannot read {a.src} ({e}); without a network, give a local copy: "
                 f"lab/run --text PATH (or text: PATH in the config)")
    got = hashlib.sha256(data).hexdigest()
    if got != a.sha256:
        sys.exit(f"pelab lab: {a.src} has SHA-256 {got}, expected {a.sha256}; not used")
    tmp = f"{a.out}.part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
