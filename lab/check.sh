#!/usr/bin/env bash
# The lab's checks (make experiments-quick; CI runs them): the workflow on a
# tiny budget end to end, then what a researcher relies on — every file of
# results/ is made by it; a second invocation does nothing; an interrupted
# one leaves no run behind and resumes to the same tables; a bad config is
# refused before any training; a custom experiment on a text corpus writes
# nothing into results/ and reports no order accuracy; the comparison pairs
# what is paired and refuses to pool repeated measures. Ends with
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
text=/usr/share/common-licenses/GPL-3   # on every Debian machine (base-files)
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

echo "== unit tests of the lab's Python (plan, statistics, tidy tables)"
if /usr/bin/python3 -m unittest discover -s lab/tests -t lab > "$scratch/unit.log" 2>&1; then
  ok "lab unit tests ($(grep -o 'Ran [0-9]* tests' "$scratch/unit.log"))"
else cat "$scratch/unit.log"; bad "lab unit tests"; fi

echo "== the QUICK workflow, every experiment (lab/run --quick)"
before=$(git status --porcelain results)
t0=$(date +%s)
if lab/run --quick --text "$text" "$scratch/q" -j 2 > "$scratch/q.log" 2>&1; then
  ok "workflow ran end to end in $(( $(date +%s) - t0 )) s"
else tail -40 "$scratch/q.log"; bad "workflow ran end to end"; fi
# An experiment the plan skips on this CPU (needs_cpu_flag: the bf16 ones
# without AVX-512 bf16, order_skylakex without AVX-512) writes no files here;
# a file belongs to the experiment whose name is its name's longest prefix.
skipped_files() {
  /usr/bin/python3 - "$scratch/q/plan/report.json" "$@" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
names = list(plan["exps"]) + list(plan["skipped"])
for f in sys.argv[2:]:
    stem = f.split(".")[0]
    owner = max((n for n in names if stem == n or stem.startswith(n + "_")), key=len, default=None)
    if owner in plan["skipped"]:
        print(f)
PY
}
skipped_exps=$(/usr/bin/python3 -c 'import json, sys; print(" ".join(sorted(json.load(open(sys.argv[1]))["skipped"])))' \
  "$scratch/q/plan/report.json" 2>/dev/null)
exempt=$(cd results && skipped_files * 2>/dev/null)
missing=$(cd results && for f in *; do [ "$f" = bench.md ] || [ "$f" = bench.json ] || [ "$f" = experiments.log ] || [ -s "$scratch/q/results/$f" ] ||
  grep -qxF "$f" <<< "$exempt" || echo "$f"; done)
check "the workflow writes every file of results/${skipped_exps:+ but those of the experiments this CPU skips ($skipped_exps)}${missing:+ (missing: $missing)}" test -z "$missing"
check "the report page is written" test -s "$scratch/q/results/report.html"
check "the quick report says it is a smoke test and gives no claim verdicts" \
  sh -c "grep -q 'Smoke test, not evidence' '$scratch/q/results/report.html' && grep -q 'No verdicts' '$scratch/q/results/report.html' && ! grep -q '>contrary<\\|>holds<' '$scratch/q/results/report.html'"
check "every quick table carries the banner" sh -c "for f in '$scratch'/q/results/*.md; do grep -q 'Smoke test, not evidence' \"\$f\" || { echo \"\$f\"; exit 1; }; done"
offline=$(mktemp -d)
printf 'text: far\ncorpora:\n  far:\n    url: http://pelab-offline.invalid/t.txt\n    sha256: "%s"\n' "$(printf '0%.0s' $(seq 64))" > "$offline/far.yaml"
t0=$(date +%s)
lab/run --config-file "$offline/far.yaml" "$offline/run" > "$offline/log" 2>&1 && bad "an unreachable corpus is refused" || true
check "an unreachable corpus is refused in seconds, the --text fix last ($(( $(date +%s) - t0 )) s)" \
  sh -c "tail -1 '$offline/log' | grep -q 'lab/run --text PATH' && [ $(( $(date +%s) - t0 )) -lt 60 ]"
