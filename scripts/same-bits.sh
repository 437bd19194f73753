#!/usr/bin/env bash
# scripts/same-bits.sh OLD_TRAIN NEW_TRAIN — do two builds of ./train give the
# same bits? Runs the same small runs with each (every encoding on cats in
# both modes it allows, a text corpus evaluated at several lengths with and
# without RoPE's extensions, a task, a fine-tune with --init, a run resumed
# from --stop-at) and compares their checkpoints byte for byte (but for the
# wall time trained and the learning curve, which builds before them did not
# write; the curve is compared in the --json) and their --json results with
# the timing fields removed. Exit 0 when every pair is
# identical. After a change to the C source that should leave results alone
# (a refactor, a new option), this is the evidence `lab/run DIR --touch`
# needs (docs/workflow.md).
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/same-bits.sh OLD_TRAIN NEW_TRAIN" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export PELAB_RUNS=none  # no run folders: the outputs are named (a build before them ignores it)
text=/usr/share/common-licenses/GPL-3
small="--d-model 32 --layers 2 --heads 2 --threads 1 --quiet --warmup 20"  # past the warmup: the whole schedule runs
runs=()
for pe in $("$new" --list-pe | awk '$2 != "composite" {print $1}') learned+rope sinusoidal+fire; do
  runs+=("cats.$pe.causal|$small --pe $pe --steps 120 --eval-every 40")
  "$new" $small --pe "$pe" --attn bidir --steps 0 > /dev/null 2>&1 && runs+=("cats.$pe.bidir|$small --pe $pe --attn bidir --steps 120 --eval-every 40")
done
for pe in sinusoidal rope alibi xpos fire cope xl; do
  runs+=("text.$pe|$small --pe $pe --data $text --ctx 32 --steps 80 --eval-ctx 32,64,128 --eval-tokens 2048 --eval-every 0")  # (text's default curve came later: its own test shows it changes no bit)
done
runs+=("text.xl.ctx160|$small --pe xl --data $text --ctx 160 --batch 2 --steps 40 --eval-ctx 160 --eval-tokens 1024 --eval-every 0")  # several attention blocks
runs+=("cats.cope.clipped|$small --pe cope --cope-max-pos 3 --steps 120 --eval-every 40")  # counts past P
# Heads of 32 (every run above has 16): the scores' scale 1/sqrt(hs) is then
# not a power of two, so a product with it rounds, and whether the compiler
# fuses it with an add into one FMA shows in the bits (session 27: a change
# that fused differently passed every run above).
for pe in rope "cope --cope-max-pos 8" fire xl; do
  runs+=("cats.${pe%% *}.hs32|${small/--d-model 32/--d-model 64} --pe $pe --steps 80 --eval-every 40")
done
runs+=("task.sort|$small --pe rope --data task:sort --steps 80 --task-eval 50")
runs+=("task.selective|$small --pe cope --data task:selective-copy --steps 80 --task-eval 50")  # its instances were rewritten for --task-ignore
runs+=("randpos|$small --pe rope --data $text --ctx 32 --rand-pos 128 --steps 60 --eval-ctx 32,128 --eval-tokens 1024 --eval-every 0")
fails=0 n=0
for b in old new; do
  bin=${!b}
  # a build with matrix engines runs OpenBLAS's, as builds before them did (and as the workflow pins)
  gemm=""
  # (the whole help read first: grep -q would close the pipe early, and under pipefail
  # the SIGPIPE that stops ./train would read as "no --gemm")
  help=$("$bin" --help 2>/dev/null || true)
  [[ $help == *"--gemm "* ]] && gemm="--gemm openblas"
  mkdir -p "$dir/$b"
  for r in "${runs[@]}"; do
    name=${r%%|*} args=${r#*|}
    (cd "$dir/$b" && OPENBLAS_CORETYPE=Haswell "$bin" $args $gemm --seed 3 --save "$name.ck" --json "$name.json" > "$name.out" 2>&1)
  done
  (cd "$dir/$b" && OPENBLAS_CORETYPE=Haswell "$bin" $small $gemm --pe rope --data "$text" --ctx 32 --steps 60 --stop-at 30 --eval-every 0 \
     --seed 3 --save resumed.ck > /dev/null 2>&1 && OPENBLAS_CORETYPE=Haswell "$bin" --resume resumed.ck $gemm \
     --threads 1 --quiet --save resumed.ck --json resumed.json > /dev/null 2>&1)
  (cd "$dir/$b" && OPENBLAS_CORETYPE=Haswell "$bin" --init text.rope.ck $gemm --ctx 64 --steps 20 --warmup 5 --eval-every 0 --rope-scale yarn \
     --data "$text" --threads 1 --quiet --eval-ctx 64,128 --eval-tokens 1024 --save ft.ck --json ft.json > /dev/null 2>&1)
done
# The two --json files without what depends on the clock, the machine's load
# or the path given, and without the settings and results only one build has
# (a new option at its default, a new field): the same results print
# nothing, exit 0.
compare_json() {
  /usr/bin/python3 -c 'import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    for k in ("tokens_per_s", "seconds", "peak_rss_mib", "allreduce_seconds"): d.get("train", {}).pop(k, None)
    for k in ("save", "json", "threads"): d.get("config", {}).pop(k, None)
    d.pop("pelab", None)   # the build, the clock and the machine
for part in ("config", "train"):   # a setting or a result only one build has (a new one) is left out
    common = set(a.get(part, {})) & set(b.get(part, {}))
    for d in (a, b): d[part] = {k: v for k, v in d.get(part, {}).items() if k in common}
common = set(a) & set(b)
a, b = ({k: v for k, v in d.items() if k in common} for d in (a, b))
sa, sb = (json.dumps(d, sort_keys=True).replace(",", ",\n").splitlines() for d in (a, b))
if sa != sb:
    import difflib
    print("\n".join(list(difflib.unified_diff(sa, sb, lineterm="", n=0))[2:8]))
    sys.exit(1)' "$1" "$2"
}
# Two checkpoints without their "seconds=" and "curve=" lines (so without the
# text's length and the checksum): the same run prints nothing, exit 0.
compare_ck() {
  /usr/bin/python3 -c 'import sys
def run(path):
    b = open(path, "rb").read()
    n = int.from_bytes(b[24:28], "little")
    text = [l for l in b[28:28 + n].split(b"\n") if not l.startswith((b"seconds=", b"curve="))]
    return b[:24], text, b[28 + n:-4]
sys.exit(run(sys.argv[1]) != run(sys.argv[2]))' "$1" "$2"
}
for f in "$dir"/new/*.ck; do
  case $f in *.best.ck) [ -f "$dir/old/$(basename "$f")" ] || continue ;; esac  # the best model, which older builds did not keep
  name=$(basename "$f" .ck) n=$((n + 1))
  if ! compare_ck "$dir/old/$name.ck" "$f"; then echo "DIFFER $name.ck"; fails=$((fails + 1)); continue; fi
  if [ -f "$dir/new/$name.json" ] && ! out=$(compare_json "$dir/old/$name.json" "$dir/new/$name.json"); then
    echo "DIFFER $name.json (the checkpoints are the same)"; echo "$out"
    fails=$((fails + 1))
  fi
done
echo "$n runs compared: $((n - fails)) identical, $fails differ"
[ "$n" -gt 0 ] && [ "$fails" -eq 0 ]
