# lib.sh — sourced by every experiment script: its KEY=VALUE arguments, the
# seeds and parallel jobs, the build, a scratch folder $tmp (removed on
# exit), and run_all, which runs independent training runs JOBS at a time.
#
# Variables every script takes (as environment or KEY=VALUE arguments):
#   SEEDS="1 2 3"   seeds of every configuration (each script has its default)
#   JOBS=N          runs at a time (default: the number of cores)
#   THREADS=N       threads per run (default 1; the thread count does not
#                   change the results, README "Threads")
#   RUN="PREFIX"    a command put before every ./train run, e.g. "srun -n1 -c1"
#                   on a Slurm cluster or "mpirun -np 1 -host H" (default none)
#   QUICK=1         a tiny budget, to check that the script and its outputs work
#   OUT=DIR         where the tables and pictures go (default results)
#   ARGS="…"        extra options for every ./train run
#   CACHE=DIR       keep every finished run in DIR and reuse it when the same
#                   run (same options, same source code, data and machine)
#                   comes again: an interrupted experiment resumes (default
#                   none)
for kv in "$@"; do
  case "$kv" in
    *=*) export "${kv%%=*}"="${kv#*=}" ;;
    *) echo "usage: $0 [KEY=VALUE …] (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
SEEDS=${SEEDS:-$DEFAULT_SEEDS}
JOBS=${JOBS:-$(nproc)}
THREADS=${THREADS:-1}
QUICK=${QUICK:-0}
OUT=${OUT:-results}
ARGS=${ARGS:-}
RUN=${RUN:-}
CACHE=${CACHE:-}
if [ "$QUICK" = 1 ]; then SEEDS=${QUICK_SEEDS:-"1 2"}; fi
mkdir -p "$OUT"
make -s train pelab-plot
# encodings that refuse bidirectional attention (--list-pe marks them)
CAUSAL_ONLY=" $(./train --list-pe | awk '/; causal only/ { printf "%s ", $1 }')"
# mode_allowed PE MODE: 1 unless PE is causal only and MODE is bidir
mode_allowed() { [ "$2" != bidir ] || [[ "$CAUSAL_ONLY" != *" $1 "* ]]; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n_seeds=$(echo $SEEDS | wc -w)

# run_all FILE: each line "ID OPTIONS…" is one run of
#   ./train OPTIONS --threads $THREADS --quiet --json $tmp/ID.json  (stdout, stderr: $tmp/ID.out)
# JOBS at a time; its wall time goes to $tmp/ID.secs. Stops the script with
# the run's output when a run fails.
#
# With CACHE=DIR a run's files (its JSON, output, wall time, and the files it
# writes with --save and --attn-png) go to DIR/KEY, where KEY is a SHA-256 of
# the run's options (the names of the scratch and output folders left out),
# the source code and the commands that build ./train (without make's
# "Entering directory" lines, which name the clone under make experiments,
# so that another clone finds the runs), the bytes of the
# files it reads (--data, and the checkpoint of --load, --init, --resume:
# their names alone say nothing, the same scratch name holds a different
# model in each script), the CPU, the compiler and OPENBLAS_CORETYPE; a run
# whose KEY is there is copied back instead of trained again.
run_all() {
  local start n
  start=$(date +%s)
  n=$(wc -l < "$1")
  echo "$(basename "$0"): $n runs, $JOBS at a time${CACHE:+ (cache: $CACHE)}"
  CACHE_ID=""
  if [ -n "$CACHE" ]; then
    mkdir -p "$CACHE"
    CACHE_ID=$( { cat train.c $(find core data model eval cli plot -name '*.[ch]' | LC_ALL=C sort); make -Bn --no-print-directory train
                  grep -m1 'model name' /proc/cpuinfo || true; ${CC:-cc} --version | head -1
                  echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-}"; } | sha256sum | cut -c1-64)
  fi
  export tmp OUT THREADS RUN CACHE CACHE_ID
  # shellcheck disable=SC2016
  xargs -P "$JOBS" -L 1 bash -c '
    id=$0
    key="" save="" png="" data="" ck=""
    prev=""
    for a in "$@"; do
      case "$prev" in --save) save=$a ;; --attn-png) png=$a ;; --data) data=$a ;; --load | --init | --resume) ck=$a ;; esac
      prev=$a
    done
    if [ -n "$CACHE" ]; then
      args="${*//$tmp/TMP}"
      key=$( { echo "$CACHE_ID"; echo "${args//$OUT/OUT}"; if [ -f "$data" ]; then sha256sum < "$data"; fi
                if [ -f "$ck" ]; then sha256sum < "$ck"; fi; } | sha256sum | cut -c1-64)
      hit="$CACHE/$key"
      if [ -f "$hit/json" ]; then
        cp "$hit/json" "$tmp/$id.json"; cp "$hit/out" "$tmp/$id.out"; cp "$hit/secs" "$tmp/$id.secs"
        if [ -n "$save" ]; then cp "$hit/save" "$save"; fi
        if [ -n "$png" ]; then cp "$hit/png" "$png"; fi
        echo "  $id (cached): $(grep -E "^(eval|order_acc)" "$tmp/$id.out" | tr "\n" " ")"
        exit 0
      fi
    fi
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    if ! $RUN ./train "$@" --threads "$THREADS" --quiet --json "$tmp/$id.json" > "$tmp/$id.out" 2>&1; then
      echo "run $id failed: ${RUN:+$RUN }./train $* --threads $THREADS" >&2; cat "$tmp/$id.out" >&2; exit 255
    fi
    awk -v a="$t0" -v b="$(date +%s.%N)" "BEGIN { printf \"%.1f\\n\", b - a }" > "$tmp/$id.secs"
    if [ -n "$CACHE" ]; then  # into a fresh folder, renamed into place: a cut-off copy is never taken for a run
      part=$(mktemp -d "$CACHE/.part.XXXXXX")
      cp "$tmp/$id.json" "$part/json"; cp "$tmp/$id.out" "$part/out"; cp "$tmp/$id.secs" "$part/secs"
      if [ -n "$save" ]; then cp "$save" "$part/save"; fi
      if [ -n "$png" ]; then cp "$png" "$part/png"; fi
      rm -rf "${CACHE:?}/$key"; mv "$part" "$CACHE/$key"
    fi
    echo "  $id: $(grep -E "^(eval|order_acc)" "$tmp/$id.out" | tr "\n" " ")"
  ' < <(sed 's/[[:space:]]*$//' "$1")  # xargs -L joins a line that ends in a blank with the next
  elapsed=$(( $(date +%s) - start ))
}