rm -rf "$offline"
check "a custom run folder leaves results/ alone" test "$(git status --porcelain results)" = "$before"
if grep -l "nan\|inf" "$scratch"/q/results/*.csv; then bad "no CSV holds nan or inf"; else ok "no CSV holds nan or inf"; fi

echo "== the Linux-source corpus (the quick scale experiment built it from Debian's linux-source-6.1)"
lin=$(ls "$scratch"/q/corpus/*.txt.files.tsv 2>/dev/null | head -1)
check "the corpus recipe's held-out split is disjoint by file and is ./train's validation split" \
  env PYTHONPATH=lab /usr/bin/python3 -m pelab_lab.corpus --check "${lin%.files.tsv}"
echo "== committed run records: a new run folder resumes from them"
mkdir -p "$scratch/rec" && cp -r "$scratch/q/runs/scale" "$scratch/rec/"
PELAB_RECORDS="$scratch/rec" lab/run --quick --text "$text" "$scratch/r" -n results/scale.md > "$scratch/rec.log" 2>&1
check "a run folder seeded from records trains none of the recorded runs" \
  bash -c "grep -q 'run(s) taken from lab/records' '$scratch/rec.log' && ! grep -q '^rule train_record' '$scratch/rec.log'"

echo "== the report in a real browser (headless Chromium)"
if command -v chromium > /dev/null; then
  profile=$(mktemp -d)
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$profile" --enable-logging=stderr --v=0 \
    --window-size=1200,2000 --screenshot="$scratch/report.png" "file://$scratch/q/results/report.html" > "$scratch/chromium.log" 2>&1
  rm -rf "$profile"
  check "Chromium renders the report (a screenshot)" test -s "$scratch/report.png"
  if grep "CONSOLE" "$scratch/chromium.log"; then bad "the report logs no console errors"; else ok "the report logs no console errors"; fi
  empty=$(grep -o 'src="data:image/png;base64,"' "$scratch/q/results/report.html" | wc -l)
  check "every picture of the report is inlined ($empty empty)" test "$empty" -eq 0
else
  echo "skipped: no chromium (scripts/install-deps.sh --browser installs it; CI does)"
fi

echo "== a second invocation does nothing"
lab/run --quick --text "$text" "$scratch/q" -n > "$scratch/again.log" 2>&1
check "second invocation: nothing to be done" grep -q "Nothing to be done" "$scratch/again.log"
cp "$text" "$scratch/same text.txt"
lab/run --quick --text "$scratch/same text.txt" "$scratch/q" -n > "$scratch/again2.log" 2>&1
check "the same corpus from another path: nothing to be done" grep -q "Nothing to be done" "$scratch/again2.log"
git clone -q "$repo" "$scratch/clone" && make -s -C "$scratch/clone" train > /dev/null 2>&1
"$scratch/clone/lab/run" --quick --text "$text" "$scratch/q" -n > "$scratch/again3.log" 2>&1
check "another clone of the same source: nothing to be done" grep -q "Nothing to be done" "$scratch/again3.log"

echo "== interrupted, then resumed"
# Six runs of ~1500 steps; interrupted as Ctrl-C does it (SIGINT to the
# whole process group, with SIGINT's default restored: a script's background
# job starts with it ignored) and as a scheduler does (SIGTERM to lab/run).
cat > "$scratch/slow.yaml" <<EOF
experiments:
  slow: {kind: encodings, encodings: [rope, alibi], seeds: 1-3, steps: 1500, args: --eval-tokens 512}
EOF
sigdfl='import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])'
for how in ctrl-c sigterm; do
  setsid /usr/bin/python3 -c "$sigdfl" lab/run --config-file "$scratch/slow.yaml" "$scratch/i-$how" -j 2 results/slow.md \
    > "$scratch/i-$how.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do  # until both first runs are under way (at most 30 s)
    [ "$(pgrep -f -- "--json runs/slow/" | wc -l)" -ge 2 ] && break; sleep 0.1
  done
  sleep 2
  if [ "$how" = ctrl-c ]; then  # a second invocation on a busy folder is refused by the lock and writes nothing
    sed 's/steps: 1500/steps: 1400/' "$scratch/slow.yaml" > "$scratch/slow2.yaml"
    plan_before=$(cat "$scratch/i-$how/plan/slow.json" 2>/dev/null)
    lab/run --config-file "$scratch/slow2.yaml" "$scratch/i-$how" -j 1 results/slow.md > "$scratch/locked.log" 2>&1
    check "a second invocation on a folder in use is refused" grep -q "is in use by another lab/run" "$scratch/locked.log"
    check "... and leaves the running one's plan alone" test "$(cat "$scratch/i-$how/plan/slow.json" 2>/dev/null)" = "$plan_before"
  fi
  if [ "$how" = ctrl-c ]; then kill -INT -- "-$pid"; else kill -TERM "$pid"; fi
  rc=0; wait "$pid" || rc=$?
  check "$how: the workflow stops with an error code ($rc)" test "$rc" -ne 0
  left=""
  for p in $(pgrep -x train); do [ "$(readlink "/proc/$p/cwd")" = "$scratch/i-$how" ] && left="$left $p"; done
  check "$how: no run of the interrupted workflow is left running${left:+ (pids$left)}" test -z "$left"
  check "$how: no table from an unfinished experiment" test ! -e "$scratch/i-$how/results/slow.md"
  check "$how: fewer than all runs finished" test "$(find "$scratch/i-$how/runs" -name '*.json' | wc -l)" -lt 6
  lab/run --config-file "$scratch/slow.yaml" "$scratch/i-$how" -j 2 results/slow.md > "$scratch/i2-$how.log" 2>&1
  check "$how: resumed, the workflow finishes" test -s "$scratch/i-$how/results/slow.md"
  check "$how: no run's JSON is the record of an interrupted run" \
    test -z "$(grep -l '"interrupted"' "$scratch/i-$how"/runs/slow/*/*.json)"
