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
echo "pe,seed,ctx,loss,ppl" > "$csv"
cat "$tmp/train" "$tmp/scaled" | while read -r id _; do
  pe=${id%@*} seed=${id##*@}
  sed -n 's/^eval ctx=\([0-9]*\) loss=\([0-9.]*\) ppl=\([0-9.]*\)$/\1,\2,\3/p; s/^eval ctx=\([0-9]*\) refused$/\1,,/p' "$tmp/$id.out" |
    sed "s/^/$pe,$seed,/" | sed 's/(\([a-z]*\))/ (\1)/'
done >> "$csv"

# mean and band (lowest to highest seed) per encoding and length, for the picture
awk -F, 'NR > 1 && $5 != "" { k = $1 "," $3; if (!(k in n)) order[++nk] = k; n[k]++; s[k] += $5
                              if (!(k in lo) || $5 < lo[k]) lo[k] = $5; if (!(k in hi) || $5 > hi[k]) hi[k] = $5 }
         END { for (i = 1; i <= nk; i++) { k = order[i]; printf "%s,%.4f,%.4f,%.4f\n", k, s[k] / n[k], lo[k], hi[k] } }' "$csv" > "$tmp/plot.csv"
./pelab-plot --out "$OUT/$NAME.png" --logx --logy --xlabel "evaluation length (tokens)" --ylabel "perplexity (mean; band: all seeds)" \
       --title "trained at $L on $(basename "$DATA"), evaluated longer ($n_seeds seeds)" "$tmp/plot.csv"
{
  echo "# Extrapolation: trained at ctx $L, perplexity at longer contexts"
  echo
  echo "Command: \`scripts/extrapolate.sh DATA=$DATA L=$L STEPS=$STEPS LR=$LR SEEDS=\"$SEEDS\"${ARGS:+ ARGS=\"$ARGS\"}\` — $(date -u +%Y-%m-%d), $(nproc) cores, $JOBS single-thread runs at a time, ${elapsed}s."
  echo "Each encoding and seed: \`./train --data $DATA --pe PE --seed S --ctx $L --steps $STEPS --lr $LR $ARGS --eval-ctx $lengths\`; rows marked (pi), (ntk), (yarn) evaluate the same checkpoints with \`--rope-scale\`. Perplexity over non-overlapping windows of each length, each scored on its own; mean ± 95% interval (Student t) over the seeds; — = refused (a learned table has no rows past ctx)."
  echo
  awk -F, -v lengths="$lengths" -f scripts/stats.awk -f /dev/stdin "$csv" <<'AWK'
BEGIN { nl = split(lengths, Ls, ",")
        printf "| pe |"; for (i = 1; i <= nl; i++) printf " %s |", Ls[i]; printf "\n|---|"; for (i = 1; i <= nl; i++) printf "---|"; printf "\n" }
NR > 1 { if (!($1 in seen)) { seen[$1] = 1; order[++np] = $1 }
         k = $1 "," $3; if ($5 == "") refused[k] = 1; else { n[k]++; v[k, n[k]] = $5 } }
END { for (p = 1; p <= np; p++) {
        printf "| %s |", order[p]
        for (i = 1; i <= nl; i++) {
          k = order[p] "," Ls[i]
          if (n[k]) { delete x; for (j = 1; j <= n[k]; j++) x[j] = v[k, j]; printf " %s |", mean_ci(x, n[k], "%.2f") }
          else printf " %s |", (k in refused ? "—" : "")
        }
        printf "\n" } }
AWK
  echo
  echo "![extrapolation]($NAME.png)"
} > "$OUT/$NAME.md"
cat "$OUT/$NAME.md"