# json_value FILE KEY: the first number after "KEY": in a --json file.
json_value() {
  awk -v key="\"$2\": " '{ i = index($0, key); if (i) { s = substr($0, i + length(key)); match(s, /^-?[0-9.eE+-]+/); print substr(s, 1, RLENGTH) } }' "$1"
}

# length_csv CSV JOBFILE…: "pe,seed,ctx,loss,ppl" rows from the eval lines of
# every run the job files list (IDs "NAME@SEED"; a "(x)" in NAME becomes " (x)").
length_csv() {
  local csv=$1
  shift
  echo "pe,seed,ctx,loss,ppl" > "$csv"
  cat "$@" | while read -r id _; do
    local pe=${id%@*} seed=${id##*@}
    sed -n 's/^eval ctx=\([0-9]*\) loss=\([0-9.]*\) ppl=\([0-9.]*\)$/\1,\2,\3/p; s/^eval ctx=\([0-9]*\) refused$/\1,,/p' "$tmp/$id.out" |
      sed "s/^/$pe,$seed,/" | sed 's/(\([a-z]*\))/ (\1)/'
  done >> "$csv"
}

# length_plot CSV PNG TITLE: perplexity against length per pe, mean and band
# (lowest to highest seed), log axes.
length_plot() {
  awk -F, 'NR > 1 && $5 != "" { k = $1 "," $3; if (!(k in n)) order[++nk] = k; n[k]++; s[k] += $5
                                if (!(k in lo) || $5 < lo[k]) lo[k] = $5; if (!(k in hi) || $5 > hi[k]) hi[k] = $5 }
           END { for (i = 1; i <= nk; i++) { k = order[i]; printf "%s,%.4f,%.4f,%.4f\n", k, s[k] / n[k], lo[k], hi[k] } }' "$1" > "$tmp/plot.csv"
  ./pelab-plot --out "$2" --logx --logy --xlabel "evaluation length (tokens)" --ylabel "perplexity (mean; band: all seeds)" \
         --title "$3" "$tmp/plot.csv"
}

# length_table CSV LENGTHS: a Markdown table, one row per pe, one column per
# length (comma-separated): mean ± 95% interval over seeds; — = refused.
length_table() {
  awk -F, -v lengths="$2" -f scripts/stats.awk -f /dev/stdin "$1" <<'AWK'
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
}
