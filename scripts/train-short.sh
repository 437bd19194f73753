# train-short.sh — sourced by extrapolate.sh and sweep.sh: their KEY=VALUE
# arguments, the budget they share (train at L on DATA for STEPS at LR), the
# build, and a scratch directory $tmp removed on exit.
for kv in "$@"; do
  case "$kv" in
    *=*) export "${kv%%=*}"="${kv#*=}" ;;
    *) echo "usage: $0 [DATA=…] [L=…] [STEPS=…] [LR=…] [ARGS=…] [OUT=…]" >&2; exit 2 ;;
  esac
done
DATA=${DATA:-cats}
L=${L:-64}
STEPS=${STEPS:-3000}
LR=${LR:-3e-3}
ARGS=${ARGS:-}
OUT=${OUT:-results}
mkdir -p "$OUT"
make -s train pelab-plot
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
