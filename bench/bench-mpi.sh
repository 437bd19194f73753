#!/usr/bin/env bash
# The MPI part of `make bench` (docs/performance.md): the reference model
# (d 256, 4 layers, 8 heads, ctx 256, byte vocabulary, RoPE, causal) trained
# on random bytes by 1 process × 2 threads with --batch 16 and by 2 processes
# × 1 thread with --batch 8 each (the same global batch): tokens/s and the
# time per step in the gradient sum. Then a projection on paper for 2–64
# machines. Appends to results/bench.md (after ./bench-pelab wrote it).
#   bench/bench-mpi.sh [STEPS]        (default 20 timed steps)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-20}
out=results/bench.md
if [ ! -x ./train-mpi ] || ! command -v mpirun >/dev/null; then
  printf '\n## MPI\n\nNot measured: no OpenMPI (`scripts/install-deps.sh --mpi`, then `make train-mpi`).\n' >> "$out"
  exit 0
fi
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -c 3000000 /dev/urandom > "$tmp/bytes.txt"
shape="--data $tmp/bytes.txt --d-model 256 --layers 4 --heads 8 --ctx 256 --pe rope --steps $steps --warmup 5 --quiet --eval-tokens 256"
# json KEY FILE: the number after "KEY":
json() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$2" | head -1; }
./train --out none $shape --batch 16 --threads 2 --json "$tmp/one.json" > /dev/null
mpirun -np 2 --oversubscribe --bind-to none ./train-mpi --out none $shape --batch 8 --threads 1 --json "$tmp/two.json" > /dev/null
t1=$(json tokens_per_s "$tmp/one.json") t2=$(json tokens_per_s "$tmp/two.json")
s2=$(json seconds "$tmp/two.json") c2=$(json allreduce_seconds "$tmp/two.json")
params=$(json params "$tmp/one.json")
awk -v t1="$t1" -v t2="$t2" -v s2="$s2" -v c2="$c2" -v steps="$steps" -v P="$params" -f /dev/stdin <<'AWK' >> "$out"
BEGIN {
  printf "\n## MPI\n\n"
  printf "The reference model on random bytes, %d steps (`bench/bench-mpi.sh`): one process with 2 threads and `--batch 16`, against `mpirun -np 2 ./train-mpi` with 1 thread each and `--batch 8` (the same global batch of 16 × 256 tokens).\n\n", steps
  printf "| run | training tokens/s | gradient sum per step |\n|---|---|---|\n"
  printf "| 1 process × 2 threads | %.0f | — |\n", t1
  printf "| 2 processes × 1 thread | %.0f (%.2f× the first) | %.1f ms (%.1f%% of the step; %.1f MB of gradient) |\n\n", t2, t2 / t1, 1000 * c2 / steps, 100 * c2 / s2, 4 * P / 1e6
  # Projection: R machines, each the step of one process here (4096 tokens
  # per step at t1 tokens/s), a ring all-reduce that moves 2(R−1)/R of the
  # gradient per machine, not overlapped with compute. Scaling efficiency =
  # compute / (compute + communication) ≥ 90% needs a link of at least
  # bytes / (compute × (1/0.9 − 1)).
  compute = 4096 / t1
  printf "Projection on paper for R machines, each computing the step of one process here (%.0f ms for 16 × 256 tokens), with a ring all-reduce of the gradient (each machine sends and receives 2(R−1)/R of it) not overlapped with compute. The link speed at which the scaling efficiency stays at 90%%: bytes moved per machine / (0.111 × compute time). A model 10× larger (10× the parameters and the FLOPs per token, same tokens per step) needs the same link: its gradient and its compute grow alike.\n\n", 1000 * compute
  printf "| machines R | gradient MB moved per machine per step | link for 90%% (reference model, %.1fM params) | link for 90%% (10× larger) |\n|---|---|---|---|\n", P / 1e6
  split("2 4 8 16 32 64", Rs, " ")
  for (i = 1; i <= 6; i++) {
    R = Rs[i]; bytes = 2 * (R - 1) / R * 4 * P
    need = bytes / (compute * (1 / 0.9 - 1))
    printf "| %d | %.1f | %.2f Gbit/s | %.2f Gbit/s |\n", R, bytes / 1e6, need * 8 / 1e9, (10 * bytes) / (10 * compute * (1 / 0.9 - 1)) * 8 / 1e9
  }
}
AWK
tail -16 "$out"
