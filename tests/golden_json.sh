#!/usr/bin/env bash
# The --json of a few fixed runs, with what varies between machines and
# invocations masked: timings, memory, commit, start time, the machine block,
# the scratch folder, and every decimal's sign and digits (a loss's last bits
# follow the BLAS kernel; its number of decimals, the keys, their order and
# the integers stay). tests/test_cli.c's cli/json_golden compares its output with
# tests/fixtures/golden_json.txt; after a deliberate change to --json:
#   tests/golden_json.sh > tests/fixtures/golden_json.txt
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/pelab-golden-XXXXXX)
trap 'rm -rf "$T"' EXIT
export PELAB_RUNS=$T/runs
for i in $(seq 300); do echo "the $i cats chase $((i % 7)) dogs; the dogs run."; done > "$T/c.txt"
S="--threads 1 --quiet --gemm openblas"
M="--d-model 16 --layers 1 --heads 2"
run() { ./train $S "$@" --json "$T/r.json" > /dev/null; echo "## $*"; cat "$T/r.json"; echo; }
{
run $M --data "$T/c.txt" --pe rope --ctx 16 --steps 20 --eval-ctx 16,32 --attn-stats --probe-positions --eval-every 10 --save "$T/r.ck"
run --load "$T/r.ck" --eval-ctx 64 --eval-window 16 --rope-scale yarn
run $M --data cats --pe learned+t5 --attn bidir --steps 10
run $M --data task:copy --pe alibi --steps 10 --task-eval 20
} | sed "s|$T|{T}|g" | perl -pe '
  s/"(tokens_per_s|seconds|allreduce_seconds|peak_rss_mib)": [0-9.eE+-]+/"$1": #/g;
  s/"(commit|started)": "[^"]*"/"$1": "#"/g;
  s/"machine": \{[^}]*\}/"machine": {#}/g;
  s#/runs/\d{8}-\d{6}-#/runs/DATE-TIME-#g;
  s/-?\d+\.(\d+)(?:[eE][-+]?\d+)?/"9." . ($1 =~ tr#0-9#9#r)/ge;'
