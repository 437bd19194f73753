#!/usr/bin/env bash
# Every encoding and composite of the registry with the trainer's defaults
# (cats, causal), over seeds: parameters, training tokens/s, validation loss,
# perplexity and order_acc. Writes results/encodings.csv (one row per run)
# and results/encodings.md (mean ± 95% interval over the seeds).
#
#   scripts/encodings.sh                     # 3 seeds
#   ENCODINGS="rope alibi" SEEDS="1 2 3 4 5" scripts/encodings.sh
#   QUICK=1 scripts/encodings.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DEFAULT_SEEDS="1 2 3"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
if [ "$QUICK" = 1 ]; then ARGS="$ARGS --steps 30 --eval-tokens 512"; fi
# every encoding and composite of the registry
ENCODINGS=${ENCODINGS:-$(./train --list-pe | awk '{ print $1 }')}
for pe in $ENCODINGS; do
  for seed in $SEEDS; do echo "$pe@$seed --pe $pe --seed $seed $ARGS"; done
done > "$tmp/jobs"
run_all "$tmp/jobs"

csv="$OUT/encodings.csv"
echo "pe,seed,params,tokens_per_s,final_loss,eval_loss,ppl,order_acc,seconds" > "$csv"
while read -r id _; do
  pe=${id%@*} seed=${id##*@} f="$tmp/$id.json"
  echo "$pe,$seed,$(json_value "$f" params),$(json_value "$f" tokens_per_s),$(json_value "$f" final_loss),$(json_value "$f" loss),$(json_value "$f" ppl),$(json_value "$f" acc),$(cat "$tmp/$id.secs")"
done < "$tmp/jobs" >> "$csv"
steps_default=$(./train --help | sed -n 's/.*--steps N .*\[\([0-9]*\)\]/\1/p')
lr_default=$(./train --help | sed -n 's/.*--lr X .*\[\([0-9.e-]*\)\]/\1/p')
{
  echo "# Every encoding with the defaults"
  echo
  echo "Command: \`SEEDS=\"$SEEDS\"${ARGS:+ ARGS=\"$ARGS\"} scripts/encodings.sh\` — $(date -u +%Y-%m-%d), $(nproc) cores, $JOBS single-thread runs at a time, ${elapsed}s. \`./train --pe PE --seed S${ARGS:+ $ARGS}\` with every other option at its default (cats, causal, d 64, 2 layers, 4 heads, ctx 64, batch 16, $steps_default steps, lr $lr_default), one thread per run."
  echo "Mean ± 95% interval (Student t) over the seeds; tokens/s is single-thread, with $JOBS runs sharing the machine."
  echo
  echo "| pe | params | train tokens/s | val loss | val ppl | order_acc | solved (≥ 0.95) |"
  echo "|---|---|---|---|---|---|---|"
  awk -F, -f scripts/stats.awk -f /dev/stdin "$csv" <<'AWK'
NR > 1 { k = $1; if (!(k in n)) order[++nk] = k; n[k]++; params[k] = $3
         tps[k, n[k]] = $4; el[k, n[k]] = $6; pp[k, n[k]] = $7; acc[k, n[k]] = $8; solved[k] += ($8 >= 0.95) }
END { for (i = 1; i <= nk; i++) { k = order[i]
        delete a; delete b; delete c; delete d
        for (j = 1; j <= n[k]; j++) { a[j] = tps[k, j]; b[j] = el[k, j]; c[j] = pp[k, j]; d[j] = acc[k, j] }
        printf "| %s | %s | %s | %s | %s | %s | %d/%d |\n", k, params[k], mean_ci(a, n[k], "%.0f"), mean_ci(b, n[k], "%.4f"),
               mean_ci(c, n[k], "%.3f"), mean_ci(d, n[k], "%.3f"), solved[k], n[k] } }
AWK
} > "$OUT/encodings.md"
cat "$OUT/encodings.md"
