#!/usr/bin/env bash
# Runs every experiment script on a tiny budget (QUICK=1) into a scratch
# folder and checks that each wrote its CSV, its table (with a row per
# encoding) and its picture, and that scripts/experiments.sh (make
# experiments) writes every file of results/. CI runs it, so that no script
# rots.
#   scripts/check-experiments.sh        (make experiments-quick)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
expect() {  # expect FILE MIN_LINES
  local n
  n=$( [ -s "$1" ] && wc -l < "$1" || echo 0)
  if [ "$n" -lt "$2" ]; then echo "!! $(basename "$1"): $n lines, expected at least $2"; fail=1; else echo "ok $(basename "$1") ($n lines)"; fi
}
n_pe=$(make -s train >/dev/null && ./train --list-pe | awk '$2 != "composite"' | wc -l)
n_all=$(./train --list-pe | wc -l)
n_causal_only=$(./train --list-pe | grep -c '; causal only')
n_runs=$((n_pe * 2 - n_causal_only))  # encoding and mode pairs of the order experiment
QUICK=1 OUT="$out" scripts/order.sh > "$out/order.log"
expect "$out/order.csv" $((n_runs * 2 + 1)); expect "$out/order.md" $((n_runs + 8)); expect "$out/order.png" 1
expect "$out/order_curve.csv" $((n_runs * 2 * 3 + 1)); expect "$out/attn_rope_causal.png" 1
QUICK=1 OUT="$out" RUN="env" scripts/encodings.sh > "$out/encodings.log"  # RUN: a prefix, as srun would be
expect "$out/encodings.csv" $((n_all * 2 + 1)); expect "$out/encodings.md" $((n_all + 5))
QUICK=1 OUT="$out" scripts/extrapolate.sh > "$out/extrapolate.log"
expect "$out/extrapolation.csv" $((n_pe * 2 * 5 + 1)); expect "$out/extrapolation.md" $((n_pe + 6)); expect "$out/extrapolation.png" 1
QUICK=1 OUT="$out" scripts/finetune.sh > "$out/finetune.log"
expect "$out/finetune.csv" $((8 * 2 * 5 + 1)); expect "$out/finetune.md" 14; expect "$out/finetune.png" 1
QUICK=1 OUT="$out" scripts/sweep.sh > "$out/sweep.log"
expect "$out/sweep.csv" 21; expect "$out/sweep.md" 18; expect "$out/sweep.png" 1
QUICK=1 OUT="$out" scripts/tasks.sh > "$out/tasks.log"
expect "$out/tasks.csv" $((2 * n_pe * 2 * 3 + 1)); expect "$out/tasks.md" $((3 * (n_pe + 2) + 8))
expect "$out/tasks.png" 1; expect "$out/tasks_length.png" 1
# CACHE: a second invocation takes every run from the cache and writes the
# same table (all but its first lines, which carry the date and wall time),
# also when it runs under make (as make experiments does)
QUICK=1 OUT="$out/c1" CACHE="$out/cache" scripts/finetune.sh > "$out/c1.log"
MAKELEVEL=1 QUICK=1 OUT="$out/c2" CACHE="$out/cache" scripts/finetune.sh > "$out/c2.log"
n_ft=$(grep -c "@" "$out/c1.log"); n_hit=$(grep -c "(cached)" "$out/c2.log" || true)
if [ "$n_hit" -ne "$n_ft" ] || ! cmp -s "$out/c1/finetune.csv" "$out/c2/finetune.csv" ||
   ! cmp -s <(tail -n +5 "$out/c1/finetune.md") <(tail -n +5 "$out/c2/finetune.md"); then
  echo "!! CACHE: $n_hit of $n_ft runs reused, or the tables differ"; fail=1
else echo "ok CACHE ($n_hit of $n_ft runs reused, same tables)"; fi
# ... and a run that reads a checkpoint (--load, --init) is not reused for a
# different model under the same scratch name: here every base model differs
QUICK=1 OUT="$out/c3" CACHE="$out/cache" ARGS="--rand-pos 256" scripts/finetune.sh > "$out/c3.log"
n_hit=$(grep -c "(cached)" "$out/c3.log" || true)
if [ "$n_hit" -ne 0 ]; then echo "!! CACHE: $n_hit runs of other base models reused"; fail=1
else echo "ok CACHE keys a checkpoint by its bytes (0 runs of other base models reused)"; fi
# make experiments (scripts/experiments.sh) writes every table, CSV and
# picture that results/ holds (bench.md comes from make bench)
QUICK=1 OUT="$out/all" scripts/experiments.sh > "$out/all.log"
missing=$(cd results && for f in *; do [ "$f" = bench.md ] || [ -s "$out/all/$f" ] || echo "$f"; done)
if [ -n "$missing" ]; then echo "!! scripts/experiments.sh does not write: $missing"; fail=1
else echo "ok experiments.sh writes every file of results/ ($(ls results | wc -l) files)"; fi
if grep -l "nan\|inf" "$out"/*.csv; then echo "!! a CSV holds nan or inf"; fail=1; fi
exit $fail
