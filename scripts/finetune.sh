#!/usr/bin/env bash
# RoPE's context extensions with the short fine-tune they were proposed with
# (Chen et al. 2023, PI; Peng et al. 2023, YaRN): RoPE trained at L, then
# fine-tuned FT_STEPS steps at LONG (--init) with --rope-scale none, pi, ntk
# and yarn, every model evaluated at L … 16L; the base model too, as it is
# and with each extension applied at evaluation only. Writes
# results/finetune.csv (one row per run and length), results/finetune.md
# (mean ± 95% interval over seeds) and results/finetune.png.
#
#   scripts/finetune.sh                                         # cats, 3 seeds
#   scripts/finetune.sh DATA=../shared/data/tinyshakespeare.txt
#   QUICK=1 scripts/finetune.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DEFAULT_SEEDS="1 2 3"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
DATA=${DATA:-cats}
L=${L:-64}
LONG=${LONG:-$((4 * L))}
STEPS=${STEPS:-3000}
FT_STEPS=${FT_STEPS:-200}
FT_LR=${FT_LR:-1e-3}
EVAL_TOKENS=${EVAL_TOKENS:-16384}
NAME=${NAME:-finetune}
if [ "$QUICK" = 1 ]; then STEPS=30 FT_STEPS=6 EVAL_TOKENS=512; fi
lengths="$L,$((2 * L)),$((4 * L)),$((8 * L)),$((16 * L))"
for seed in $SEEDS; do
  echo "base@$seed --data $DATA --pe rope --seed $seed --ctx $L --steps $STEPS --eval-ctx $lengths --eval-tokens $EVAL_TOKENS --save $tmp/base@$seed.ck $ARGS"
done > "$tmp/base"
run_all "$tmp/base"
t_base=$elapsed
methods="none pi ntk yarn"
for seed in $SEEDS; do
  for m in pi ntk yarn; do
    echo "base ($m at eval)@$seed --load $tmp/base@$seed.ck --data $DATA --seed $seed --eval-ctx $lengths --eval-tokens $EVAL_TOKENS --rope-scale $m"
  done
  for m in $methods; do
    scale=""
    if [ "$m" != none ]; then scale="--rope-scale $m"; fi
    echo "fine-tuned ($m)@$seed --init $tmp/base@$seed.ck --data $DATA --seed $seed --ctx $LONG --steps $FT_STEPS --lr $FT_LR --warmup $((FT_STEPS / 10)) $scale --eval-ctx $lengths --eval-tokens $EVAL_TOKENS"
  done
done | sed 's/ (\([a-z]*\)[a-z ]*)@/(\1)@/; s/^base(\([a-z]*\))@/base-eval(\1)@/' > "$tmp/ft"
run_all "$tmp/ft"
elapsed=$((t_base + elapsed))
csv="$OUT/$NAME.csv"
length_csv "$csv" "$tmp/base" "$tmp/ft"
length_plot "$csv" "$OUT/$NAME.png" "RoPE trained at $L, fine-tuned $FT_STEPS steps at $LONG ($n_seeds seeds)"
{
  echo "# RoPE context extension with fine-tuning: trained at $L, fine-tuned at $LONG"
  echo
  echo "Command: \`scripts/finetune.sh DATA=$DATA L=$L LONG=$LONG STEPS=$STEPS FT_STEPS=$FT_STEPS FT_LR=$FT_LR SEEDS=\"$SEEDS\"${ARGS:+ ARGS=\"$ARGS\"}\` — $(date -u +%Y-%m-%d), $(nproc) cores, $JOBS single-thread runs at a time, ${elapsed}s."
  echo "base: \`./train --data $DATA --pe rope --ctx $L --steps $STEPS $ARGS\`; base-eval (x): the same checkpoint evaluated with \`--rope-scale x\`; fine-tuned (x): \`./train --init BASE --ctx $LONG --steps $FT_STEPS --lr $FT_LR --warmup $((FT_STEPS / 10)) --rope-scale x\` (factor $LONG/$L, kept at every evaluation). Perplexity over non-overlapping windows of each length; mean ± 95% interval (Student t) over the seeds."
  echo
  length_table "$csv" "$lengths"
  echo
  echo "![fine-tuning]($NAME.png)"
} > "$OUT/$NAME.md"
cat "$OUT/$NAME.md"
