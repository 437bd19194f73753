"""make bench's peers (issue 58): PyTorch 2 eager, torch.compile and bf16 autocast, and JAX jit of the whole step,
each first checked to compute pelab's function (bench/peers/check.sh), then timed on pelab's reference shape and
on GPT-2 small's layers; their section and the targets for this machine's kind appended to the report that
./bench-pelab wrote, from the figures it wrote beside it.

    $(bench/peers/venv.sh) bench/peers/peers.py [--report results/bench.md] [--figures results/bench.json]
                                                [--rounds N] [--quick]

Each timing is its own process (the peers' libraries keep threads and caches), with the environment's OpenBLAS pin
removed; the configurations take turns, N rounds (default 2), each keeping its fastest block. --quick: one round,
fewer steps (a check that the machinery runs, not figures to publish). This file needs the standard library only;
the peers' libraries are imported by the processes it starts.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CORPUS = "/usr/share/common-licenses/GPL-3"  # ./train needs a corpus to make a model; the timings use random tokens

# (label, script, mode, precision): every peer configuration the bench times
CONFIGS = [("PyTorch eager", "torch_peer.py", "eager", "fp32"),
           ("PyTorch torch.compile", "torch_peer.py", "compile", "fp32"),
           ("PyTorch bf16 autocast", "torch_peer.py", "bf16", "bf16"),
           ("JAX jit", "jax_peer.py", "jit", "fp32")]

# The targets of docs/performance.md, by machine kind.
TARGET_FASTEST, TARGET_EAGER, TARGET_FP32_PEAK, TARGET_BF16_PEAK, TARGET_PE = 3.0, 5.0, 0.70, 0.50, 0.85


def peer_env():
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # the peer's own process: its libraries at their best
        env.pop(k, None)
    return env


def make_checkpoint(path, shape, pe):
    """A pelab model of the shape and encoding (random weights, seed 1), as ./train saves it: the peers load it."""
    cmd = [str(REPO / "train"), "--data", CORPUS, "--steps", "0", "--seed", "1", "--pe", pe, "--out", "none",
           "--quiet", "--threads", "1", "--d-model", str(shape["d"]), "--layers", str(shape["layers"]),
           "--heads", str(shape["heads"]), "--ctx", str(shape["ctx"]), "--save", str(path)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def time_peer(script, ck, mode, steps, batch, blocks, cache):
    """(tokens/s, warm-up seconds) of one peer configuration in a fresh process, or (None, why). cache: an empty
    folder for torch.compile's caches, so that its compilation is timed cold in every process."""
    cmd = [sys.executable, str(HERE / script), "time", str(ck), mode, str(steps), str(batch), str(blocks)]
    env = peer_env()
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"tokens_per_s ([0-9.]+).*warm-up ([0-9.]+) s", r.stdout)
    if r.returncode or not m:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"failed: {tail[:200]}"
    return float(m.group(1)), float(m.group(2))


def equality():
    """bench/peers/check.sh's figures: {(peer, pe): {"step0": (loss, ./train's, relative), "step20": (...)}}; whether
    each peer passed for every encoding; the script's output."""
    r = subprocess.run(["bash", str(HERE / "check.sh")], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"(torch|jax) \S+ (\w+): loss at (step \d+|\d+) ([0-9.]+), \./train ([0-9.]+), relative "
                     r"difference ([0-9.e+-]+)", line)
        if not m:
            continue
        which = "step20" if m.group(3).startswith("step") else "step0"
        out.setdefault((m.group(1), m.group(2)), {})[which] = (float(m.group(4)), float(m.group(5)), float(m.group(6)))
    ok = {}
    for (peer, _), v in out.items():
        good = "step0" in v and v["step0"][2] <= 1e-5 and "step20" in v and v["step20"][2] < 1e-4
        ok[peer] = ok.get(peer, True) and good and r.returncode == 0
    return out, ok, r.stdout + r.stderr


