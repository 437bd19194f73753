#!/usr/bin/env bash
# Train short, test long (Press et al. 2022): every encoding trained at
# context L with the same budget, evaluated at L, 2L, 4L, 8L and 16L; plus RoPE
# evaluated with the pi, ntk and yarn context extensions. Writes
# results/extrapolation.csv, results/extrapolation.md, results/extrapolation.png.
#
#   scripts/extrapolate.sh                                   # built-in cats corpus
#   scripts/extrapolate.sh DATA=../shared/data/tinyshakespeare.txt
#   scripts/extrapolate.sh DATA=book.txt L=128 STEPS=4000 ARGS="--d-model 128"
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/train-short.sh
. scripts/train-short.sh
# every encoding of the registry (not the composites)
ENCODINGS=${ENCODINGS:-$(./train --list-pe | awk '$2 != "composite" { print $1 }')}
lengths="$L,$((2 * L)),$((4 * L)),$((8 * L)),$((16 * L))"
csv="$OUT/extrapolation.csv"
echo "pe,ctx,loss,ppl" > "$csv"
collect() {  # collect NAME < train output
  sed -n 's/^eval ctx=\([0-9]*\) loss=\([0-9.]*\) ppl=\([0-9.]*\)$/\1,\2,\3/p; s/^eval ctx=\([0-9]*\) refused$/\1,,/p' |
    while IFS= read -r row; do echo "$1,$row" >> "$csv"; done
}
start=$(date +%s)
for pe in $ENCODINGS; do
  echo "== $pe"
  # shellcheck disable=SC2086
  ./train --data "$DATA" --pe "$pe" --ctx "$L" --steps "$STEPS" --lr "$LR" --eval-ctx "$lengths" \
          --save "$tmp/$pe.ck" --quiet $ARGS 2> "$tmp/err" | tee "$tmp/out" | grep '^eval' || true
  collect "$pe" < "$tmp/out"
done
# each encoding with a --rope-scale option, evaluated again with each of its
# context extensions (the choices --list-pe shows, but none)
for pe in $ENCODINGS; do
  scales=$(./train --list-pe | awk -v pe="$pe" '$1 == pe { for (i = 1; i < NF; i++) if ($i ~ /--rope-scale/) print $(i + 1) }' |
           tr '|' ' ' | sed 's/\bnone\b//')
  for scale in $scales; do
    echo "== $pe+$scale"
    ./train --load "$tmp/$pe.ck" --data "$DATA" --eval-ctx "$lengths" --rope-scale "$scale" --quiet | tee "$tmp/out" | grep '^eval' || true
    collect "$pe ($scale)" < "$tmp/out"
  done
done
elapsed=$(( $(date +%s) - start ))
awk -F, 'NR > 1 && $4 != "" { print $1 "," $2 "," $4 }' "$csv" > "$tmp/plot.csv"
./pelab-plot --out "$OUT/extrapolation.png" --logx --logy --xlabel "evaluation length (tokens)" --ylabel "perplexity" \
       --title "trained at $L on $(basename "$DATA"), evaluated longer" "$tmp/plot.csv"
{
  echo "# Extrapolation: trained at ctx $L, perplexity at longer contexts"
  echo
  echo "Command: \`scripts/extrapolate.sh DATA=$DATA L=$L STEPS=$STEPS LR=$LR${ARGS:+ ARGS=\"$ARGS\"}\` — $(date -u +%Y-%m-%d), $(nproc) cores, ${elapsed}s."
  echo "Each encoding: \`./train --data $DATA --pe PE --ctx $L --steps $STEPS --lr $LR $ARGS --eval-ctx $lengths\`; the rope rows marked (pi), (ntk), (yarn) evaluate the same rope checkpoint with \`--rope-scale\`. Perplexity over non-overlapping windows of each length, each scored on its own; — = refused (a learned table has no rows past ctx)."
  echo
  awk -F, -v lengths="$lengths" '
    BEGIN { nl = split(lengths, Ls, ","); printf "| pe |"; for (i = 1; i <= nl; i++) printf " %s |", Ls[i]; printf "\n|---|"; for (i = 1; i <= nl; i++) printf "---|"; printf "\n" }
    NR > 1 { if (!($1 in seen)) { seen[$1] = 1; order[++np] = $1 } v[$1 "," $2] = ($4 == "" ? "—" : sprintf("%.3f", $4)) }
    END { for (p = 1; p <= np; p++) { printf "| %s |", order[p]; for (i = 1; i <= nl; i++) { k = order[p] "," Ls[i]; printf " %s |", (k in v ? v[k] : "") } printf "\n" } }' "$csv"
  echo
  echo "![extrapolation](extrapolation.png)"
} > "$OUT/extrapolation.md"
cat "$OUT/extrapolation.md"
