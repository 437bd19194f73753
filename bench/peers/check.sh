#!/usr/bin/env bash
# bench/peers/check.sh [DATA] — do the peers compute pelab's function? For
# RoPE and ALiBi, on a byte corpus (default: the GPL text every Debian system
# has), with ./train of this repository (built first):
#   1. step 0: ./train --steps 0 --save makes the model; ./train --load scores
#      its validation windows (--eval-rows); each peer scores the same windows
#      with the same weights: within 1e-5 relative of ./train's loss;
#   2. 20 steps: ./train trains 20 steps; each peer trains the step-0 model on
#      ./train's own batches with its library's AdamW set as pelab's: the last
#      step's loss against ./train's (printed; a peer 1e-4 or more off fails).
# The peers run from bench/peers/venv.sh's environment (made on first use).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
data=$(realpath "${1:-/usr/share/common-licenses/GPL-3}")
make -s -C "$repo" train
py=$("$repo/bench/peers/venv.sh")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
T="$repo/train"
fails=0
for pe in rope alibi; do
  common=(--data "$data" --pe "$pe" --seed 3 --batch 16 --out none --quiet --threads 1)
  "$T" "${common[@]}" --steps 0 --save "s0-$pe.ck" > /dev/null
  "$T" --load "s0-$pe.ck" --eval-ctx 64 --eval-rows "rows-$pe.bin" --json "s0-$pe.json" --quiet --threads 1 > /dev/null
  "$T" "${common[@]}" --steps 20 --warmup 4 --eval-every 0 --json "s20-$pe.json" > /dev/null
  loss0=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["eval"][0]["loss"])' "s0-$pe.json")
  loss20=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["train"]["final_loss"])' "s20-$pe.json")
  for peer in torch_peer jax_peer; do
    "$py" "$repo/bench/peers/$peer.py" check "s0-$pe.ck" "rows-$pe.bin" "$loss0" 2>/dev/null | tail -1 || fails=$((fails + 1))
    out=$("$py" "$repo/bench/peers/$peer.py" steps "s0-$pe.ck" "$data" 3 20 16 0.003 4 "$loss20" 2>/dev/null | tail -1)
    echo "$out"
    rel=$(sed -n 's/.*relative difference \([0-9.e+-]*\).*/\1/p' <<< "$out")
    "$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 1e-4 else 1)' "${rel:-1}" ||
      { echo "  $peer ($pe): 1e-4 or more off after 20 steps"; fails=$((fails + 1)); }
  done
done
[ "$fails" -eq 0 ]
