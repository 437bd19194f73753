# lib.sh — sourced by every experiment script: its KEY=VALUE arguments, the
# seeds and parallel jobs, the build, a scratch folder $tmp (removed on
# exit), and run_all, which runs independent training runs JOBS at a time.
#
# Variables every script takes (as environment or KEY=VALUE arguments):
#   SEEDS="1 2 3"   seeds of every configuration (each script has its default)
#   JOBS=N          runs at a time (default: the number of cores)
#   THREADS=N       threads per run (default 1; the sums split differently
#                   with more, so the last bits of a run depend on it)
#   QUICK=1         a tiny budget, to check that the script and its outputs work
#   OUT=DIR         where the tables and pictures go (default results)
#   ARGS="…"        extra options for every ./train run
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
if [ "$QUICK" = 1 ]; then SEEDS=${QUICK_SEEDS:-"1 2"}; fi
mkdir -p "$OUT"
make -s train pelab-plot
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n_seeds=$(echo $SEEDS | wc -w)

# run_all FILE: each line "ID OPTIONS…" is one run of
#   ./train OPTIONS --threads $THREADS --quiet --json $tmp/ID.json  (stdout, stderr: $tmp/ID.out)
# JOBS at a time; its wall time goes to $tmp/ID.secs. Stops the script with
# the run's output when a run fails.
run_all() {
  local start n
  start=$(date +%s)
  n=$(wc -l < "$1")
  echo "$(basename "$0"): $n runs, $JOBS at a time"
  export tmp THREADS
  # shellcheck disable=SC2016
  xargs -P "$JOBS" -L 1 bash -c '
    id=$0
    t0=$(date +%s.%N)
    if ! ./train "$@" --threads "$THREADS" --quiet --json "$tmp/$id.json" > "$tmp/$id.out" 2>&1; then
      echo "run $id failed: ./train $* --threads $THREADS" >&2; cat "$tmp/$id.out" >&2; exit 255
    fi
    awk -v a="$t0" -v b="$(date +%s.%N)" "BEGIN { printf \"%.1f\\n\", b - a }" > "$tmp/$id.secs"
    echo "  $id: $(grep -E "^(eval|order_acc)" "$tmp/$id.out" | tr "\n" " ")"
  ' < <(sed 's/[[:space:]]*$//' "$1")  # xargs -L joins a line that ends in a blank with the next
  elapsed=$(( $(date +%s) - start ))
}

# json_value FILE KEY: the first number after "KEY": in a --json file.
json_value() {
  awk -v key="\"$2\": " '{ i = index($0, key); if (i) { s = substr($0, i + length(key)); match(s, /^-?[0-9.eE+-]+/); print substr(s, 1, RLENGTH) } }' "$1"
}