done
check "interrupted at different points, the same results (slow.csv but its timing columns)" \
  cmp -s <(cut -d, -f1-3,5-8 "$scratch/i-ctrl-c/results/slow.csv") <(cut -d, -f1-3,5-8 "$scratch/i-sigterm/results/slow.csv")

echo "== a bad config is refused before any training"
refuse() {  # refuse NAME YAML PATTERN
  printf '%s\n' "$2" > "$scratch/bad.yaml"
  if lab/run --text "$text" --config-file "$scratch/bad.yaml" "$scratch/bad" -n > "$scratch/bad.log" 2>&1; then
    bad "refused: $1 (accepted)"
  elif grep -q "$3" "$scratch/bad.log" && [ ! -d "$scratch/bad/runs" ]; then ok "refused: $1"
  else cat "$scratch/bad.log"; bad "refused: $1 (message)"; fi
}
refuse "duplicate seeds" 'experiments: {encodings: {seeds: [1, 1]}}' "given twice"
refuse "unknown encoding" 'experiments: {encodings: {encodings: [rope, ropee]}}' "unknown encoding"
refuse "a mode the trainer refuses" 'experiments: {order_composites: {modes: [bidir]}}' "causal only"
refuse "threads 0" 'threads: 0' "threads must be"
refuse "an option the workflow sets" 'experiments: {encodings: {args: --seed 3}}' "may not set --seed"
refuse "an unknown key at the top" 'threds: 2' "unknown key 'threds'"
refuse "an unknown experiment key" 'experiments: {encodings: {seedz: 1-2}}' "unknown key 'seedz'"
refuse "an option ./train does not have" 'experiments: {encodings: {args: --bogus 3}}' "no option --bogus"
refuse "a fractional step count" 'experiments: {encodings: {steps: 20.5}}' "must be an integer"
ln -s "$repo/results" "$scratch/res-link"
for f in results results/. results/sub "$scratch/res-link" "$scratch/res-link/sub" .; do
  check "lab/run refuses ${f/#$scratch/SCRATCH} as its run folder (results/ or the repository, however named)" \
    bash -c '! lab/run "$1" -n > "$2" 2>&1 && grep -q "is (or is inside) results/" "$2"' _ "$f" "$scratch/res.log"
done
check "a refused run folder is not made (results/sub)" test ! -e results/sub
check "lab/run refuses -j 0" bash -c "! lab/run '$scratch/j0' -j 0 -n > /dev/null 2>&1"
echo "== a run folder whose path has a space and a quote"
lab/run --quick --text "$text" "$scratch/a b'c" -j 2 results/order_composites.md > "$scratch/space.log" 2>&1
check "a path with a space and a quote works" test -s "$scratch/a b'c/results/order_composites.md"

echo "== a custom experiment on a text corpus"
cat > "$scratch/mine.yaml" <<EOF
experiments:
  mine: {kind: encodings, encodings: [rope, alibi], seeds: 1-2, steps: 20, args: --data $text --eval-tokens 512}
EOF
lab/run --text "$text" --config-file "$scratch/mine.yaml" "$scratch/m" -j 2 results/mine.md > "$scratch/m.log" 2>&1
check "custom experiment ran" test -s "$scratch/m/results/mine.md"
check "custom experiment reports no order accuracy" bash -c "! grep -q order_acc '$scratch/m/results/mine.md'"
check "custom experiment wrote nothing into results/" test "$(git status --porcelain results)" = "$before"

