#!/usr/bin/env bash
# Every encoding and composite with the defaults (cats, causal): parameters,
# training tokens/s, validation loss and order_acc. Writes
# results/encodings.csv and results/encodings.md.
#
#   scripts/encodings.sh                     # all of them, ~6 minutes on 2 cores
#   ENCODINGS="rope alibi" scripts/encodings.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ARGS=${ARGS:-}
OUT=${OUT:-results}
mkdir -p "$OUT"
make -s train
# every encoding and composite of the registry
ENCODINGS=${ENCODINGS:-$(./train --list-pe | awk '{ print $1 }')}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
csv="$OUT/encodings.csv"
echo "pe,params,tokens_per_s,final_loss,eval_loss,ppl,order_acc,seconds" > "$csv"
for pe in $ENCODINGS; do
  # shellcheck disable=SC2086
  ./train --pe "$pe" --quiet --json "$tmp/r.json" $ARGS > "$tmp/out"
  row=$(awk -v pe="$pe" '
          { if (match($0, /"params": [0-9]+/)) params = substr($0, RSTART + 10, RLENGTH - 10)
            if (match($0, /"tokens_per_s": [0-9.]+/)) tps = substr($0, RSTART + 16, RLENGTH - 16)
            if (match($0, /"final_loss": [0-9.]+/)) fl = substr($0, RSTART + 14, RLENGTH - 14)
            if (match($0, /"seconds": [0-9.]+/)) secs = substr($0, RSTART + 11, RLENGTH - 11)
            if (match($0, /"loss": [0-9.]+, "ppl": [0-9.]+/)) { split(substr($0, RSTART, RLENGTH), a, /[ ,]+/); el = a[2]; ppl = a[4] }
            if (match($0, /"acc": [0-9.]+/)) acc = substr($0, RSTART + 7, RLENGTH - 7) }
          END { printf "%s,%s,%.0f,%s,%s,%s,%s,%s\n", pe, params, tps, fl, el, ppl, acc, secs }' "$tmp/r.json")
  echo "$row" >> "$csv"
  echo "$row"
done
{
  echo "# Every encoding with the defaults"
  echo
  echo "Command: \`scripts/encodings.sh\`${ARGS:+ with ARGS=\"$ARGS\"} — $(date -u +%Y-%m-%d), $(nproc) cores, \`./train --pe PE\` with every other option at its default (cats, causal, d 64, 2 layers, 4 heads, ctx 64, batch 16, 2500 steps, lr 6e-3)."
  echo
  echo "| pe | params | train tokens/s | final train loss | val loss | val ppl | order_acc |"
  echo "|---|---|---|---|---|---|---|"
  awk -F, 'NR > 1 { printf "| %s | %s | %s | %.4f | %.4f | %.3f | %.3f |\n", $1, $2, $3, $4, $5, $6, $7 }' "$csv"
} > "$OUT/encodings.md"
cat "$OUT/encodings.md"
