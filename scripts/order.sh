#!/usr/bin/env bash
# The order experiment: can the model tell "the cat chases the dog" from
# "the dog chases the cat"? Trains every encoding on the built-in cats corpus,
# causal and bidirectional, over several seeds with the trainer's defaults,
# records the learning curve (--eval-every) and scores order_acc on the
# held-out triples. Writes results/order.csv (one row per run),
# results/order_curve.csv (every curve point), results/order.md (solve rate,
# median steps to solve, mean ± 95% interval), results/order.png (order_acc
# against step: median and range over seeds) and the attention pictures
# results/attn_{none,rope}_{bidir,causal}.png.
#
#   scripts/order.sh                         # 5 seeds, every encoding, both modes
#   SEEDS="1 2 3 4 5 6 7 8 9 10" JOBS=2 scripts/order.sh
#   ARGS="--lr 3e-3" OUT=/tmp/try scripts/order.sh
#   QUICK=1 scripts/order.sh                 # a tiny budget: checks the script runs
#   ENCODINGS="fire cope" NAME=order_new scripts/order.sh   # results/order_new.{csv,md,png}
#
# JOBS single-thread runs go in parallel (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
DEFAULT_SEEDS="1 2 3 4 5"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
MODES=${MODES:-"causal bidir"}
EVAL_EVERY=${EVAL_EVERY:-100}
PICTURES=${PICTURES:-"none rope"}  # encodings whose attention is drawn (first seed)
NAME=${NAME:-order}  # the output files' name: NAME.csv, NAME_curve.csv, NAME.md, NAME.png
if [ "$QUICK" = 1 ]; then EVAL_EVERY=20 ARGS="$ARGS --steps 60 --eval-tokens 256"; fi
# every encoding of the registry (not the composites)
enc_given=${ENCODINGS:-}
ENCODINGS=${ENCODINGS:-$(./train --list-pe | awk '$2 != "composite" { print $1 }')}
# the settings that differ from the defaults, for the table's command line
given="SEEDS=\"$SEEDS\""
if [ "$THREADS" != 1 ]; then given="THREADS=$THREADS JOBS=$JOBS $given"; fi
if [ "$MODES" != "causal bidir" ]; then given="$given MODES=\"$MODES\""; fi
if [ -n "$enc_given" ]; then given="$given ENCODINGS=\"$enc_given\""; fi
if [ "$NAME" != order ]; then given="$given NAME=$NAME"; fi
first_seed=${SEEDS%% *}
jobs_file="$tmp/jobs"
for pe in $ENCODINGS; do
  for mode in $MODES; do
    mode_allowed "$pe" "$mode" || continue
    for seed in $SEEDS; do
      png=""
      if [ "$seed" = "$first_seed" ] && [[ " $PICTURES " == *" $pe "* ]]; then png="--attn-png $OUT/attn_${pe}_${mode}.png"; fi
      echo "$pe@$mode@$seed --pe $pe --attn $mode --seed $seed --eval-every $EVAL_EVERY $png $ARGS"
    done
  done
done > "$jobs_file"
run_all "$jobs_file"

