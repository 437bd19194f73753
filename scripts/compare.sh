#!/usr/bin/env bash
# Is a difference between two sets of seeds real? Welch's t interval (95%)
# of mean(A) − mean(B) for one column of two result CSVs, each optionally
# filtered to the rows whose columns equal given values.
#
#   scripts/compare.sh A.csv[:col=value,...] B.csv[:col=value,...] COLUMN
#   scripts/compare.sh results/order.csv:pe=rope,attn=causal results/order.csv:pe=alibi,attn=causal order_acc
#
# Prints both means with their intervals, the difference with its interval,
# and "differ" only when that interval excludes zero. Exit 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 3 ]; then
  echo "usage: $0 A.csv[:col=value,...] B.csv[:col=value,...] COLUMN" >&2
  exit 2
fi
column=$3
pick() {  # pick FILE[:FILTER] -> the column's values, one a line
  local file=${1%%:*} filter=""
  [[ "$1" == *:* ]] && filter=${1#*:}
  [ -f "$file" ] || { echo "compare.sh: no file '$file'" >&2; exit 2; }
  awk -F, -v col="$column" -v filter="$filter" '
    NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i
              if (!(col in idx)) { print "compare.sh: no column " col " in " FILENAME > "/dev/stderr"; exit 2 }
              nf = split(filter, f, ",")
              for (k = 1; k <= nf; k++) { split(f[k], kv, "="); if (!(kv[1] in idx)) { print "compare.sh: no column " kv[1] > "/dev/stderr"; exit 2 }
                                          fcol[k] = idx[kv[1]]; fval[k] = kv[2] }
              next }
    { ok = 1; for (k = 1; k <= nf; k++) if ($fcol[k] != fval[k]) ok = 0
      if (ok && $idx[col] != "") print $idx[col] }' "$file"
}
a=$(pick "$1") || exit 2
b=$(pick "$2") || exit 2
A="$a" B="$b" LA="$1" LB="$2" COL="$column" awk -f scripts/stats.awk -f /dev/stdin <<'AWK'
BEGIN {
  na = split(ENVIRON["A"], a, "\n"); nb = split(ENVIRON["B"], b, "\n"); col = ENVIRON["COL"]
  if (na == 0 || nb == 0) { print "compare.sh: a selection is empty" > "/dev/stderr"; exit 2 }
  printf "A  %s  %s = %s  (n = %d)\n", ENVIRON["LA"], col, mean_ci(a, na, "%.4f"), na
  printf "B  %s  %s = %s  (n = %d)\n", ENVIRON["LB"], col, mean_ci(b, nb, "%.4f"), nb
  welch(a, na, b, nb, r)
  if (r["half"] < 0) { printf "A - B = %.4f; no interval: each side needs 2 seeds or more\n", r["diff"]; exit 0 }
  verdict = (r["lo"] > 0 || r["hi"] < 0) ? "differ: the interval excludes 0" : "no difference shown: the interval includes 0"
  printf "A - B = %.4f, 95%% interval [%.4f, %.4f] (Welch, df %.1f): %s\n", r["diff"], r["lo"], r["hi"], r["df"], verdict
}
AWK
