#!/usr/bin/env bash
# The length-generalisation tasks (README "Tasks"): every encoding × every
# task × seeds, the same budget for all, trained at sizes --task-len and
# scored at the training sizes and at 2× and 4× (the defaults of
# --test-len). Writes results/tasks.csv (one row per run and size range),
# results/tasks.md (mean ± 95% interval over seeds, per size range),
# results/tasks.png (a heatmap: encodings × tasks, mean accuracy at 2×) and
# results/tasks_length.png (per task, accuracy against size).
#
#   scripts/tasks.sh                                   # 5 seeds, 2000 steps
#   TASKS="copy flipflop" ENCODINGS="none rope" SEEDS="1 2 3" scripts/tasks.sh
#   QUICK=1 scripts/tasks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DEFAULT_SEEDS="1 2 3 4 5"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
STEPS=${STEPS:-2000}
TASK_EVAL=${TASK_EVAL:-500}
NAME=${NAME:-tasks}  # the output files' name: NAME.csv, NAME.md, NAME.png, NAME_length.png
TASKS_GIVEN=${TASKS:-}
TASKS=${TASKS:-"copy reverse sort addition count selective-copy flipflop"}
if [ "$QUICK" = 1 ]; then STEPS=30 TASK_EVAL=20 TASKS=${QUICK_TASKS:-"copy flipflop"}; fi
given="SEEDS=\"$SEEDS\" STEPS=$STEPS"  # the settings for the table's command line
if [ -n "${ENCODINGS:-}" ]; then given="$given ENCODINGS=\"$ENCODINGS\""; fi
if [ -n "${TASKS_GIVEN:-}" ]; then given="$given TASKS=\"$TASKS\""; fi
if [ "$NAME" != tasks ]; then given="$given NAME=$NAME"; fi
ENCODINGS=${ENCODINGS:-$(./train --list-pe | awk '$2 != "composite" { print $1 }')}
# The accuracy-against-size picture draws a line per task and encoding, and
# pelab-plot takes at most 128: refuse before training, not after.
n_series=$(( $(echo $TASKS | wc -w) * $(echo $ENCODINGS | wc -w) ))
if [ "$n_series" -gt 128 ]; then
  echo "tasks.sh: $n_series task and encoding pairs; the picture takes at most 128 (give fewer TASKS or ENCODINGS)" >&2
  exit 2
fi
for task in $TASKS; do
  for pe in $ENCODINGS; do
    for seed in $SEEDS; do
      echo "$task@$pe@$seed --data task:$task --pe $pe --seed $seed --steps $STEPS --task-eval $TASK_EVAL $ARGS"
    done
  done
done > "$tmp/jobs"
run_all "$tmp/jobs"

# One row per run and size range, from the task lines ("" when refused).
csv="$OUT/$NAME.csv"
echo "task,pe,seed,lo,hi,train,acc" > "$csv"
while read -r id _; do
  IFS=@ read -r task pe seed <<< "$id"
  awk -v task="$task" -v pe="$pe" -v seed="$seed" '
    /^task=/ { split($2, r, /[=-]/); acc = ""; if ($3 ~ /^acc=/) acc = substr($3, 5)
               printf "%s,%s,%s,%s,%s,%d,%s\n", task, pe, seed, r[2], r[3], ++k == 1, acc }' "$tmp/$id.out"
done < "$tmp/jobs" >> "$csv"