def busy_cores(seconds=2.0):
    """How many cores other processes kept busy over the next seconds (this one sleeps meanwhile), from /proc/stat:
    a bench beside other work measures the sharing, not the code (2 threads of a peer lose far more to a busy core
    than pelab's do: measured, PyTorch eager 3.4× slower beside one busy thread, pelab 2.2×)."""
    def ticks():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]  # all, idle + iowait
    try:
        t0, i0 = ticks()
        time.sleep(seconds)
        t1, i1 = ticks()
    except OSError:
        return None
    return (os.cpu_count() or 1) * (1 - (i1 - i0) / max(t1 - t0, 1))


def versions():
    r = subprocess.run([sys.executable, str(HERE / "versions.py")], capture_output=True, text=True, env=peer_env())
    return json.loads(r.stdout) if r.returncode == 0 else {}


def pct(x):
    return f"{100 * x:.1f}%"


def verdict(met, text):
    return f"**met**: {text}" if met else f"**missed**: {text}"


def shape_text(s):
    return f"d {s['d']}, {s['layers']} layers, {s['heads']} heads, ctx {s['ctx']}, batch {s['batch']}"


def top_ops(ops, n=3):
    """The ops outside the matrix products that hold the most of the step, as text."""
    rest = sorted(((v, k) for k, v in ops.items() if k != "matrix products"), reverse=True)[:n]
    return ", ".join(f"{k} {pct(v)}" for v, k in rest)


