"""The results in the README and docs/experiments.md, kept to what the results give.

  python3 -m pelab_lab.readme README.md docs/experiments.md results docs/claims.md [--write]

1. Tables: a line `<!-- results/EXP.md table K -->` (or `docs/PAGE.md`) is
   followed by the K-th Markdown table of that file (1 = the first, paths
   from the repository's top), copied; --write copies them again, without it
   a table that differs is an error.
2. Numbers: every number written with a decimal point outside those tables,
   in the results sections (all of docs/experiments.md; the README's
   RESULT_SECTIONS), must appear, as written, in results/*.md or the claims
   ledger; a number that does not was typed by hand and is reported.
Exit 1 with the list of what is out of date (CI runs it).
"""
import re
import sys
from pathlib import Path

MARK = re.compile(r"^<!-- ((?:results|docs)/[\w.-]+\.md) table (\d+) -->$")
RESULT_SECTIONS = ("## What it finds",)   # the README's; a page named in WHOLE_PAGES is checked whole
WHOLE_PAGES = ("experiments.md",)
NUMBER = re.compile(r"(?<![\w.])[−-]?\d+\.\d+")


def tables_of(text):
    """The Markdown tables of a text, each as a list of lines."""
    out, cur = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def sync(readme, root, write):
    """readme text -> (new text, problems)."""
    lines = readme.splitlines()
    out, problems, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        m = MARK.match(line)
        i += 1
        if not m:
            continue
        src, k = root / m.group(1), int(m.group(2))
        tabs = tables_of(src.read_text()) if src.is_file() else []
        if k < 1 or k > len(tabs):
            problems.append(f"{m.group(1)} has no table {k}")
            continue
        have = []
        while i < len(lines) and lines[i].startswith("|"):
            have.append(lines[i])
            i += 1
        if have != tabs[k - 1]:
            problems.append(f"the table after '{line}' is not {m.group(1)}'s table {k}")
        if i < len(lines) and lines[i].strip():   # Markdown would read the next line as one more row
            problems.append(f"the table after '{line}' runs into the line after it: leave a blank line")
        out.extend(tabs[k - 1] if write else have)
    return "\n".join(out) + ("\n" if readme.endswith("\n") else ""), problems


def sections(text, whole=False):
    """{heading: body lines} of the results sections (a results "##" section
    with its subsections, or a results "###" subsection; every section when
    whole), without the synced tables."""
    keep, head, parent, inside, skipping = {}, "(top)", whole, whole, False
    for line in text.splitlines():
        if line.startswith("## "):
            parent = inside = whole or any(line.startswith(s) for s in RESULT_SECTIONS if s.startswith("## "))
            head = line
        elif line.startswith("### "):
            inside = parent or any(line.startswith(s) for s in RESULT_SECTIONS)
            head = line
        if line.startswith("#"):
            continue
        if not inside:
            continue
        if MARK.match(line):
            skipping = True
            continue
        if skipping and line.startswith("|"):
            continue
        skipping = False
        keep.setdefault(head, []).append(line)
    return keep


def stray_numbers(text, sources, whole=False):
    known = set()
    for s in sources:
        known.update(n.replace("−", "-") for n in NUMBER.findall(s))
    out = []
    for head, body in sections(text, whole).items():
        for line in body:
            if line.strip().startswith("![") or line.strip().startswith("    "):
                continue   # pictures and commands
            for n in NUMBER.findall(line):
                if n.replace("−", "-") not in known:
                    out.append(f"{head}: {n} ({line.strip()[:80]}…)")
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    write = "--write" in argv
    args = [a for a in argv if a != "--write"]
    if len(args) < 3:
        print("usage: python3 -m pelab_lab.readme PAGE.md... RESULTS CLAIMS.md [--write]", file=sys.stderr)
        return 2
    pages, results, claims = [Path(a) for a in args[:-2]], Path(args[-2]), Path(args[-1])
    root = results.parent
    sources = [p.read_text() for p in sorted(results.glob("*.md"))] + [claims.read_text() if claims.is_file() else ""]
    problems = []
    for page in pages:
        text, found = sync(page.read_text(), root, write)
        if write:
            page.write_text(text)
        problems += [f"{page}: {p}" for p in found]
        problems += [f"{page}: a number not in the results or the ledger: {s}"
                     for s in stray_numbers(text, sources, page.name in WHOLE_PAGES)]
    for p in problems:
        print(f"readme: {p}", file=sys.stderr)
    if problems and write:   # the tables are copied; the numbers typed by hand are the writer's to replace
        print(f"readme: tables copied; {len(problems)} number(s) in the results sections are not in results/ or the "
              "ledger (make readme-check fails on them)", file=sys.stderr)
        return 0
    if problems:
        print(f"readme: {len(problems)} problem(s); `make readme` copies the tables again, numbers typed by hand "
              "must be replaced by ones the results give", file=sys.stderr)
        return 1
    print("readme: the results tables and numbers are what results/ and the ledger give")
    return 0


if __name__ == "__main__":
    sys.exit(main())