# One row per run, and the curves, from the JSON files.
csv="$OUT/$NAME.csv" curve="$OUT/${NAME}_curve.csv"
echo "pe,attn,seed,order_acc,eval_loss,steps_to_95,seconds" > "$csv"
echo "pe,attn,seed,step,val_loss,order_acc" > "$curve"
while read -r id _; do
  IFS=@ read -r pe mode seed <<< "$id"
  f="$tmp/$id.json"
  secs=$(cat "$tmp/$id.secs")
  # the JSON is one line: pull the numbers out with awk
  awk -v pe="$pe" -v mode="$mode" -v seed="$seed" -v secs="$secs" -v curve="$curve" '
    { line = $0
      match(line, /"order": \{"acc": [0-9.]+/); acc = substr(line, RSTART + 17, RLENGTH - 17)
      match(line, /"eval": \[\{"ctx": [0-9]+, "loss": [0-9.]+/); ev = substr(line, RSTART, RLENGTH); sub(/.*"loss": /, "", ev)
      solved = ""
      rest = line
      while (match(rest, /\{"step": [0-9]+, "train_loss": [^,]+, "val_loss": [^,]+, "order_acc": [0-9.]+\}/)) {
        p = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
        gsub(/[{}"]/, "", p); n = split(p, kv, /, /)
        for (i = 1; i <= n; i++) { split(kv[i], x, ": "); v[x[1]] = x[2] }
        printf "%s,%s,%s,%s,%s,%s\n", pe, mode, seed, v["step"], v["val_loss"], v["order_acc"] >> curve
        if (solved == "" && v["order_acc"] + 0 >= 0.95) solved = v["step"]
      }
      printf "%s,%s,%s,%s,%s,%s,%s\n", pe, mode, seed, acc, ev, solved, secs }' "$f" >> "$csv"
done < "$jobs_file"

# The table: per encoding and mode, solve rate (seeds reaching 0.95), median
# steps to reach it (solved seeds), mean order_acc ± 95% interval (Student t
# over seeds), and the per-seed values.
steps_default=$(./train --help | sed -n 's/.*--steps N .*\[\([0-9]*\)\]/\1/p')
{
  echo "# Order: order_acc on held-out triples, over seeds"
  echo
  echo "Command: \`$given${ARGS:+ ARGS=\"$ARGS\"} scripts/order.sh\` — $(date -u +%Y-%m-%d), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1)${OPENBLAS_CORETYPE:+, OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE}), $JOBS runs at a time of $THREADS thread(s) each, ${elapsed}s in all."
  echo "Each run: \`./train --pe PE --attn MODE --seed S --eval-every $EVAL_EVERY${ARGS:+ $ARGS}\`, every other option at its default (cats, d 64, 2 layers, 4 heads, ctx 64, batch 16, ${steps_default} steps)."
  echo "Solved: order_acc ≥ 0.95 at some point of the curve (every $EVAL_EVERY steps); steps to solve: the first such step, median over the solved seeds."
  echo "Mean ± 95% interval: Student t over seeds. Chance is 0.5 for a model that answers with one of the two nouns; 0.04 (1/24) for one that always names the same noun."
  echo
  awk -F, -f scripts/stats.awk -f /dev/stdin "$csv" <<'AWK'
NR == 1 { next }
{ key = $1 "," $2
  if (!(key in n)) order[++nk] = key
  n[key]++; acc[key, n[key]] = $4; seeds[key] = seeds[key] (n[key] > 1 ? " " : "") sprintf("%.2f", $4)
  if ($6 != "") { ns[key]++; st[key, ns[key]] = $6 } }
END {
  print "| pe | attn | solved | median steps to solve | final order_acc (mean ± 95%) | per seed |"
  print "|---|---|---|---|---|---|"
  for (k = 1; k <= nk; k++) {
    key = order[k]; split(key, pm, ",")
    delete x; for (i = 1; i <= n[key]; i++) x[i] = acc[key, i]
    delete y; for (i = 1; i <= ns[key]; i++) y[i] = st[key, i]
    med = ns[key] ? median(y, ns[key]) : "—"
    printf "| %s | %s | %d/%d | %s | %s | %s |\n", pm[1], pm[2], ns[key] + 0, n[key], med, mean_ci(x, n[key], "%.3f"), seeds[key]
  }
}
AWK
  echo
  echo "![order accuracy against step]($NAME.png)"
} > "$OUT/$NAME.md"

# The picture: one chart per mode; per encoding, the median order_acc over
# seeds at each step, with the band from the lowest to the highest seed.
awk -F, 'NR > 1 { key = $2 "|" $1 "," $4; k[key] = 1; v[key] = v[key] " " $6 }
  END { for (key in k) { n = split(v[key], a, " "); for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        med = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2; print key "," med "," a[1] "," a[n] } }' "$curve" |
  sort -t, -k1,1 -k2,2n > "$tmp/plot.csv"
./pelab-plot --out "$OUT/$NAME.png" --panels --xlabel "training step" --ylabel "order_acc (median, band: all seeds)" \
             --title "order accuracy on held-out triples, $n_seeds seeds" "$tmp/plot.csv"
cat "$OUT/$NAME.md"
