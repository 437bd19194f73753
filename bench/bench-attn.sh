#!/usr/bin/env bash
# The attention-kernel part of `make bench` (docs/performance.md): the
# reference model (d 256, 4 layers, 8 heads, byte vocabulary, RoPE, causal,
# 2 threads) trained with --attn-kernel blocks and fused at contexts 256 to
# 4096, 8192 tokens per step (--batch 8192/ctx), STEPS steps each: training
# tokens/s, peak resident memory and the final loss. Appends to
# results/bench.md (after ./bench-pelab wrote it).
#   bench/bench-attn.sh [STEPS] [DATA]   (default 6 steps on random bytes)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-6}
out=results/bench.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=${2:-}
if [ -z "$data" ]; then head -c 3000000 /dev/urandom > "$tmp/bytes.txt"; data=$tmp/bytes.txt; fi
json() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$2" | head -1; }
{
  printf '\n## Attention kernels\n\n'
  printf 'The reference model trained for %d steps of 8192 tokens (`bench/bench-attn.sh`), 2 threads, with each attention kernel: tokens/s over the whole run (the first step included), peak resident memory of the process, and the loss after the last step (both kernels compute the same model; they differ in the last bits).\n\n' "$steps"
  printf '| ctx | batch | blocks: tokens/s | peak MiB | fused: tokens/s | peak MiB | fused vs blocks | loss blocks / fused |\n|---|---|---|---|---|---|---|---|\n'
} >> "$out"
for ctx in 256 1024 2048 4096; do
  batch=$((8192 / ctx))
  for k in blocks fused; do
    ./train --out none --data "$data" --d-model 256 --layers 4 --heads 8 --ctx $ctx --batch $batch --pe rope --steps "$steps" \
      --warmup 2 --threads 2 --quiet --eval-tokens $ctx --attn-kernel $k --json "$tmp/$k.json" > /dev/null
  done
  awk -v ctx=$ctx -v batch=$batch -v tb="$(json tokens_per_s "$tmp/blocks.json")" -v mb="$(json peak_rss_mib "$tmp/blocks.json")" \
      -v tf="$(json tokens_per_s "$tmp/fused.json")" -v mf="$(json peak_rss_mib "$tmp/fused.json")" \
      -v lb="$(json final_loss "$tmp/blocks.json")" -v lf="$(json final_loss "$tmp/fused.json")" \
      'BEGIN { printf "| %d | %d | %.0f | %.0f | %.0f | %.0f | %+.1f%% | %.4f / %.4f |\n", ctx, batch, tb, mb, tf, mf, 100 * (tf / tb - 1), lb, lf }' >> "$out"
done
tail -8 "$out"
