"""pelab models in PyTorch: load a checkpoint (or an exported safetensors
file) as a torch.nn.Module, evaluate it, export it (docs/pytorch.md).

    from pelab_lab.torch import load
    model, config = load("r.ck")              # or "model.safetensors"
    logits, loss = model(tokens, targets)     # tokens (B, T) int64

    python3 -m pelab_lab.torch CK [CK ...] --eval [--data F] [--eval-ctx L,...] [--eval-tokens N] [--json]
    python3 -m pelab_lab.torch CK --export model.safetensors   (numpy only: no torch needed)

The model is written from the formulas of docs/model.md and
docs/encodings.md with ordinary tensor code (full T x T attention, autograd
for the gradients); it shares no code with ./train, so the test that compares
the two (tests/test_torch.c) compares two implementations. Every encoding of
`./train --list-pe`, the composites, both attention modes, RoPE's context
extensions (--rope-scale) and p-RoPE. Not --rand-pos: such a model is run at
positions 0..T-1 here (the module says so when it evaluates one).

Run it as a module (`python3 -m pelab_lab.torch`, PYTHONPATH=lab): run as a
file, its own name would hide PyTorch's.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np

from .corpus import train_split

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # export and the readers need numpy only
    torch = None


class PelabFileError(ValueError):
    """A checkpoint or safetensors file that cannot be read: the message says why."""


# ---------------------------------------------------------------- configuration

ABSOLUTE = ("sinusoidal", "learned")
RELATIVE = ("rope", "alibi", "t5", "xl", "shaw", "kerple", "sandwich", "dpb", "xpos", "fire", "cope")
CAUSAL_ONLY = ("xpos", "fire", "cope")
DPB_WIDTH = 32  # the hidden width of dpb's and fire's MLPs (model/pe/mlp.c)
ROPE_SCALES = ("none", "pi", "ntk", "yarn", "llama3", "longrope")  # model/pe/rope.c's ROPE_SCALINGS, in order
KERPLE_KINDS = ("log", "power")


def split_pe(spec):
    """(absolute, relative) names of an encoding spec such as 'learned+rope'."""
    absolute = relative = None
    for name in spec.split("+"):
        if name not in ABSOLUTE + RELATIVE + ("none",):
            raise PelabFileError(f"no PyTorch formula for encoding '{name}'; add it to lab/pelab_lab/torch.py "
                                 "(docs/extending.md)")
        if name in ABSOLUTE:
            absolute = name
        elif name != "none":
            relative = name
    return absolute, relative


def _number_or_name(text):
    try:
        return float(text)
    except ValueError:
        return text  # a choice, e.g. "log"


def _choice(value, names):
    """A choice stored as its name, or (older files) as its index."""
    if isinstance(value, str):
        if value not in names:
            raise PelabFileError(f"unknown choice '{value}' (one of {', '.join(names)})")
        return value
    if value != int(value) or not 0 <= value < len(names):
        raise PelabFileError(f"choice {value} is none of {len(names)} ({', '.join(names)})")
    return names[int(value)]


def _float_list(value, name):
    """A list option's values as float32s: from a checkpoint "[a,b]" or "a,b",
    or a JSON list; None when not given."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.strip().removeprefix("[").removesuffix("]").split(",")
    try:
        vals = [float(np.float32(float(v))) for v in value]
    except (TypeError, ValueError):
        raise PelabFileError(f"--{name} {value!r}: not a list of numbers") from None
    if not vals or not all(math.isfinite(v) for v in vals):
        raise PelabFileError(f"--{name} {value!r}: not a list of finite numbers")
    return vals


def resolve_options(cfg, opts):
    """Puts each encoding option in cfg: the value in opts, else the default the
    encoding declares (docs/encodings.md)."""
    d = cfg["d"]
    cfg["sin_base"] = float(opts.get("sin-base", 10000.0))
    cfg["sin_scale"] = float(opts.get("sin-scale") or np.float32(1.0) / np.sqrt(np.float32(d)))
    cfg["rope_base"] = float(opts.get("rope-base", 10000.0))
    cfg["rope_scale"] = _choice(opts.get("rope-scale", "none"), ROPE_SCALES)
    factor = opts.get("rope-factor")
    cfg["rope_factor"] = float(factor) if factor is not None else None
    cfg["rope_fraction"] = float(opts.get("rope-fraction", 1.0))
    cfg["rope_low_freq_factor"] = float(opts.get("rope-low-freq-factor", 1.0))
    cfg["rope_high_freq_factor"] = float(opts.get("rope-high-freq-factor", 4.0))
    cfg["rope_factors"] = _float_list(opts.get("rope-factors"), "rope-factors")
    cfg["t5_buckets"] = int(opts.get("t5-buckets", 32))
    cfg["t5_max_distance"] = int(opts.get("t5-max-distance", 128))
    cfg["kerple_kind"] = _choice(opts.get("kerple-kind", "log"), KERPLE_KINDS)
    cfg["sandwich_dim"] = int(opts.get("sandwich-dim", 128))
    cfg["xpos_scale_base"] = float(opts.get("xpos-scale-base", 512.0))
    cfg["cope_max_pos"] = int(opts.get("cope-max-pos", 64))
    clip = opts.get("rel-clip")
    cfg["rel_clip"] = int(clip) if clip else 0  # 0: not given (shaw then uses 16, xl does not clip)
    return cfg


# ---------------------------------------------------------------- pelab checkpoints

V1_HEADER = 8 + 4 + 4 + (9 * 4 + 3 * 4 + 32) + (8 + 8 + 4 + 4 + 3 * 4 + 8 + 8 + 512) + 8
V2_FIXED = 8 + 4 + 4 + 8 + 4


def _unescape(text):
    return text.replace("\\n", "\n").replace("\\\\", "\\")


