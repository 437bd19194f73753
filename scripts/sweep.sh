#!/usr/bin/env bash
# The tuning knobs, measured: sinusoidal base, RoPE base (100 to 1e6), and the
# relative clipping distance of xl and shaw; each as perplexity at the
# training context L and at 8L. Writes results/sweep.csv, results/sweep.md
# and results/sweep.png.
#
#   scripts/sweep.sh                                          # built-in cats corpus
#   scripts/sweep.sh DATA=../shared/data/tinyshakespeare.txt
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/train-short.sh
. scripts/train-short.sh
SIN_BASES=${SIN_BASES:-"100 1000 10000 100000"}
ROPE_BASES=${ROPE_BASES:-"100 1000 10000 100000 1000000"}
CLIPS=${CLIPS:-"2 4 8 16 32"}
csv="$OUT/sweep.csv"
echo "sweep,value,ppl_L,ppl_8L" > "$csv"
start=$(date +%s)
run() {  # run SWEEP VALUE train-options...
  local sweep=$1 value=$2
  shift 2
  # shellcheck disable=SC2086
  ./train --data "$DATA" --ctx "$L" --steps "$STEPS" --lr "$LR" --eval-ctx "$L,$((8 * L))" --quiet $ARGS "$@" > "$tmp/out"
  local a b
  a=$(sed -n "s/^eval ctx=$L loss=[0-9.]* ppl=\([0-9.]*\)$/\1/p" "$tmp/out")
  b=$(sed -n "s/^eval ctx=$((8 * L)) loss=[0-9.]* ppl=\([0-9.]*\)$/\1/p" "$tmp/out")
  echo "$sweep,$value,$a,$b" | tee -a "$csv"
}
for b in $SIN_BASES; do run "sinusoidal base" "$b" --pe sinusoidal --sin-base "$b"; done
for b in $ROPE_BASES; do run "rope base" "$b" --pe rope --rope-base "$b"; done
for k in $CLIPS; do run "xl rel-clip" "$k" --pe xl --rel-clip "$k"; done
for k in $CLIPS; do run "shaw rel-clip" "$k" --pe shaw --rel-clip "$k"; done
elapsed=$(( $(date +%s) - start ))
awk -F, -v L="$L" 'NR > 1 { print $1 " @" L "," $2 "," $3; print $1 " @" 8 * L "," $2 "," $4 }' "$csv" > "$tmp/plot.csv"
./pelab-plot --out "$OUT/sweep.png" --logx --logy --xlabel "base (sinusoidal, rope) or clipping distance (xl, shaw)" \
       --ylabel "perplexity" --title "sweeps on $(basename "$DATA"): ppl at $L and $((8 * L))" "$tmp/plot.csv"
{
  echo "# Sweeps: base frequencies and clipping distances"
  echo
  echo "Command: \`scripts/sweep.sh DATA=$DATA L=$L STEPS=$STEPS LR=$LR${ARGS:+ ARGS=\"$ARGS\"}\` — $(date -u +%Y-%m-%d), $(nproc) cores, ${elapsed}s."
  echo "Each row trains \`./train --data $DATA --ctx $L --steps $STEPS --lr $LR\` with the one option changed and evaluates at $L and $((8 * L))."
  echo
  echo "| sweep | value | ppl at $L | ppl at $((8 * L)) |"
  echo "|---|---|---|---|"
  awk -F, 'NR > 1 { printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$csv"
  echo
  echo "![sweep](sweep.png)"
} > "$OUT/sweep.md"
cat "$OUT/sweep.md"