echo "== the text corpus fetched by the workflow and checked by its SHA-256"
sha=$(sha256sum "$text" | cut -c1-64)
cat > "$scratch/corpus.yaml" <<EOF
text: local-copy
corpora: {local-copy: {url: "file://$text", sha256: $sha}}
experiments:
  mine: {kind: encodings, encodings: [rope], seeds: 1-2, steps: 10, args: "--data {text} --eval-tokens 256"}
EOF
lab/run --config-file "$scratch/corpus.yaml" "$scratch/c" -j 2 results/mine.md > "$scratch/corpus.log" 2>&1
check "a named corpus is fetched and used" cmp -s "$scratch/c/corpus/${sha:0:16}.txt" "$text"
sed -i "s/$sha/${sha//?/a}/" "$scratch/corpus.yaml"
lab/run --config-file "$scratch/corpus.yaml" "$scratch/c2" -j 2 results/mine.md > "$scratch/corpus2.log" 2>&1
check "a corpus whose SHA-256 differs is refused" bash -c "grep -q 'expected aaaa' '$scratch/corpus2.log' && [ -z \"\$(ls -A '$scratch/c2/corpus' 2>/dev/null)\" ]"

echo "== lab/compare"
lab/compare "$scratch/q/runs/extrapolation" "$scratch/q/evals/extrapolation" --metric ppl --a label=rope --b label=rope.pi --at eval_ctx=1024 > "$scratch/c1.log" 2>&1
check "paired by seed for the same checkpoints" grep -q "paired t" "$scratch/c1.log"
lab/compare "$scratch/q/runs/extrapolation" --metric ppl --a pe=rope --b pe=alibi > "$scratch/c2.log" 2>&1
check "refuses to pool the lengths of one run" grep -q "not pooled" "$scratch/c2.log"
lab/compare "$scratch/q/runs/order" --metric order_acc --a pe=rope,attn=causal --b pe=rope,attn=bidir --unpaired > "$scratch/c3.log" 2>&1
check "Welch when asked" grep -q "Welch" "$scratch/c3.log"
lab/analyse "$scratch/q/runs/extrapolation" --out "$scratch/mine" > "$scratch/a.log" 2>&1
check "lab/analyse makes a summary and a figure of any runs" test -s "$scratch/mine/summary.md" -a -s "$scratch/mine/lengths.png"
# The docs' lab/compare examples (an indented block, DIR or RUNDIR a run folder) run on the quick folder as written;
# one that reads an experiment this CPU skips is left out (the bf16 ones without AVX-512 bf16).
n_docs=0
while IFS= read -r cmd; do
  cmd=$(sed -E "s#(^| )(RUN)?DIR/#\1$scratch/q/#g" <<< "$cmd")
  dirs=$(grep -o "$scratch/q/[a-z]*/[a-z0-9_]*" <<< "$cmd")
  missing=""; for d in $dirs; do [ -d "$d" ] || missing=$d; done
  [ -n "$missing" ] && continue
  n_docs=$((n_docs + 1))
  # a metric the quick budget never reaches (solve_step: nothing solves in 60 steps) leaves a side empty: the
  # command itself is still checked (its options, columns and values), by its refusal naming the metric
  check "the docs' example runs: ${cmd#lab/compare $scratch/q/}" \
    bash -c "$cmd > '$scratch/docs.log' 2>&1 || grep -q 'selects no run with' '$scratch/docs.log'"
  grep -q "selects no run with" "$scratch/docs.log" && echo "     (the quick budget: $(tail -1 "$scratch/docs.log" | cut -c1-160))"
done < <(/usr/bin/python3 - docs/*.md <<'PY'
import re, sys
for path in sys.argv[1:]:
    text = open(path).read().replace("\\\n", " ")
    for m in re.finditer(r"^    (lab/compare [^\n#]*)", text, re.M):
        print(re.sub(r"\s+", " ", m.group(1)).strip())
PY
)
check "the docs' lab/compare examples found ($n_docs run)" test "$n_docs" -ge 2

echo "== the claims ledger"
/usr/bin/python3 -c 'import sys; sys.path.insert(0, "lab"); from pelab_lab.claims import main; sys.exit(main())' \
  lab/claims.yaml "$scratch/q/results" --out "$scratch/claims.md" > "$scratch/claims.log" 2>&1
check "the ledger is computed from the QUICK workflow's tables" \
  bash -c "[ \$(grep -c '^## [0-9]' '$scratch/claims.md') -eq \$(grep -c '^  - id:' lab/claims.yaml) ]"
check "docs/claims.md is what the committed results/ give (make claims)" make -s claims-check
check "the results in the README and docs/experiments.md are what results/ and the ledger give (make readme-check)" \
  make -s readme-check

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