def target_rows(fig, eager, fastest):
    """The Targets table's rows (target, verdict with its figure) for this machine's kind, from ./bench-pelab's
    figures (fig, results/bench.json), PyTorch eager's tokens/s at the reference shape with RoPE (eager; None when
    not timed) and the fastest fp32 peer there (fastest: (label, tokens/s), or None)."""
    ref = fig["reference"]
    eng = {(e["engine"], e["precision"]): e for e in fig["engines"]}
    pelab_bf16 = eng.get(("onednn", "bf16"))
    share32 = ref["flops_per_token"] * ref["tokens_per_s"] / (fig["fma_peak_gflops"] * 1e9)
    rows = []
    bound = fig["fma_peak_gflops"] * 1e9 / ref["flops_per_token"]  # tokens/s of a step at 100% of the FMA peak

    def needs(times, peer_tps):
        """What a missed ratio target asks of pelab, against the FMA peak's bound."""
        want = times * peer_tps
        text = f" (pelab needs {want:.0f} tokens/s, {want / ref['tokens_per_s']:.2f}× its speed"
        if want > bound:
            text += (f"; beyond this machine's FMA peak, where a step of nothing but products at the full rate would "
                     f"train {bound:.0f} tokens/s, {bound / peer_tps:.2f}× this peer: out of reach here")
        return text + ")"

    if fig["avx512"]:
        f = fastest
        rows.append(("pelab ≥ 3× the fastest fp32 peer, reference shape",
                     verdict(ref["tokens_per_s"] / f[1] >= TARGET_FASTEST,
                             f"{ref['tokens_per_s'] / f[1]:.2f}× {f[0]}"
                             + ("" if ref["tokens_per_s"] / f[1] >= TARGET_FASTEST else needs(TARGET_FASTEST, f[1])))
                     if f else "not measured (no peer timed)"))
        rows.append(("pelab ≥ 5× PyTorch eager, reference shape",
                     verdict(ref["tokens_per_s"] / eager >= TARGET_EAGER,
                             f"{ref['tokens_per_s'] / eager:.2f}×"
                             + ("" if ref["tokens_per_s"] / eager >= TARGET_EAGER else needs(TARGET_EAGER, eager)))
                     if eager else "not measured"))
    holds = f"; outside the products: {top_ops(ref['ops'])}"
    rows.append(("the fp32 step ≥ 70% of the measured FMA peak",
                 verdict(share32 >= TARGET_FP32_PEAK,
                         f"{pct(share32)} of {fig['fma_peak_gflops']:.1f} GFLOP/s"
                         + ("" if share32 >= TARGET_FP32_PEAK else
                            f" ({pct(TARGET_FP32_PEAK - share32)} short; matrix products "
                            f"{pct(ref['ops']['matrix products'])} of the step{holds})"))))
    if fig["avx512"]:
        if fig.get("bf16_peak_gflops") and pelab_bf16:
            s16 = ref["flops_per_token"] * pelab_bf16["tokens_per_s"] / (fig["bf16_peak_gflops"] * 1e9)
            rows.append(("the bf16 step ≥ 50% of the measured bf16 peak",
                         verdict(s16 >= TARGET_BF16_PEAK,
                                 f"{pct(s16)} of {fig['bf16_peak_gflops']:.1f} GFLOP/s"
                                 + ("" if s16 >= TARGET_BF16_PEAK else f" ({pct(TARGET_BF16_PEAK - s16)} short)"))))
        else:
            rows.append(("the bf16 step ≥ 50% of the measured bf16 peak",
                         "not applicable: this CPU has no AVX-512 BF16 (oneDNN has no bf16 product here)"))
    pes = [e for e in fig["encodings"] if e["pe"] != "none"]
    if pes:
        out = [e for e in pes if e["high"] < TARGET_PE]
        und = [e for e in pes if e["low"] <= TARGET_PE <= e["high"]]
        worst = min(pes, key=lambda e: e["vs_none"])
        text = (f"{len(pes) - len(out) - len(und)} of {len(pes)} within (whole interval); slowest {worst['pe']} "
                f"{100 * (worst['vs_none'] - 1):+.1f}% [{100 * (worst['low'] - 1):+.1f}, {100 * (worst['high'] - 1):+.1f}]")
        if out:
            text += "; outside: " + ", ".join(f"{e['pe']} {100 * (e['vs_none'] - 1):+.1f}%" for e in out)
        if und:
            text += "; undecided: " + ", ".join(e["pe"] for e in und)
        rows.append(("every encoding within 15% of NoPE (blocks kernel)", verdict(not out and not und, text)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", default=str(REPO / "results/bench.md"))
    ap.add_argument("--figures", default=str(REPO / "results/bench.json"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error(f"--rounds {a.rounds}: at least 1")
    try:
        fig = json.load(open(a.figures))
    except (OSError, ValueError) as e:
        sys.exit(f"peers.py: no pelab figures to compare with ({e}); ./bench-pelab writes them (make bench)")
    rounds = 1 if a.quick else a.rounds
    eng = {(e["engine"], e["precision"]): e for e in fig["engines"]}
    pelab_bf16 = eng.get(("onednn", "bf16"))
    ref = fig["reference"]
    # (name, pe, shape, steps per block, blocks, FLOPs per token, pelab fp32 tokens/s, pelab bf16 tokens/s or None)
    shapes = [("reference", "rope", ref["shape"], 3 if a.quick else 10, 3, ref["flops_per_token"], ref["tokens_per_s"],
               pelab_bf16 and pelab_bf16["tokens_per_s"]),
              ("reference", "alibi", ref["shape"], 3 if a.quick else 10, 3, ref["flops_per_token"],
               ref["tokens_per_s_alibi"], None),
              ("GPT-2 small's layers", "rope", fig["large"]["shape"], 1 if a.quick else 2, 3,
               fig["large"]["flops_per_token"], eng[(fig["engine"], "fp32")]["large_tokens_per_s"],
               pelab_bf16 and pelab_bf16["large_tokens_per_s"])]

    busy = [busy_cores()]
    print("peers: versions and the equality check (bench/peers/check.sh)", flush=True)
    ver = versions()
    eq, eq_ok, eq_log = equality()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        cks = {}
        for name, pe, shape, *_ in shapes:
            cks[(name, pe)] = Path(tmp) / f"{len(cks)}.ck"
            make_checkpoint(cks[(name, pe)], shape, pe)
        for rnd in range(rounds):  # every configuration once per round: a slow spell of the machine hits them all
            for name, pe, shape, steps, blocks, *_ in shapes:
                for label, script, mode, prec in CONFIGS:
                    key, peer = (name, pe, label), "torch" if script.startswith("torch") else "jax"
                    if prec == "bf16" and pe != "rope":
                        continue  # bf16 is compared with pelab's --precision bf16, timed with RoPE only
                    if not eq_ok.get(peer):
                        results[key] = (None, "not timed: its equality check failed")
                        continue
                    print(f"peers: {name}, {pe}, {label}, round {rnd + 1} of {rounds}", flush=True)
                    cache = Path(tmp) / f"inductor-{len(results)}-{rnd}"
                    tps, warm = time_peer(script, cks[(name, pe)], mode, steps, shape["batch"], blocks, cache)
                    old = results.get(key)
                    if tps is None:
                        results.setdefault(key, (None, warm))
                    elif old is None or old[0] is None or tps > old[0]:
                        results[key] = (tps, warm if old is None or old[0] is None else min(warm, old[1]))

    busy.append(busy_cores())
    tv, jv = ver.get("pytorch", {}), ver.get("jax", {})
    bf16_peak = f"{fig['bf16_peak_gflops']:.1f} GFLOP/s" if fig.get("bf16_peak_gflops") else "none: no AVX-512 BF16"
    lines = ["", "## Peers", "",
             f"`bench/peers/peers.py` (run by `make bench` after `./bench-pelab`, in the same run), the peers from "
             f"PyPI at the pins of `bench/peers/requirements.txt`, installed by `bench/peers/venv.sh` into "
             f"`~/.cache/pelab`: PyTorch {tv.get('torch', '?')} (BLAS {tv.get('blas', '?')}; {tv.get('mkl', '?')}; "
             f"{tv.get('onednn', '?')}; CPU capability {tv.get('cpu_capability', '?')}; {tv.get('threads', '?')} "
             f"threads), JAX {jv.get('jax', '?')} with optax {jv.get('optax', '?')} (XLA on {jv.get('backend', '?')}), "
             f"Python {ver.get('python', '?')}; the environment's OpenBLAS pin (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE) "
             f"removed for the peers' processes only. Every peer is pelab's model written as its users write it for "
             f"speed (PyTorch: fused QKV product, RoPE on the heads, `scaled_dot_product_attention` — ALiBi's bias "
             f"as its float mask —, foreach AdamW; "
             f"JAX: the whole step — forward, gradient, clipping, optax AdamW — under one `jax.jit`), loaded with "
             f"pelab's weights, same optimiser settings, random tokens; each configuration is its own process, "
             f"{rounds} round(s) taking turns, the fastest block of steps counting (as pelab's); the warm-up (3 steps: "
             f"torch.compile and jit compile there, torch.compile with an empty cache in every process) is reported "
             f"apart, the shortest of the rounds'. \"Share of the peak\": of the FMA peak ({fig['fma_peak_gflops']:.1f} GFLOP/s) "
             f"for fp32, of the bf16 peak ({bf16_peak}) for bf16, both measured by `./bench-pelab` in this run.", "",
             "Do they compute pelab's function? `bench/peers/check.sh`: the loss of pelab's step-0 model on "
             "./train's validation windows (within 1e-5 relative, or the peer is not timed), and after 20 training "
             "steps on ./train's own batches (1e-4 or more off fails):", "",
             "| peer | pe | step 0: loss (./train's) | relative difference | after 20 steps: loss (./train's) | "
             "relative difference |", "|---|---|---|---|---|---|"]
    for (peer, pe), v in sorted(eq.items(), key=lambda kv: (kv[0][0] != "torch", kv[0][1] != "rope")):
        s0, s20 = v.get("step0"), v.get("step20")
        lines.append(f"| {'PyTorch' if peer == 'torch' else 'JAX'} | {pe} | "
                     + (f"{s0[0]:.7f} ({s0[1]:.6f}) | {s0[2]:.1e} | " if s0 else "— | — | ")
                     + (f"{s20[0]:.6f} ({s20[1]:.6f}) | {s20[2]:.1e} |" if s20 else "— | — |"))
    if not eq:
        lines.append(f"| (check.sh failed) | {eq_log.strip().splitlines()[-1] if eq_log.strip() else '?'} | | | | |")
    best_fp32 = {}

    def peak_share(flop_rate, prec):
        """A rate as a share of the machine's measured peak for its precision (FMA; AVX-512 BF16 dot products)."""
        peak = fig["fma_peak_gflops"] if prec == "fp32" else fig.get("bf16_peak_gflops")
        return pct(flop_rate / (peak * 1e9)) if peak else "—"
    for name, pe, shape, steps, blocks, flops, p32, p16 in shapes:
        lines += ["", f"At {'the reference shape' if name == 'reference' else name} with "
                      f"{'RoPE' if pe == 'rope' else 'ALiBi'} ({shape_text(shape)}; "
                      f"{flops / 1e6:.2f} M FLOPs per trained token; steps per block {steps}):", "",
                  "| run | precision | tokens/s | GFLOP/s | share of the peak | pelab / it (same precision) | warm-up |",
                  "|---|---|---|---|---|---|---|",
                  f"| pelab (`--gemm {fig['engine']}`{'' if pe == 'rope' else ', --pe alibi'}) | fp32 | {p32:.0f} | "
                  f"{flops * p32 / 1e9:.1f} | {peak_share(flops * p32, 'fp32')} | — | — |"]
        if p16:
            lines.append(f"| pelab (`--precision bf16`, oneDNN) | bf16 | {p16:.0f} | {flops * p16 / 1e9:.1f} | "
                         f"{peak_share(flops * p16, 'bf16')} | — | — |")
        fastest = None
        for label, _, _, prec in CONFIGS:
            if (name, pe, label) not in results:
                continue
            tps, warm = results[(name, pe, label)]
            if tps is None:
                lines.append(f"| {label} | {prec} | {warm} | | | | |")
                continue
            mine = p32 if prec == "fp32" else p16
            ratio = f"{mine / tps:.2f}×" if mine else "— (pelab has no bf16 here)"
            lines.append(f"| {label} | {prec} | {tps:.0f} | {flops * tps / 1e9:.1f} | {peak_share(flops * tps, prec)} | "
                         f"{ratio} | {warm:.1f} s |")
            if prec == "fp32" and (fastest is None or tps > fastest[1]):
                fastest = (label, tps)
        best_fp32[(name, pe)] = fastest
        if fastest:
            lines += ["", f"pelab's ratio against the fastest fp32 peer ({fastest[0]}): **{p32 / fastest[1]:.2f}×**."]

    rows = target_rows(fig, results.get(("reference", "rope", "PyTorch eager"), (None,))[0],
                       best_fp32.get(("reference", "rope")))
    kind = "AVX-512" if fig["avx512"] else "AVX2-only"
    lines += ["", f"## Targets ({kind} machine)", "",
              f"The targets of docs/performance.md for this machine's kind ({fig['cpu']}; {kind}), read from the "
              f"tables above (the peers' from this section, pelab's from `./bench-pelab`'s):", "",
              "| target | this run |", "|---|---|"] + [f"| {t} | {v} |" for t, v in rows]
    if any(b is not None and b > 0.25 for b in busy):
        lines[3:3] = [f"> **The machine was not alone**: other processes kept {busy[0]:.1f} core(s) busy before the "
                      f"peers' timings and {busy[1]:.1f} after them. These figures measure the sharing (a peer's "
                      f"threads lose more to a busy core than pelab's), not the code: run `make bench` alone.", ""]
    if a.quick:
        lines[1:1] = ["", "> **--quick**: one round of few steps, a check that the peers run; not figures to publish."]
    with open(a.report, "a") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nappended to {a.report}")
    return 0 if all(eq_ok.values()) and eq_ok else 1


if __name__ == "__main__":
    sys.exit(main())