n_seeds=$(echo "$SEEDS" | wc -w)
# table SIZES_INDEX TITLE: encodings × tasks at the k-th size range of each task
# (1: the training sizes, 2: 2×, 3: 4×), mean ± 95% interval (— = refused).
table() {
  awk -F, -v want="$1" -f scripts/stats.awk -f /dev/stdin "$csv" <<'AWK'
NR == 1 { next }
{ key = $1 "," $2 "," $3; idx[key]++                       # the size ranges of one run, in order
  if (idx[key] != want) next
  if (!($1 in seen_t)) { seen_t[$1] = 1; tasks[++nt] = $1; range[$1] = $4 "–" $5 }
  if (!($2 in seen_p)) { seen_p[$2] = 1; pes[++np] = $2 }
  c = $2 "," $1
  if ($7 == "") refused[c] = 1; else { n[c]++; v[c, n[c]] = $7 } }
END { printf "| pe |"; for (t = 1; t <= nt; t++) printf " %s (%s) |", tasks[t], range[tasks[t]]
      printf "\n|---|"; for (t = 1; t <= nt; t++) printf "---|"; printf "\n"
      for (p = 1; p <= np; p++) {
        printf "| %s |", pes[p]
        for (t = 1; t <= nt; t++) {
          c = pes[p] "," tasks[t]
          if (n[c]) { delete x; for (j = 1; j <= n[c]; j++) x[j] = v[c, j]; printf " %s |", mean_ci(x, n[c], "%.2f") }
          else printf " %s |", (c in refused ? "—" : "")
        }
        printf "\n" } }
AWK
}
{
  echo "# Tasks: trained short, tested long"
  echo
  echo "Command: \`$given${ARGS:+ ARGS=\"$ARGS\"} scripts/tasks.sh\` — $(date -u +%Y-%m-%d), $(nproc) cores, $JOBS single-thread runs at a time, ${elapsed}s."
  echo "Each run: \`./train --data task:TASK --pe PE --seed S --steps $STEPS --task-eval $TASK_EVAL${ARGS:+ $ARGS}\`, every other option at its default (causal, d 64, 2 layers, 4 heads, batch 16, lr 3e-3, training sizes 1–16, --ctx the longest training instance)."
  echo "Exact-match accuracy over $TASK_EVAL instances per size range (README \"Tasks\"); mean ± 95% interval (Student t) over $n_seeds seeds; — = refused (no positions that far)."
  echo
  echo "## At the training sizes"
  echo
  table 1
  echo
  echo "## At 2× (the first test range)"
  echo
  table 2
  echo
  echo "## At 4× (the second test range)"
  echo
  table 3
  echo
  echo "![accuracy at 2×]($NAME.png)"
  echo
  echo "![accuracy against size](${NAME}_length.png)"
} > "$OUT/$NAME.md"

# The heatmap: mean accuracy at 2× per encoding and task (empty: refused).
awk -F, 'NR > 1 { key = $1 "," $2 "," $3; if (++idx[key] != 2) next
                  c = $2 "," $1; if (!(c in seen)) { seen[c] = 1; order[++n] = c }
                  if ($7 != "") { s[c] += $7; k[c]++ } }
         END { for (i = 1; i <= n; i++) { c = order[i]; printf "%s,%s\n", c, (k[c] ? sprintf("%.4f", s[c] / k[c]) : "") } }' "$csv" > "$tmp/heat.csv"
./pelab-plot --heatmap --out "$OUT/$NAME.png" --title "exact-match accuracy at 2x the training size, mean of $n_seeds seeds" "$tmp/heat.csv"
# Accuracy against size: a panel per task, a line per encoding at the middle
# of each size range (mean; band: all seeds).
awk -F, 'NR > 1 && $7 != "" { k = $1 "|" $2 "," ($4 + $5) / 2; if (!(k in n)) order[++nk] = k; n[k]++; s[k] += $7
                              if (!(k in lo) || $7 < lo[k]) lo[k] = $7; if (!(k in hi) || $7 > hi[k]) hi[k] = $7 }
         END { for (i = 1; i <= nk; i++) { k = order[i]; printf "%s,%.4f,%.4f,%.4f\n", k, s[k] / n[k], lo[k], hi[k] } }' "$csv" > "$tmp/len.csv"
./pelab-plot --panels --logx --out "$OUT/${NAME}_length.png" --xlabel "instance size (middle of the range)" \
             --ylabel "exact-match accuracy (mean; band: all seeds)" --title "tasks: accuracy against size, $n_seeds seeds" "$tmp/len.csv"
cat "$OUT/$NAME.md"
