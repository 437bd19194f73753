#!/usr/bin/env bash
# Train short, test long (Press et al. 2022): every encoding trained at
# context L with the same budget, over several seeds, evaluated at L, 2L, 4L,
# 8L and 16L; plus each encoding with a --rope-scale option evaluated again
# with each context extension. Writes results/extrapolation.csv (one row per
# run and length), results/extrapolation.md (mean ± 95% interval over seeds)
# and results/extrapolation.png (mean, band: lowest to highest seed).
#
#   scripts/extrapolate.sh                                   # built-in cats corpus, 3 seeds
#   scripts/extrapolate.sh DATA=../shared/data/tinyshakespeare.txt
#   scripts/extrapolate.sh DATA=book.txt L=128 STEPS=4000 ARGS="--d-model 256 --heads 4 --layers 4" NAME=extrapolation_hs64
#   QUICK=1 scripts/extrapolate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DEFAULT_SEEDS="1 2 3"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
DATA=${DATA:-cats}
L=${L:-64}
STEPS=${STEPS:-3000}
LR=${LR:-3e-3}
NAME=${NAME:-extrapolation}  # the output files' name
EVAL_TOKENS=${EVAL_TOKENS:-16384}
if [ "$QUICK" = 1 ]; then STEPS=30 EVAL_TOKENS=512; fi
# every encoding of the registry (not the composites)
ENCODINGS=${ENCODINGS:-$(./train --list-pe | awk '$2 != "composite" { print $1 }')}
lengths="$L,$((2 * L)),$((4 * L)),$((8 * L)),$((16 * L))"
for pe in $ENCODINGS; do
  for seed in $SEEDS; do
    echo "$pe@$seed --data $DATA --pe $pe --seed $seed --ctx $L --steps $STEPS --lr $LR --eval-ctx $lengths --eval-tokens $EVAL_TOKENS --save $tmp/$pe@$seed.ck $ARGS"
  done
done > "$tmp/train"
run_all "$tmp/train"
t_train=$elapsed
# each encoding with a --rope-scale option, its checkpoints evaluated again
# with each of its context extensions (the choices --list-pe shows, but none)
for pe in $ENCODINGS; do
  scales=$(./train --list-pe | awk -v pe="$pe" '$1 == pe { for (i = 1; i < NF; i++) if ($i ~ /--rope-scale/) print $(i + 1) }' |
           tr '|' ' ' | sed 's/\bnone\b//')
  for scale in $scales; do
    for seed in $SEEDS; do
      echo "$pe($scale)@$seed --load $tmp/$pe@$seed.ck --data $DATA --seed $seed --eval-ctx $lengths --eval-tokens $EVAL_TOKENS --rope-scale $scale"
    done
  done
done > "$tmp/scaled"
if [ -s "$tmp/scaled" ]; then run_all "$tmp/scaled"; fi
elapsed=$((t_train + ${elapsed:-0}))

csv="$OUT/$NAME.csv"
length_csv "$csv" "$tmp/train" "$tmp/scaled"
length_plot "$csv" "$OUT/$NAME.png" "trained at $L on $(basename "$DATA"), evaluated longer ($n_seeds seeds)"
{
  echo "# Extrapolation: trained at ctx $L, perplexity at longer contexts"
  echo
  echo "Command: \`scripts/extrapolate.sh DATA=$DATA L=$L STEPS=$STEPS LR=$LR SEEDS=\"$SEEDS\"${ARGS:+ ARGS=\"$ARGS\"}\` — $(date -u +%Y-%m-%d), $(nproc) cores, $JOBS single-thread runs at a time, ${elapsed}s."
  echo "Each encoding and seed: \`./train --data $DATA --pe PE --seed S --ctx $L --steps $STEPS --lr $LR $ARGS --eval-ctx $lengths\`; rows marked (pi), (ntk), (yarn) evaluate the same checkpoints with \`--rope-scale\`. Perplexity over non-overlapping windows of each length, each scored on its own; mean ± 95% interval (Student t) over the seeds; — = refused (a learned table has no rows past ctx)."
  echo
  length_table "$csv" "$lengths"
  echo
  echo "![extrapolation]($NAME.png)"
} > "$OUT/$NAME.md"
cat "$OUT/$NAME.md"