def read_checkpoint(path):
    """(config, flat float32 parameters) of a pelab checkpoint (docs/checkpoint.md,
    versions 1 and 2), every encoding option resolved to the value the model uses."""
    try:
        raw = open(path, "rb").read()
    except OSError as e:
        raise PelabFileError(f"cannot read '{path}': {e.strerror}") from None
    if raw[:8] != b"PELABCK1":
        raise PelabFileError(f"'{path}' is not a pelab checkpoint (it does not start with PELABCK1)")
    if len(raw) < 16:
        raise PelabFileError(f"'{path}' is truncated inside its header")
    version, flags = struct.unpack_from("<II", raw, 8)
    if version == 1:
        if len(raw) < V1_HEADER:
            raise PelabFileError(f"'{path}' is truncated inside its header")
        o = 16
        ints = struct.unpack_from("<9i", raw, o); o += 36
        floats = struct.unpack_from("<3f", raw, o); o += 12
        pe = raw[o:o + 32].split(b"\0")[0].decode(); o += 32
        o += 8 + 8 + 4 + 4 + 12 + 8 + 8 + 512  # training state
        (n,) = struct.unpack_from("<Q", raw, o); o += 8
        cfg = dict(zip(["vocab", "ctx", "d", "layers", "heads", "causal"], ints[:6]))
        opts = {"rel-clip": ints[6] or None, "t5-buckets": ints[7], "t5-max-distance": ints[8],
                "sin-base": floats[0], "sin-scale": floats[1], "rope-base": floats[2]}
        cfg.update(pe=pe, base_ctx=0, rand_pos=0, data=None, seed=1)
    elif version == 2:
        if len(raw) < V2_FIXED + 4:
            raise PelabFileError(f"'{path}' is truncated inside its header")
        if zlib.crc32(raw[:-4]) != struct.unpack_from("<I", raw, len(raw) - 4)[0]:
            raise PelabFileError(f"'{path}' is corrupt or truncated: its CRC-32 does not match its bytes")
        (n, text_len) = struct.unpack_from("<QI", raw, 16)
        o = V2_FIXED + text_len
        try:
            kv = dict(line.split("=", 1) for line in raw[V2_FIXED:o].decode().splitlines() if not line.startswith("curve="))
            cfg = {"vocab": int(kv["vocab"]), "ctx": int(kv["ctx"]), "d": int(kv["d_model"]), "layers": int(kv["layers"]),
                   "heads": int(kv["heads"]), "causal": int(kv["attn"] == "causal"), "pe": kv["pe"],
                   "base_ctx": int(kv.get("base_ctx", 0)), "rand_pos": int(kv.get("rand_pos", 0)),
                   "data": _unescape(kv["data"]) if "data" in kv else None, "seed": int(kv.get("seed", 1))}
        except (ValueError, KeyError, UnicodeDecodeError) as e:
            raise PelabFileError(f"'{path}': its settings text is malformed ({e})") from None
        opts = {k[4:]: _number_or_name(v) for k, v in kv.items() if k.startswith("opt.")}
    else:
        raise PelabFileError(f"'{path}': checkpoint format version {version}; this module reads versions 1 and 2")
    if o + 4 * n > len(raw):
        raise PelabFileError(f"'{path}' is truncated: it holds fewer than its {n} parameters")
    resolve_options(cfg, opts)
    cfg["options"] = {k: v for k, v in opts.items() if v is not None}
    params = np.frombuffer(raw, dtype="<f4", count=n, offset=o).astype(np.float32)
    expected = sum(int(np.prod(s)) for _, s in layout(cfg))
    if expected != n:
        raise PelabFileError(f"'{path}' holds {n} parameters, but its settings make a model of {expected}")
    return cfg, params


def layout(cfg):
    """(name, shape) of every tensor, in the checkpoint's order (pelab's names)."""
    V, C, L, H = cfg["vocab"], cfg["d"], cfg["layers"], cfg["heads"]
    hs = C // H
    t = [("wte", (V, C)), ("ln1w", (L, C)), ("ln1b", (L, C)), ("qkvw", (L, 3 * C, C)), ("qkvb", (L, 3 * C)),
         ("projw", (L, C, C)), ("projb", (L, C)), ("ln2w", (L, C)), ("ln2b", (L, C)), ("fcw", (L, 4 * C, C)),
         ("fcb", (L, 4 * C)), ("fcprojw", (L, C, 4 * C)), ("fcprojb", (L, C)), ("lnfw", (C,)), ("lnfb", (C,))]
    absolute, relative = split_pe(cfg["pe"])
    if absolute == "learned":
        t.append(("pe_learned", (cfg["ctx"], C)))
    if relative == "t5":
        t.append(("pe_t5", (cfg["t5_buckets"], H)))
    if relative == "xl":
        t += [("pe_xl_wr", (L, C, C)), ("pe_xl_u", (L, H, hs)), ("pe_xl_v", (L, H, hs))]
    if relative == "shaw":
        k = cfg["rel_clip"] if cfg["rel_clip"] > 0 else 16
        t += [("pe_shaw_k", (L, 2 * k + 1, hs)), ("pe_shaw_v", (L, 2 * k + 1, hs))]
    if relative == "kerple":
        t += [("pe_kerple_r1", (L, H)), ("pe_kerple_r2", (L, H))]
    if relative == "cope":
        t.append(("pe_cope_e", (L, cfg["cope_max_pos"] + 1, hs)))
    if relative == "fire":
        W = DPB_WIDTH
        t += [("pe_fire_w1", (L, W)), ("pe_fire_b1", (L, W)), ("pe_fire_wo", (L, H, W)), ("pe_fire_bo", (L, H)),
              ("pe_fire_c", (L,)), ("pe_fire_l", (L,))]
    if relative == "dpb":
        W = DPB_WIDTH
        t += [("pe_dpb_w1", (W,)), ("pe_dpb_b1", (W,)), ("pe_dpb_w2", (W, W)), ("pe_dpb_b2", (W,)),
              ("pe_dpb_wo", (H, W)), ("pe_dpb_bo", (H,))]
    return t


