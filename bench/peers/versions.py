"""What each peer runs on, as make bench reports it: versions and the kernel
libraries (PyTorch's BLAS, oneDNN and CPU capability; JAX's backend), with the
environment's OpenBLAS pin removed for this process, as for every peer.
Run with the peers' python: $(bench/peers/venv.sh) bench/peers/versions.py"""
import json
import os
import re
import sys


def torch_info():
    import torch
    cfg = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=([^,\s]+)", cfg)
    line = lambda key: next((l.strip(" -") for l in cfg.splitlines() if key in l), "?")
    return {"torch": torch.__version__, "blas": blas.group(1) if blas else "?",
            "mkl": line("Math Kernel Library"), "onednn": line("MKL-DNN"),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads()}


def jax_info():
    import jax
    import optax
    return {"jax": jax.__version__, "optax": optax.__version__, "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()]}


if __name__ == "__main__":
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # the peer's own process: its libraries at their best
        os.environ.pop(k, None)
    out = {"python": sys.version.split()[0]}
    for name, fn in (("pytorch", torch_info), ("jax", jax_info)):
        try:
            out[name] = fn()
        except Exception as e:  # a peer that does not import is reported, not a crash of the bench
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out, indent=1))
