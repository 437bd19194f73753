#!/usr/bin/env bash
# Every experiment whose tables and pictures are in results/, each with the
# command the README names for it, one after the other (`make experiments`).
# Prints each step's wall time and the total, and keeps a log of them in
# OUT/experiments.log.
#
#   scripts/experiments.sh DATA=../shared/data/tinyshakespeare.txt
#   scripts/experiments.sh DATA=… CACHE=~/.cache/pelab   # resumable
#   scripts/experiments.sh DATA=… ONLY="order tasks"      # some steps only
#
# DATA is the text corpus of the perplexity experiments (default: cats, which
# runs but is not what the README's tables were made on). CACHE, JOBS, OUT and
# QUICK pass through to every script (scripts/lib.sh). ONLY names the steps to
# run (the first word of each line of the list below).
set -euo pipefail
cd "$(dirname "$0")/.."
for kv in "$@"; do
  case "$kv" in
    *=*) export "${kv%%=*}"="${kv#*=}" ;;
    *) echo "usage: $0 [DATA=FILE] [CACHE=DIR] [ONLY=\"STEP …\"] [KEY=VALUE …]" >&2; exit 2 ;;
  esac
done
DATA=${DATA:-cats}
ONLY=${ONLY:-}
OUT=${OUT:-results}
mkdir -p "$OUT"
TEN="1 2 3 4 5 6 7 8 9 10"
log="$OUT/experiments.log"

# step NAME COMMAND…: runs COMMAND (unless ONLY leaves NAME out) and logs its time.
total=0
step() {
  local name=$1 start secs
  shift
  if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
  echo "=== $name: $*"
  echo "$(date -u +%FT%TZ) $name started" >> "$log"
  start=$(date +%s)
  env "$@"
  secs=$(( $(date +%s) - start ))
  total=$(( total + secs ))
  echo "=== $name: ${secs}s"
  echo "$(date -u +%FT%TZ) $name ${secs}s${CACHE:+ (cache $CACHE)}: $*" >> "$log"
}

# The first eight encodings make the README's main order table; every other
# encoding of the registry (not the composites) the second one, so that a new
# encoding is in make experiments without editing this list.
FIRST="none sinusoidal learned rope alibi t5 xl shaw"
make -s train
REST=$(./train --list-pe | awk -v first=" $FIRST " '$2 != "composite" && index(first, " " $1 " ") == 0 { printf "%s%s", sep, $1; sep = " " }')
step order SEEDS="$TEN" ENCODINGS="$FIRST" scripts/order.sh
step order_new_encodings SEEDS="$TEN" ENCODINGS="$REST" NAME=order_new_encodings scripts/order.sh
step order_composites SEEDS="$TEN" MODES=causal ENCODINGS="sinusoidal+dpb sinusoidal+fire" NAME=order_composites scripts/order.sh
# The other machine's BLAS kernels (README "Order"): needs a CPU with AVX-512.
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  step order_skylakex OPENBLAS_CORETYPE=SkylakeX SEEDS="$TEN" MODES=causal ENCODINGS="sinusoidal learned" NAME=order_skylakex scripts/order.sh
else
  echo "=== order_skylakex: skipped (OpenBLAS's SkylakeX kernels need AVX-512, which this CPU lacks)"
fi
step encodings SEEDS="1 2 3" scripts/encodings.sh
step extrapolation DATA="$DATA" scripts/extrapolate.sh
step extrapolation_hs64 DATA="$DATA" L=128 STEPS=1500 ARGS="--d-model 256 --heads 4 --layers 4" NAME=extrapolation_hs64 ENCODINGS="none sinusoidal rope alibi" scripts/extrapolate.sh
step extrapolation_randpos DATA="$DATA" ARGS="--rand-pos 1024" NAME=extrapolation_randpos ENCODINGS="learned rope alibi" scripts/extrapolate.sh
step finetune DATA="$DATA" scripts/finetune.sh
step sweep DATA="$DATA" STEPS=2000 scripts/sweep.sh
step tasks SEEDS="1 2 3" STEPS=2000 scripts/tasks.sh
step tasks_randpos SEEDS="1 2 3" ARGS="--rand-pos 256" ENCODINGS="learned rope alibi" TASKS="copy sort flipflop" NAME=tasks_randpos scripts/tasks.sh
echo "experiments.sh: ${total}s in all"
echo "$(date -u +%FT%TZ) all ${total}s" >> "$log"