def unflatten(cfg, flat):
    """{pelab name: ndarray} from the flat parameters."""
    out, o = {}, 0
    for name, shape in layout(cfg):
        size = int(np.prod(shape))
        out[name] = flat[o:o + size].reshape(shape)
        o += size
    return out


# ---------------------------------------------------------------- safetensors (GPT-2 names)

# pelab's per-layer tensor -> (GPT-2's name after h.N., transposed): GPT-2's
# Conv1D keeps weights as (in, out), y = x W + b; pelab keeps (out, in).
GPT2_NAMES = {"ln1w": ("ln_1.weight", False), "ln1b": ("ln_1.bias", False),
              "qkvw": ("attn.c_attn.weight", True), "qkvb": ("attn.c_attn.bias", False),
              "projw": ("attn.c_proj.weight", True), "projb": ("attn.c_proj.bias", False),
              "ln2w": ("ln_2.weight", False), "ln2b": ("ln_2.bias", False),
              "fcw": ("mlp.c_fc.weight", True), "fcb": ("mlp.c_fc.bias", False),
              "fcprojw": ("mlp.c_proj.weight", True), "fcprojb": ("mlp.c_proj.bias", False)}
GLOBAL_NAMES = {"wte": "wte.weight", "pe_learned": "wpe.weight", "lnfw": "ln_f.weight", "lnfb": "ln_f.bias"}
# the encodings' tensors shared by the layers (the others are per layer: h.N.attn.pos.NAME)
SHARED_PE = ("pe_t5", "pe_dpb_w1", "pe_dpb_b1", "pe_dpb_w2", "pe_dpb_b2", "pe_dpb_wo", "pe_dpb_bo")

CONFIG_KEYS = ("vocab", "ctx", "d", "layers", "heads", "causal", "pe", "base_ctx", "rand_pos", "options")


def export_tensors(cfg, flat):
    """[(safetensors name, float32 array)] in GPT-2's names (docs/pytorch.md)."""
    out = []
    for name, arr in unflatten(cfg, flat).items():
        if name in GLOBAL_NAMES:
            out.append((GLOBAL_NAMES[name], arr))
        elif name in GPT2_NAMES:
            new, transpose = GPT2_NAMES[name]
            out += [(f"h.{l}.{new}", arr[l].T if transpose else arr[l]) for l in range(cfg["layers"])]
        elif name in SHARED_PE:
            out.append((f"pos.{name[3:]}", arr))
        else:
            out += [(f"h.{l}.attn.pos.{name[3:]}", arr[l]) for l in range(cfg["layers"])]
    return out


def import_tensors(cfg, tensors, path):
    """The flat parameters from {safetensors name: array}, checked against cfg."""
    want = dict((n, s) for n, s in layout(cfg))
    parts = []
    for name, shape in layout(cfg):
        if name in GLOBAL_NAMES or name in SHARED_PE:
            key = GLOBAL_NAMES.get(name) or f"pos.{name[3:]}"
            arr = _take(tensors, key, shape, path)
        else:
            new, transpose = GPT2_NAMES.get(name, (f"attn.pos.{name[3:]}", False))
            per = shape[1:][::-1] if transpose else shape[1:]
            rows = [_take(tensors, f"h.{l}.{new}", per, path) for l in range(cfg["layers"])]
            arr = np.stack([r.T if transpose else r for r in rows])
        parts.append(arr.reshape(-1))
    extra = set(tensors) - {n for n, _ in export_tensors(cfg, np.zeros(sum(int(np.prod(s)) for s in want.values()),
                                                                        np.float32))}
    if extra:
        raise PelabFileError(f"'{path}' has tensors this model does not use: {', '.join(sorted(extra)[:5])}")
    return np.concatenate(parts).astype(np.float32)


def _take(tensors, key, shape, path):
    if key not in tensors:
        raise PelabFileError(f"'{path}' lacks the tensor '{key}'")
    arr = tensors[key]
    if tuple(arr.shape) != tuple(shape):
        raise PelabFileError(f"'{path}': tensor '{key}' has shape {list(arr.shape)}, the model needs {list(shape)}")
    return arr


def write_safetensors(path, cfg, flat):
    """Writes the model as safetensors (an 8-byte little-endian header length, a
    JSON header of names, dtypes, shapes and byte offsets, then the raw float32
    tensors) with the architecture in the header's __metadata__, and the same
    architecture as config.json beside it. Both written atomically."""
    tensors = export_tensors(cfg, flat)
    config = {k: cfg[k] for k in CONFIG_KEYS}
    header, off = {"__metadata__": {"format": "pt", "pelab_config": json.dumps(config, sort_keys=True)}}, 0
    for name, arr in tensors:
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + arr.size * 4]}
        off += arr.size * 4
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    _atomic_write(path, [struct.pack("<Q", len(text)), text] +
                  [np.ascontiguousarray(a, dtype="<f4").tobytes() for _, a in tensors])
    conf = os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")
    _atomic_write(conf, [(json.dumps(config, indent=2, sort_keys=True) + "\n").encode()])
    return conf


def _atomic_write(path, chunks):
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise PelabFileError(f"cannot write '{path}': {e.strerror}") from None


