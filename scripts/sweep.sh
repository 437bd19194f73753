#!/usr/bin/env bash
# The tuning knobs, measured over seeds: sinusoidal base, RoPE base (100 to
# 1e6), the relative clipping distance of xl and shaw, and p-RoPE's fraction
# of rotated pairs; each as perplexity
# at the training context L and at 8L. Writes results/sweep.csv (one row per
# run), results/sweep.md (mean ± 95% interval) and results/sweep.png (small
# multiples: one chart per knob, mean with a band from the lowest to the
# highest seed).
#
#   scripts/sweep.sh                                          # built-in cats corpus, 3 seeds
#   scripts/sweep.sh DATA=../shared/data/tinyshakespeare.txt STEPS=2000
#   QUICK=1 scripts/sweep.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DEFAULT_SEEDS="1 2 3"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
DATA=${DATA:-cats}
L=${L:-64}
STEPS=${STEPS:-3000}
LR=${LR:-3e-3}
SIN_BASES=${SIN_BASES:-"100 1000 10000 100000"}
ROPE_BASES=${ROPE_BASES:-"100 1000 10000 100000 1000000"}
CLIPS=${CLIPS:-"2 4 8 16 32"}
FRACTIONS=${FRACTIONS:-"0.25 0.5 0.75 1"}  # p-RoPE (Barbero et al. 2024); p = 0 is NoPE
EVAL_TOKENS=${EVAL_TOKENS:-16384}
if [ "$QUICK" = 1 ]; then STEPS=30 EVAL_TOKENS=512 SIN_BASES="100 10000" ROPE_BASES="100 10000" CLIPS="2 16" FRACTIONS="0.5 1"; fi
{
  for seed in $SEEDS; do
    for b in $SIN_BASES; do echo "sinusoidal-base@$b@$seed --pe sinusoidal --sin-base $b --seed $seed"; done
    for b in $ROPE_BASES; do echo "rope-base@$b@$seed --pe rope --rope-base $b --seed $seed"; done
    for k in $CLIPS; do echo "xl-rel-clip@$k@$seed --pe xl --rel-clip $k --seed $seed"; done
    for k in $CLIPS; do echo "shaw-rel-clip@$k@$seed --pe shaw --rel-clip $k --seed $seed"; done
    for p in $FRACTIONS; do echo "rope-fraction@$p@$seed --pe rope --rope-fraction $p --seed $seed"; done
  done
} | sed "s|\$| --data $DATA --ctx $L --steps $STEPS --lr $LR --eval-ctx $L,$((8 * L)) --eval-tokens $EVAL_TOKENS $ARGS|" > "$tmp/jobs"
run_all "$tmp/jobs"

csv="$OUT/sweep.csv"
echo "sweep,value,seed,ppl_L,ppl_8L" > "$csv"
while read -r id _; do
  IFS=@ read -r sweep value seed <<< "$id"
  a=$(sed -n "s/^eval ctx=$L loss=[0-9.]* ppl=\([0-9.]*\)$/\1/p" "$tmp/$id.out")
  b=$(sed -n "s/^eval ctx=$((8 * L)) loss=[0-9.]* ppl=\([0-9.]*\)$/\1/p" "$tmp/$id.out")
  echo "${sweep//-/ },$value,$seed,$a,$b"
done < "$tmp/jobs" >> "$csv"

# one chart per knob: ppl at L and at 8L against the value, mean and band
awk -F, -v L="$L" 'NR > 1 { for (c = 4; c <= 5; c++) { k = $1 "|ppl at " (c == 4 ? L : 8 * L) "," $2
                              if (!(k in n)) order[++nk] = k; n[k]++; s[k] += $c
                              if (!(k in lo) || $c < lo[k]) lo[k] = $c; if (!(k in hi) || $c > hi[k]) hi[k] = $c } }
  END { for (i = 1; i <= nk; i++) { k = order[i]; printf "%s,%.4f,%.4f,%.4f\n", k, s[k] / n[k], lo[k], hi[k] } }' "$csv" |
  sort -t, -k1,1 -k2,2g > "$tmp/plot.csv"
./pelab-plot --out "$OUT/sweep.png" --panels --logx --logy --xlabel "value" --ylabel "perplexity (mean; band: all seeds)" \
       --title "sweeps on $(basename "$DATA"), $n_seeds seeds" "$tmp/plot.csv"
{
  echo "# Sweeps: base frequencies, clipping distances, p-RoPE fractions"
  echo
  echo "Command: \`scripts/sweep.sh DATA=$DATA L=$L STEPS=$STEPS LR=$LR SEEDS=\"$SEEDS\"${ARGS:+ ARGS=\"$ARGS\"}\` — $(date -u +%Y-%m-%d), $(nproc) cores, $JOBS single-thread runs at a time, ${elapsed}s."
  echo "Each row trains \`./train --data $DATA --ctx $L --steps $STEPS --lr $LR --seed S\` with the one option changed and evaluates at $L and $((8 * L)); mean ± 95% interval (Student t) over the seeds."
  echo
  echo "| sweep | value | ppl at $L | ppl at $((8 * L)) |"
  echo "|---|---|---|---|"
  awk -F, -f scripts/stats.awk -f /dev/stdin "$csv" <<'AWK'
NR > 1 { k = $1 "," $2; if (!(k in n)) order[++nk] = k; n[k]++; a[k, n[k]] = $4; b[k, n[k]] = $5 }
END { for (i = 1; i <= nk; i++) { k = order[i]; split(k, kv, ",")
        delete x; delete y; for (j = 1; j <= n[k]; j++) { x[j] = a[k, j]; y[j] = b[k, j] }
        printf "| %s | %s | %s | %s |\n", kv[1], kv[2], mean_ci(x, n[k], "%.3f"), mean_ci(y, n[k], "%.3f") } }
AWK
  echo
  echo "![sweep](sweep.png)"
} > "$OUT/sweep.md"
cat "$OUT/sweep.md"