def read_safetensors(path):
    """({name: float32 array}, metadata) of a safetensors file, every offset checked."""
    try:
        raw = open(path, "rb").read()
    except OSError as e:
        raise PelabFileError(f"cannot read '{path}': {e.strerror}") from None
    if len(raw) < 8:
        raise PelabFileError(f"'{path}' is not a safetensors file: shorter than its 8-byte header length")
    (n,) = struct.unpack_from("<Q", raw, 0)
    if n > len(raw) - 8:
        raise PelabFileError(f"'{path}' is truncated or not a safetensors file: its header length ({n}) runs past "
                             f"the end of the file ({len(raw)} bytes)")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError) as e:
        raise PelabFileError(f"'{path}': its safetensors header is not valid JSON ({e})") from None
    meta = header.pop("__metadata__", {}) or {}
    data, tensors, end = raw[8 + n:], {}, 0
    for name, info in header.items():
        try:
            dtype, shape, (a, b) = info["dtype"], [int(s) for s in info["shape"]], info["data_offsets"]
        except (TypeError, KeyError, ValueError):
            raise PelabFileError(f"'{path}': tensor '{name}' lacks dtype, shape or data_offsets") from None
        if dtype != "F32":
            raise PelabFileError(f"'{path}': tensor '{name}' is {dtype}; pelab's tensors are F32")
        if not (0 <= a <= b <= len(data)):
            raise PelabFileError(f"'{path}' is truncated: tensor '{name}' ends at byte {b} of data, the file holds {len(data)}")
        if b - a != 4 * int(np.prod(shape)):
            raise PelabFileError(f"'{path}': tensor '{name}' of shape {shape} takes {b - a} bytes, not {4 * int(np.prod(shape))}")
        tensors[name] = np.frombuffer(data, dtype="<f4", count=(b - a) // 4, offset=a).reshape(shape).astype(np.float32)
        end = max(end, b)
    if end != len(data):
        raise PelabFileError(f"'{path}': {len(data) - end} bytes after the last tensor (a corrupt or foreign file)")
    return tensors, meta


def read_any(path):
    """(config, flat parameters) of a pelab checkpoint or a safetensors file pelab
    exported (its config from the header, or config.json beside it)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise PelabFileError(f"cannot read '{path}': {e.strerror}") from None
    if head == b"PELABCK1":
        return read_checkpoint(path)
    if not head:
        raise PelabFileError(f"'{path}' is empty")
    with open(path, "rb") as f:
        f.seek(8)
        if f.read(1) != b"{":
            raise PelabFileError(f"'{path}' is neither a pelab checkpoint (it would start with PELABCK1) nor a "
                                 "safetensors file (a JSON header after 8 bytes)")
    tensors, meta = read_safetensors(path)
    if "pelab_config" in meta:
        try:
            config = json.loads(meta["pelab_config"])
        except ValueError:
            raise PelabFileError(f"'{path}': its pelab_config metadata is not valid JSON") from None
    else:
        conf = os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")
        try:
            config = json.load(open(conf))
        except (OSError, ValueError) as e:
            raise PelabFileError(f"'{path}' has no pelab_config in its metadata and {conf} cannot be read ({e})") from None
    missing = [k for k in CONFIG_KEYS if k not in config]
    if missing:
        raise PelabFileError(f"'{path}': its configuration lacks {', '.join(missing)}")
    cfg = {k: config[k] for k in CONFIG_KEYS}
    cfg.update(data=None, seed=1)
    resolve_options(cfg, cfg["options"])
    return cfg, import_tensors(cfg, tensors, path)


# ---------------------------------------------------------------- the model

def _need_torch():
    if torch is None:
        raise SystemExit("pelab_lab.torch: this needs PyTorch (apt-get install python3-torch)")


def sinusoid(pos, d, base):
    """(..., d): sin at even channels, cos at odd, frequency base^(-2i/d)."""
    i = torch.arange(d // 2, dtype=torch.float64)
    ang = pos.to(torch.float64)[..., None] / (base ** (2 * i / d))
    out = torch.stack([torch.sin(ang), torch.cos(ang)], dim=-1)
    return out.reshape(*pos.shape, d).to(torch.float32)


def alibi_slopes(H):
    def pow2(n):
        return [2 ** (-8 * h / n) for h in range(1, n + 1)]
    c = 2 ** int(math.floor(math.log2(H)))
    s = pow2(c)
    if c < H:
        s += pow2(2 * c)[0::2][: H - c]
    return torch.tensor(s, dtype=torch.float32)


def t5_bucket(n, bidirectional, num_buckets, max_distance):
    ret = 0
    if bidirectional:
        num_buckets //= 2
        if n < 0:
            ret += num_buckets
        n = abs(n)
    else:
        n = max(n, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    v = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact))
    return ret + min(v, num_buckets - 1)


def rope_extension(cfg, eval_len):
    """(scale, factor) of RoPE's context extension for an evaluation at
    eval_len (None or 0: training; docs/encodings.md): a fine-tuned model keeps
    its own at every length; otherwise the chosen one, factor eval_len / ctx."""
    T, base, given = cfg["ctx"], cfg["base_ctx"], cfg["rope_factor"]
    if base > 0:
        return cfg["rope_scale"], given if given is not None else (T / base if T > base else 1.0)
    if not eval_len:
        return "none", 1.0
    return cfg["rope_scale"], given if given is not None else (eval_len / T if eval_len > T else 1.0)


def rope_frequencies(cfg, hs, eval_len):
    """(theta as float32, position multiplier, multiplier of q) under the extension."""
    scale, s = rope_extension(cfg, eval_len)
    s = float(np.float32(s))  # the factor is a float in ./train
    if s == 1.0:
        scale = "none"  # every extension is the identity at factor 1
    base = float(np.float32(cfg["rope_base"]))
    ctx = cfg["base_ctx"] or cfg["ctx"]
    if scale == "ntk":
        base *= s ** (hs / max(hs - 2, 1))
    m = np.arange(hs // 2, dtype=np.float64)
    th = base ** (-2.0 * m / hs)

    def ramp(alpha, beta):  # YaRN's and Llama 3's: by the turns ctx/λ_m each pair makes in the trained length
        g = np.clip((ctx / (2 * math.pi / th) - alpha) / (beta - alpha), 0.0, 1.0)
        return (1 - g) * th / s + g * th

    qmul = 1.0
    if scale == "yarn":  # Peng et al. 2023: α 1, β 32, logits sharpened
        th = ramp(1.0, 32.0)
        qmul = float(np.float32(0.1 * math.log(s) + 1.0) ** 2)
    elif scale == "llama3":  # Meta 2024: its own band edges, logits unchanged
        th = ramp(cfg["rope_low_freq_factor"], cfg["rope_high_freq_factor"])
    elif scale == "longrope":  # Ding et al. 2024: a searched factor per pair, logits x (1 + ln s / ln ctx)
        lam = cfg["rope_factors"]
        if not lam or len(lam) != hs // 2:
            raise PelabFileError(f"--rope-scale longrope needs --rope-factors with {hs // 2} values (head size {hs} / 2)")
        th = th / np.array(lam, dtype=np.float64)
        qmul = float(np.float32(1.0 + math.log(s) / math.log(max(ctx, 2))))
    theta = th.astype(np.float32)
    theta[int(math.floor(cfg["rope_fraction"] * (hs // 2) + 0.5)):] = 0  # p-RoPE: the highest frequencies rotate
    pos_mul = float(np.float32(1.0 / s)) if scale == "pi" else 1.0
    return theta, pos_mul, qmul


def rope(x, theta, pos_mul, pos):
    """x (B, H, T, hs): pairs (2m, 2m+1) rotated by pos * pos_mul * theta_m."""
    ang = pos.to(torch.float64)[:, None] * pos_mul * torch.tensor(theta, dtype=torch.float64)[None, :]
    c, s = torch.cos(ang).to(torch.float32), torch.sin(ang).to(torch.float32)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * c - b * s, a * s + b * c], dim=-1).reshape(x.shape)


if torch is not None:
    class PelabModel(torch.nn.Module):
        """A pelab model: forward(tokens, targets=None, seg=None, eval_len=None)
        -> (logits (B, T, vocab), mean cross-entropy over targets >= 0, or None).
        seg (B, T): tokens attend only within their segment (default: one).
        eval_len: the evaluation length RoPE's --rope-scale extension is set for
        (None: as in training). keep_attention = True keeps each layer's
        attention weights (B, H, T, T) in .attention after a forward."""

        def __init__(self, cfg, flat):
            super().__init__()
            self.cfg = cfg
            self.names = [n for n, _ in layout(cfg)]
            self.params = torch.nn.ParameterDict(
                {n: torch.nn.Parameter(torch.tensor(a)) for n, a in unflatten(cfg, np.asarray(flat, np.float32)).items()})
            self.keep_attention = False
            self.attention = []

        def flat_grads(self):
            """The gradients in the checkpoint's order, as one float32 vector."""
            return torch.cat([self.params[n].grad.reshape(-1) for n in self.names])

        def forward(self, tokens, targets=None, seg=None, eval_len=None):
            cfg, P = self.cfg, self.params
            B, T = tokens.shape
            C, L, H = cfg["d"], cfg["layers"], cfg["heads"]
            hs = C // H
            causal = bool(cfg["causal"])
            absolute, relative = split_pe(cfg["pe"])
            if seg is None:
                seg = torch.zeros_like(tokens)
            if absolute == "learned" and T > cfg["ctx"]:
                raise ValueError(f"learned positions stop at the training ctx {cfg['ctx']}; T = {T}")
            pos = torch.arange(T)
            x = P["wte"][tokens]
            if absolute == "sinusoidal":
                x = x + sinusoid(pos, C, cfg["sin_base"]) * cfg["sin_scale"]
            if absolute == "learned":
                x = x + P["pe_learned"][:T]
            i, j = pos[:, None], pos[None, :]
            allowed = (seg[:, :, None] == seg[:, None, :])[:, None]
            if causal:
                allowed = allowed & (j <= i)
            if relative == "rope":
                theta, pos_mul, qmul = rope_frequencies(cfg, hs, eval_len)
            self.attention = []
            for l in range(L):
                h = F.layer_norm(x, (C,), P["ln1w"][l], P["ln1b"][l], eps=1e-5)
                qkv = h @ P["qkvw"][l].T + P["qkvb"][l]
                q, k, v = [t.reshape(B, T, H, hs).transpose(1, 2) for t in qkv.split(C, dim=-1)]
                if relative == "rope":
                    q, k = rope(q, theta, pos_mul, pos) * qmul, rope(k, theta, pos_mul, pos)
                if relative == "xpos":
                    # q scaled by zeta^(n/gamma), k by zeta^(-n/gamma), n from ctx//2
                    zeta = (2 * torch.arange(hs // 2, dtype=torch.float64) / hs + 0.4) / 1.4
                    e = (pos.to(torch.float64) - cfg["ctx"] // 2)[:, None] / cfg["xpos_scale_base"]
                    sc = torch.repeat_interleave(zeta[None, :] ** e, 2, dim=1)
                    th = (10000.0 ** (-2 * np.arange(hs // 2, dtype=np.float64) / hs)).astype(np.float32)
                    q = rope(q, th, 1.0, pos) * sc.to(torch.float32)
                    k = rope(k, th, 1.0, pos) * (1 / sc).to(torch.float32)
                if relative == "xl":
                    u, vv = P["pe_xl_u"][l][None, :, None, :], P["pe_xl_v"][l][None, :, None, :]
                    dist = i - j
                    if cfg["rel_clip"] > 0:
                        dist = dist.clamp(-cfg["rel_clip"], cfg["rel_clip"])
                    R = (sinusoid(dist, C, 10000.0) @ P["pe_xl_wr"][l].T).reshape(T, T, H, hs)  # W_R r_(i-j)
                    s = ((q + u) @ k.transpose(-1, -2) + torch.einsum("bhid,ijhd->bhij", q + vv, R)) / math.sqrt(hs)
                else:
                    s = q @ k.transpose(-1, -2) / math.sqrt(hs)
                if relative == "alibi":
                    m = alibi_slopes(H)[None, :, None, None]
                    s = s - m * ((i - j) if causal else (i - j).abs()).to(torch.float32)
                if relative == "t5":
                    bk = torch.tensor([[t5_bucket(a - b, not causal, cfg["t5_buckets"], cfg["t5_max_distance"])
                                        for b in range(T)] for a in range(T)])
                    s = s + P["pe_t5"][bk].permute(2, 0, 1)[None]
                if relative == "cope":
                    # gates sigmoid(q.k) on earlier keys, p_ij = sum_{t=j..i} g_it, clipped at P, interpolated
                    P_max = cfg["cope_max_pos"]
                    g = torch.sigmoid(q @ k.transpose(-1, -2)) * (j <= i)
                    p = g.flip(-1).cumsum(-1).flip(-1).clamp(max=P_max)
                    z = q @ P["pe_cope_e"][l].T  # (B, H, T, P+1)
                    lo = p.detach().floor().long()
                    hi = (lo + 1).clamp(max=P_max)
                    fr = p - lo
                    e_p = torch.gather(z, -1, lo) * (1 - fr) + torch.gather(z, -1, hi) * fr
                    s = s + e_p / math.sqrt(hs)
                if relative == "fire":
                    # f(psi(i - j) / psi(max(L, i))), psi(x) = log(c x + 1); c, L = exp(parameter)
                    c, thr = torch.exp(P["pe_fire_c"][l].double()), torch.exp(P["pe_fire_l"][l].double())
                    n = (i - j).clamp(min=0).double()
                    u = (torch.log(c * n + 1) / torch.log(c * torch.maximum(thr, i.double()) + 1)).float()[..., None]
                    hid = F.silu(u * P["pe_fire_w1"][l] + P["pe_fire_b1"][l])
                    s = s + (hid @ P["pe_fire_wo"][l].T + P["pe_fire_bo"][l]).permute(2, 0, 1)[None]
                if relative in ("kerple", "sandwich", "dpb"):
                    s = s + self._distance_bias(l, i - j)[None]
                if relative == "shaw":
                    kc = cfg["rel_clip"] if cfg["rel_clip"] > 0 else 16
                    rel = (j - i).clamp(-kc, kc) + kc
                    s = s + torch.einsum("bhid,ijd->bhij", q, P["pe_shaw_k"][l][rel]) / math.sqrt(hs)
                s = s.masked_fill(~allowed, float("-inf"))
                a = torch.softmax(s, dim=-1)
                if self.keep_attention:
                    self.attention.append(a.detach())
                y = a @ v
                if relative == "shaw":
                    y = y + torch.einsum("bhij,ijd->bhid", a, P["pe_shaw_v"][l][rel])
                y = y.transpose(1, 2).reshape(B, T, C)
                x = x + y @ P["projw"][l].T + P["projb"][l]
                h = F.layer_norm(x, (C,), P["ln2w"][l], P["ln2b"][l], eps=1e-5)
                h = F.gelu(h @ P["fcw"][l].T + P["fcb"][l], approximate="tanh")
                x = x + h @ P["fcprojw"][l].T + P["fcprojb"][l]
            x = F.layer_norm(x, (C,), P["lnfw"], P["lnfb"], eps=1e-5)
            logits = x @ P["wte"].T
            if targets is None:
                return logits, None
            return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-1)

        def _distance_bias(self, l, n):
            """(H, T, T) bias of layer l for the distances n = i - j."""
            cfg, P, H = self.cfg, self.params, self.cfg["heads"]
            a = n.abs().to(torch.float32)[None]
            if cfg["pe"].endswith("kerple"):
                r1 = F.softplus(P["pe_kerple_r1"][l])[:, None, None]
                if cfg["kerple_kind"] == "log":
                    return -r1 * torch.log1p(F.softplus(P["pe_kerple_r2"][l])[:, None, None] * a)
                return -r1 * a ** (2 * torch.sigmoid(P["pe_kerple_r2"][l])[:, None, None])
            if cfg["pe"].endswith("sandwich"):
                dim = cfg["sandwich_dim"]
                k = torch.arange(1, dim // 2 + 1, dtype=torch.float64)
                r = 8.0 * torch.arange(1, H + 1, dtype=torch.float64) / H
                ang = n.to(torch.float64)[None, :, :, None] / r[:, None, None, None] / 10000.0 ** (2 * k / dim)
                return (torch.cos(ang).sum(-1) - dim // 2).to(torch.float32)
            # dpb: an MLP of sign(n) log(1 + |n|), shared by the layers
            x = (torch.sign(n.to(torch.float32)) * torch.log1p(a[0]))[..., None]
            h = F.silu(x * P["pe_dpb_w1"] + P["pe_dpb_b1"])
            h = F.silu(h @ P["pe_dpb_w2"].T + P["pe_dpb_b2"])
            return (h @ P["pe_dpb_wo"].T + P["pe_dpb_bo"]).permute(2, 0, 1)


ROPE_EVAL_OPTIONS = ("rope-low-freq-factor", "rope-high-freq-factor", "rope-factors")


def load(path, rope_scale=None, rope_factor=None, rope_options=None):
    """(model, config) from a pelab checkpoint or a safetensors file pelab
    exported: model a PelabModel (torch.nn.Module) in eval mode. rope_scale
    (none, pi, ntk, yarn, llama3, longrope), rope_factor and rope_options (a
    dict of ROPE_EVAL_OPTIONS, e.g. {"rope-factors": "1,1.5,2,4"}): RoPE's
    context extension at evaluation, as ./train's options of those names."""
    _need_torch()
    cfg, flat = read_any(path)
    if (rope_scale, rope_factor, rope_options) != (None, None, None) and not cfg["pe"].endswith("rope"):
        raise PelabFileError(f"--rope-scale and its options are rope's; '{path}' is --pe {cfg['pe']}")
    if rope_scale is not None:
        cfg["rope_scale"] = _choice(rope_scale, ROPE_SCALES)
    if rope_factor is not None:
        if cfg["rope_scale"] == "none":
            raise PelabFileError("--rope-factor needs --rope-scale pi, ntk, yarn, llama3 or longrope")
        cfg["rope_factor"] = float(rope_factor)
    for name, value in (rope_options or {}).items():
        if name not in ROPE_EVAL_OPTIONS:
            raise PelabFileError(f"unknown RoPE option '{name}' (one of {', '.join(ROPE_EVAL_OPTIONS)})")
        key = name.replace("-", "_")
        cfg[key] = _float_list(value, name) if name == "rope-factors" else float(value)
    return PelabModel(cfg, flat).eval(), cfg


# ---------------------------------------------------------------- evaluation as ./train does it

SHARD_MAGIC, SHARD_HEADER_BYTES, SHARD_VOCAB = 20240520, 1024, 50257
MASK_RATE = np.float32(0.15)
EVAL_BATCH_TOKENS = 4096
M64 = (1 << 64) - 1


class Rng:
    """./train's generator (core/common.c: splitmix64)."""

    def __init__(self, s):
        self.s = s & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return np.float32(self.next() >> 40) / np.float32(16777216.0)

    def below(self, n):
        return ((self.next() >> 32) * n) >> 32


def corpus_tokens(spec):
    """(tokens as an int64 array, mask token) of a file corpus as ./train reads it:
    a byte per token, or an llm.c shard's GPT-2 tokens (data/data.c)."""
    if spec in (None, "cats") or spec.startswith("task:"):
        raise PelabFileError(f"--data {spec or 'cats'}: a built-in corpus is made by ./train's C code; this module "
                             "evaluates file corpora (give --data FILE, or evaluate with ./train --load)")
    try:
        raw = open(spec, "rb").read()
    except OSError as e:
        raise PelabFileError(f"cannot read --data '{spec}': {e.strerror}") from None
    if len(raw) >= 4 and struct.unpack_from("<i", raw, 0)[0] == SHARD_MAGIC:
        (count,) = struct.unpack_from("<I", raw, 8)
        return np.frombuffer(raw, dtype="<u2", count=count, offset=SHARD_HEADER_BYTES).astype(np.int64), SHARD_VOCAB
    return np.frombuffer(raw, dtype=np.uint8).astype(np.int64), 256


def eval_rows(cfg, tokens, mask, L, eval_tokens, seed):
    """The validation windows ./train scores at length L: (tokens, targets), each (W, L)."""
    n = len(tokens)
    n_train = train_split(n)
    nval = n - n_train
    have = (nval - 1) // L if nval > 0 else 0
    if have == 0:
        raise PelabFileError(f"the validation split has {nval} tokens, too short for one window of {L}")
    windows = min(max(eval_tokens // L, 1), have)
    starts = n_train + np.arange(windows) * L
    x = tokens[starts[:, None] + np.arange(L)[None, :]]
    if cfg["causal"]:
        return x, tokens[starts[:, None] + np.arange(1, L + 1)[None, :]]
    tok, tgt = x.copy(), np.full_like(x, -1)
    for w in range(windows):  # data/data.c mask_row: 15% of positions, at least one, from the window's own stream
        r = Rng((seed * 0xD1B54A32D192ED03 + 0x3C6EF372FE94F82A + w * 0x9E3779B97F4A7C15) & M64)
        masked = np.array([r.uniform() < MASK_RATE for _ in range(L)])
        if not masked.any():
            masked[r.below(L)] = True
        tok[w, masked], tgt[w, masked] = mask, x[w, masked]
    return tok, tgt


def read_rows(path):
    """The validation windows ./train --eval-rows FILE wrote: {L: (tokens,
    targets, segments)}, each (windows, L) int64 (docs/pytorch.md)."""
    try:
        raw = open(path, "rb").read()
    except OSError as e:
        raise PelabFileError(f"cannot read --rows '{path}': {e.strerror}") from None
    if raw[:8] != b"PELABROW" or len(raw) < 16 or struct.unpack_from("<I", raw, 8)[0] != 1:
        raise PelabFileError(f"'{path}' is not a file of ./train --eval-rows (version 1)")
    (n,), o, rows = struct.unpack_from("<I", raw, 12), 16, {}
    for _ in range(n):
        if o + 8 > len(raw):
            raise PelabFileError(f"'{path}' is truncated")
        L, w = struct.unpack_from("<II", raw, o)
        o += 8
        if L < 1 or w < 1 or o + 12 * L * w > len(raw):
            raise PelabFileError(f"'{path}' is truncated or corrupt (length {L}, {w} windows)")
        a = np.frombuffer(raw, dtype="<i4", count=3 * L * w, offset=o).astype(np.int64).reshape(3, w, L)
        rows[L] = (a[0], a[1], a[2])
        o += 12 * L * w
    if o != len(raw):
        raise PelabFileError(f"'{path}' has bytes after its last window")
    return rows


def train_binary():
    """./train of this repository (or PELAB_TRAIN): it makes a built-in
    corpus's validation windows (--eval-rows)."""
    path = os.environ.get("PELAB_TRAIN") or str(Path(__file__).resolve().parents[2] / "train")
    if not os.access(path, os.X_OK):
        raise PelabFileError(f"a built-in corpus's windows come from ./train, and there is none at {path} "
                             "(build it with make, or set PELAB_TRAIN, or give --rows FILE from ./train --eval-rows)")
    return path


def builtin_rows(ckpt, lengths, eval_tokens, data=None):
    """{L: rows} of a checkpoint trained on cats or a task, made by ./train
    --load CK --eval-rows (the C generators are the only source of them)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "rows.bin")
        cmd = [train_binary(), "--load", ckpt, "--eval-ctx", ",".join(map(str, lengths)), "--eval-tokens",
               str(eval_tokens), "--eval-rows", out, "--threads", "1", "--quiet"] + (["--data", data] if data else [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 and not os.path.exists(out):
            raise PelabFileError(f"./train could not make the validation windows: {r.stderr.strip()}")
        return read_rows(out)


def evaluate(model, cfg, L, data=None, eval_tokens=16384, seed=None, rows=None):
    """Mean cross-entropy (nats per token) at length L over the validation
    windows ./train --load scores (no --eval-window), and the tokens scored.
    rows: {L: (tokens, targets, segments)} from read_rows (a built-in
    corpus's), else the windows of the file corpus are made here."""
    if split_pe(cfg["pe"])[0] == "learned" and L > cfg["ctx"]:
        raise PelabFileError(f"--pe {cfg['pe']} has no positions past {cfg['ctx']} (the training ctx), so ctx={L} "
                             "cannot be evaluated")
    if rows is not None:
        if L not in rows:
            raise PelabFileError(f"the windows given have no length {L} (they have {', '.join(map(str, sorted(rows)))})")
        tok, tgt, seg = rows[L]
    else:
        spec = data if data is not None else cfg.get("data")
        tokens, mask = corpus_tokens(spec)
        tok, tgt = eval_rows(cfg, tokens, mask, L, eval_tokens, cfg.get("seed", 1) if seed is None else seed)
        seg = np.zeros_like(tok)
    total, count = 0.0, 0
    B = max(EVAL_BATCH_TOKENS // L, 1)
    with torch.no_grad():
        for b0 in range(0, len(tok), B):
            t, y = torch.tensor(tok[b0:b0 + B]), torch.tensor(tgt[b0:b0 + B])
            logits, _ = model(t, seg=torch.tensor(seg[b0:b0 + B]), eval_len=L)
            lp = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-1, reduction="none")
            total += lp.double().sum().item()
            count += int((y >= 0).sum())
    return total / count, count


# ---------------------------------------------------------------- command line

USAGE = """usage: python3 -m pelab_lab.torch MODEL [MODEL ...] --eval [--data FILE] [--eval-ctx L,...] [--eval-tokens N] [--seed N]
           [--rope-scale none|pi|ntk|yarn|llama3|longrope] [--rope-factor X] [--rope-low-freq-factor X]
           [--rope-high-freq-factor X] [--rope-factors X,X,...] [--rows FILE] [--json]
       python3 -m pelab_lab.torch MODEL --export OUT.safetensors
MODEL: a pelab checkpoint (--save) or a safetensors file this module exported."""


def usage_error(text):
    print(f"pelab_lab.torch: {text}\n{USAGE}", file=sys.stderr)
    return 2


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    opts, paths = {}, []
    while args:
        a = args.pop(0)
        if a in ("--eval", "--json"):
            opts[a] = True
        elif a in ("--data", "--eval-ctx", "--eval-tokens", "--seed", "--export", "--rope-scale", "--rope-factor", "--rows") or \
                a[2:] in ROPE_EVAL_OPTIONS:
            if not args:
                return usage_error(f"{a} needs a value")
            opts[a] = args.pop(0)
        elif a.startswith("-"):
            return usage_error(f"unknown option '{a}'")
        else:
            paths.append(a)
    if not paths or ("--eval" in opts) == ("--export" in opts):
        return usage_error("give one or more models and either --eval or --export")
    try:
        if "--export" in opts:
            if len(paths) != 1:
                return usage_error("--export takes one model")
            cfg, flat = read_any(paths[0])
            conf = write_safetensors(opts["--export"], cfg, flat)
            print(f"wrote {opts['--export']} ({len(flat)} parameters) and {conf}")
            return 0
        _need_torch()
        torch.set_num_threads(1)
        try:
            lengths = [int(x) for x in opts["--eval-ctx"].split(",")] if "--eval-ctx" in opts else None
            eval_tokens = int(opts.get("--eval-tokens", 16384))
            seed = int(opts["--seed"]) if "--seed" in opts else None
            factor = float(opts["--rope-factor"]) if "--rope-factor" in opts else None
        except ValueError:
            return usage_error("--eval-ctx, --eval-tokens and --seed take integers, --rope-factor a number")
        if min(lengths or [1]) < 1 or eval_tokens < 1 or (seed is not None and seed < 0) or (factor is not None and factor < 1):
            return usage_error("--eval-ctx lengths and --eval-tokens are at least 1, --seed at least 0, --rope-factor at least 1")
        results = []
        given_rows = read_rows(opts["--rows"]) if "--rows" in opts else None
        for p in paths:
            rope_options = {k[2:]: v for k, v in opts.items() if k[2:] in ROPE_EVAL_OPTIONS}
            model, cfg = load(p, opts.get("--rope-scale"), factor, rope_options or None)
            if cfg["rand_pos"]:
                print(f"{p}: note: trained with --rand-pos {cfg['rand_pos']}; evaluated here at positions 0..L-1",
                      file=sys.stderr)
            spec = opts.get("--data", cfg.get("data"))
            rows = given_rows
            if rows is None and (spec in (None, "cats") or spec.startswith("task:")):
                if cfg.get("data") is None:  # a safetensors file or a v1 checkpoint: no file for ./train to load
                    raise PelabFileError(f"{p}: a built-in corpus's windows come from ./train --load CK --eval-rows FILE; "
                                         "give --rows FILE")
                rows = builtin_rows(p, lengths or [cfg["ctx"]], eval_tokens, opts.get("--data"))
            for L in lengths or [cfg["ctx"]]:
                loss, n = evaluate(model, cfg, L, opts.get("--data"), eval_tokens, seed, rows)
                results.append({"model": p, "ctx": L, "loss": loss, "ppl": math.exp(loss), "tokens": n})
                if "--json" not in opts:
                    print(f"{p}: eval ctx={L} loss={loss:.8f} ppl={math.exp(loss):.4f} tokens={n}")
        if "--json" in opts:
            print(json.dumps(results))
        return 0
    except PelabFileError as e:
        print(f"pelab_lab.torch: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
