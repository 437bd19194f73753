"""The experiments of a config, as a list of runs.

A run is one ./train invocation: an experiment, an arm (one configuration of
the experiment), a seed. A *training* run writes its --json and a checkpoint;
an *evaluation* run loads the checkpoint of another arm of the same
experiment at the same seed (so the two are paired by construction) and
writes its --json. Everything the workflow, the tables and the checks need to
know about a run is here; nothing else lists experiments.
"""
from dataclasses import dataclass, field
import difflib
import os
import re
import shlex

from . import schema


class ConfigError(Exception):
    """A config the workflow refuses before any training (message says why)."""


@dataclass
class Run:
    exp: str
    arm: str                 # path-safe name of the configuration
    label: str               # its name in tables and figures
    seed: int
    options: list            # ./train options, without --seed/--json/--save/--threads
    reads: str = None        # arm whose checkpoint (same seed) this run reads
    reads_exp: str = None    # the experiment of that arm, when not this one (kind evaluate)
    read_flag: str = None    # --load (evaluation) or --init (fine-tune)
    uses_text: bool = False  # reads a text corpus: the experiment's `text`, else the config's
    text: str = None         # the experiment's own corpus (a name of `corpora` or a path), or None
    env: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)   # columns of the tidy table

    @property
    def trains(self):
        return self.read_flag != "--load"

    @property
    def key(self):
        return f"{self.exp}/{self.arm}/{self.seed}"

    @property
    def reads_ckpt(self):
        """The checkpoint this run reads, in the run folder, or None."""
        return f"runs/{self.reads_exp or self.exp}/{self.reads}/{self.seed}.ck" if self.reads else None


def slug(label):
    """'rope (pi)' -> 'rope.pi'; 'fine-tuned (ntk)' -> 'fine-tuned.ntk'."""
    s = re.sub(r"\s*\(([^)]*)\)", r".\1", label)
    s = s.replace("@", ".").replace(" ", "-")
    if not re.fullmatch(r"[A-Za-z0-9_.+=-]+", s):
        raise ConfigError(f"cannot name a run folder after '{label}'")
    return s


def parse_seeds(value, where):
    """'1-10' or [1, 2, 3] -> [1, ..., 10]; duplicates and non-integers refused."""
    if isinstance(value, int):
        seeds = [value]
    elif isinstance(value, str) and re.fullmatch(r"\d+-\d+", value.strip()):
        a, b = (int(x) for x in value.split("-"))
        if b < a:
            raise ConfigError(f"{where}: seeds '{value}' is an empty range")
        seeds = list(range(a, b + 1))
    elif isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) for s in value):
        seeds = list(value)
    else:
        raise ConfigError(f"{where}: seeds must be a list of integers or 'A-B', not {value!r}")
    dup = sorted({s for s in seeds if seeds.count(s) > 1})
    if dup:
        raise ConfigError(f"{where}: seed(s) {dup} given twice (a seed counted twice narrows the interval falsely)")
    if any(s < 0 for s in seeds):
        raise ConfigError(f"{where}: seeds must be ≥ 0")
    return seeds


def _split_args(value, where):
    if value is None:
        return []
    if not isinstance(value, str):
        raise ConfigError(f"{where}: args must be a string of ./train options")
    try:
        return shlex.split(value)
    except ValueError as e:   # an unbalanced quote
        raise ConfigError(f"{where}: args {value!r} cannot be split into words ({e})") from None


class Registry:
    """What ./train --list-pe says about the encodings."""

    def __init__(self, list_pe_text):
        self.kind, self.causal_only, self.rope_scales = {}, set(), {}
        for line in list_pe_text.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            name, kind = parts[0], parts[1]
            self.kind[name] = kind
            if "; causal only" in line:
                self.causal_only.add(name)
            m = re.search(r"--rope-scale (\S+)", line)
            if m:
                self.rope_scales[name] = [s for s in m.group(1).split("|") if s != "none"]
        for name, kind in list(self.kind.items()):   # a composite is causal only if a part is
            if kind == "composite" and any(p in self.causal_only for p in name.split("+")):
                self.causal_only.add(name)

    def single(self):
        return [n for n, k in self.kind.items() if k != "composite"]

    def every(self):
        return list(self.kind)


def _encodings(spec, reg, where):
    value = spec.get("encodings", "single")
    if value == "single":
        names = reg.single()
    elif value == "all":
        names = reg.every()
    elif isinstance(value, list) and value:
        names = [str(v) for v in value]
    else:
        raise ConfigError(f"{where}: encodings must be a list of names, 'single' or 'all', not {value!r}")
    unknown = [n for n in names + list(spec.get("exclude", [])) if n not in reg.kind]
    if unknown:
        raise ConfigError(f"{where}: unknown encoding(s) {unknown}; ./train --list-pe lists them")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{where}: encoding(s) {dup} listed twice")
    return [n for n in names if n not in spec.get("exclude", [])]


def _need(spec, key, where, kind=int, positive=True):
    if key not in spec:
        raise ConfigError(f"{where}: '{key}' is missing")
    value = spec[key]
    if isinstance(value, bool) or (kind is int and isinstance(value, float)):   # steps: 20.5 is not 20
        raise ConfigError(f"{where}: '{key}' must be a whole number, not {value!r}")
    try:
        v = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: '{key}' must be a {kind.__name__}, not {value!r}")
    if positive and v <= 0:
        raise ConfigError(f"{where}: '{key}' must be positive, not {spec[key]!r}")
    return v


def lengths_of(spec, where):
    L = _need(spec, "ctx", where)
    return [L * f for f in (1, 2, 4, 8, 16)]


def plan_order(name, spec, reg, seeds, args):
    modes = spec.get("modes", ["causal", "bidir"])
    bad = [m for m in modes if m not in ("causal", "bidir")]
    if bad:
        raise ConfigError(f"experiment {name}: unknown mode(s) {bad} (causal, bidir)")
    every = _need(spec, "eval_every", f"experiment {name}")
    cap = _need(spec, "cap", f"experiment {name}")
    solve = _need(spec, "solve_at", f"experiment {name}", float)
    if solve > 1:
        raise ConfigError(f"experiment {name}: 'solve_at' is an order_acc, at most 1, not {spec['solve_at']!r}")
    budget = ["--steps", str(cap), "--until-solved", str(solve), "--eval-every", str(every)]
    runs = []
    named = isinstance(spec.get("encodings"), list)   # 'single'/'all' leave out the pairs ./train refuses
    for pe in _encodings(spec, reg, f"experiment {name}"):
        for mode in modes:
            if mode == "bidir" and pe in reg.causal_only and not named:
                continue
            if mode == "bidir" and pe in reg.causal_only:
                raise ConfigError(f"experiment {name}: {pe} is causal only; ./train refuses --attn bidir with it "
                                  f"(take bidir out of its modes or the encoding out of the list)")
            for s in seeds:
                runs.append(Run(name, f"{pe}_{mode}", f"{pe} {mode}", s,
                                ["--pe", pe, "--attn", mode] + budget + args,
                                meta={"pe": pe, "attn": mode}))
    return runs


def plan_encodings(name, spec, reg, seeds, args):
    budget = ["--steps", str(_need(spec, "steps", f"experiment {name}")), "--until-solved", "0"]  # the same budget for all
    return [Run(name, pe, pe, s, ["--pe", pe] + budget + args, meta={"pe": pe})
            for pe in _encodings(spec, reg, f"experiment {name}") for s in seeds]


def plan_length(name, spec, reg, seeds, args):
    where = f"experiment {name}"
    lengths = ",".join(str(x) for x in lengths_of(spec, where))
    common = ["--data", "{text}", "--eval-ctx", lengths, "--eval-tokens", str(_need(spec, "eval_tokens", where))]
    train = ["--ctx", str(spec["ctx"]), "--steps", str(_need(spec, "steps", where)), "--lr", str(_need(spec, "lr", where, float))]
    runs = []
    scales = spec.get("rope_scales", [])
    for pe in _encodings(spec, reg, where):
        for s in seeds:
            runs.append(Run(name, pe, pe, s, ["--pe", pe] + train + common + args, uses_text=True, meta={"pe": pe, "scale": "none"}))
        for scale in scales:
            if scale not in reg.rope_scales.get(pe, []):
                continue
            for s in seeds:
                runs.append(Run(name, f"{pe}.{scale}", f"{pe} ({scale})", s, common + ["--rope-scale", scale],
                                reads=pe, read_flag="--load", uses_text=True, meta={"pe": pe, "scale": scale}))
    return runs


def _methods(spec, reg, where):
    """A fine-tuning experiment's RoPE extensions: [(method, its ./train options)]."""
    out = []
    for m in spec.get("methods", ["none", "pi", "ntk", "yarn"]):
        if m not in ["none"] + reg.rope_scales.get("rope", []):
            raise ConfigError(f"{where}: unknown method '{m}' (none, {', '.join(reg.rope_scales.get('rope', []))})")
        out.append((m, [] if m == "none" else ["--rope-scale", m]))
    return out


def plan_finetune(name, spec, reg, seeds, args):
    where = f"experiment {name}"
    lengths = ",".join(str(x) for x in lengths_of(spec, where))
    common = ["--data", "{text}", "--eval-ctx", lengths, "--eval-tokens", str(_need(spec, "eval_tokens", where))]
    ft_steps = _need(spec, "ft_steps", where)
    runs = []
    for s in seeds:
        runs.append(Run(name, "base", "base", s, ["--pe", "rope", "--ctx", str(spec["ctx"]), "--steps", str(_need(spec, "steps", where))]
                        + common + args, uses_text=True, meta={"pe": "rope", "method": "none", "stage": "base"}))
    for m, scale in _methods(spec, reg, where):
        for s in seeds:
            if m != "none":
                runs.append(Run(name, f"base-eval.{m}", f"base-eval ({m})", s, common + scale, reads="base", read_flag="--load",
                                uses_text=True, meta={"pe": "rope", "method": m, "stage": "base-eval"}))
            runs.append(Run(name, f"fine-tuned.{m}", f"fine-tuned ({m})", s,
                            ["--ctx", str(_need(spec, "long", where)), "--steps", str(ft_steps), "--lr", str(_need(spec, "ft_lr", where, float)),
                             "--warmup", str(ft_steps // 10)] + scale + common, reads="base", read_flag="--init",
                            uses_text=True, meta={"pe": "rope", "method": m, "stage": "fine-tuned"}))
    return runs


def _task_size(spec, key, where):
    """'A:B' -> B, checked."""
    v = str(spec.get(key, ""))
    m = re.fullmatch(r"(\d+):(\d+)", v)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ConfigError(f"{where}: '{key}' must be sizes A:B with 1 <= A <= B, not {spec.get(key)!r}")
    return int(m.group(2))


def plan_finetune_task(name, spec, reg, seeds, args):
    """RoPE's context extension on a task (passkey retrieval): a base model
    trained on `task_len` sizes; its checkpoint evaluated with each extension
    (base-eval); and fine-tuned (--init) on `long_len` sizes for each of
    `ft_steps` budgets with each method. Every run is scored on the same
    `test_len` sizes, longer than both."""
    where = f"experiment {name}"
    task = spec.get("task", "passkey")
    if task != "passkey":
        raise ConfigError(f"{where}: finetune_task is made for task passkey (its length: n + 14 tokens)")
    base_hi, long_hi = _task_size(spec, "task_len", where), _task_size(spec, "long_len", where)
    test = str(spec.get("test_len", ""))
    if not re.fullmatch(r"\d+:\d+(,\d+:\d+)*", test) or min(int(r.split(":")[0]) for r in test.split(",")) <= long_hi:
        raise ConfigError(f"{where}: test_len must be ranges A:B,… of sizes above long_len's {long_hi}")
    budgets = spec.get("ft_steps")
    if not isinstance(budgets, list) or not budgets or not all(isinstance(b, int) and b > 0 for b in budgets):
        raise ConfigError(f"{where}: ft_steps must be a list of positive step counts, not {budgets!r}")
    common = ["--data", f"task:{task}", "--test-len", test, "--task-eval", str(_need(spec, "task_eval", where))]
    runs = []
    for s in seeds:
        runs.append(Run(name, "base", "base", s, ["--pe", "rope", "--task-len", spec["task_len"], "--steps",
                                                   str(_need(spec, "steps", where))] + common + args,
                        meta={"pe": "base", "task": task, "method": "none", "stage": "base"}))
    for m, scale in _methods(spec, reg, where):
        for s in seeds:
            if m != "none":
                runs.append(Run(name, f"base-eval.{m}", f"base-eval ({m})", s, common + scale, reads="base",
                                read_flag="--load", meta={"pe": f"base-eval ({m})", "task": task, "method": m,
                                                          "stage": "base-eval"}))
            for b in budgets:
                runs.append(Run(name, f"fine-tuned-{b}.{m}", f"fine-tuned {b} ({m})", s,
                                ["--task-len", spec["long_len"], "--ctx", str(long_hi + 14), "--steps", str(b),
                                 "--lr", str(_need(spec, "ft_lr", where, float)), "--warmup", str(max(1, b // 10))]
                                + scale + common, reads="base", read_flag="--init",
                                meta={"pe": f"fine-tuned {b} ({m})", "task": task, "method": m, "stage": f"fine-tuned {b}"}))
    return runs


def plan_sweep(name, spec, reg, seeds, args):
    where = f"experiment {name}"
    L = _need(spec, "ctx", where)
    common = ["--data", "{text}", "--ctx", str(L), "--steps", str(_need(spec, "steps", where)), "--lr", str(_need(spec, "lr", where, float)),
              "--eval-ctx", f"{L},{8 * L}", "--eval-tokens", str(_need(spec, "eval_tokens", where))]
    runs = []
    for sweep, sw in (spec.get("sweeps") or {}).items():
        if not isinstance(sw, dict) or sw.get("pe") not in reg.kind or not str(sw.get("option", "")).startswith("--"):
            raise ConfigError(f"{where}: sweep '{sweep}' needs pe (a known encoding), option (--…) and values")
        for v in sw.get("values", []):
            for s in seeds:
                runs.append(Run(name, f"{slug(sweep)}.{v}", f"{sweep} = {v}", s, ["--pe", sw["pe"], sw["option"], str(v)] + common + args,
                                uses_text=True, meta={"pe": sw["pe"], "sweep": sweep, "value": str(v)}))
    return runs


def non_embedding_params(d, layers):
    """A block's matrices (attention's four d×d, the MLP's two d×4d), the
    count scaling laws use (Kaplan et al. 2020): 12·d²·layers."""
    return 12 * d * d * layers


def scale_budget(spec, size, smallest, where):
    """(steps, lr) of a size by the ladder's stated rules: tokens grow as
    (N / N_smallest)^tokens_exponent from `tokens` at the smallest size, in
    steps of `tokens_per_step`; lr = lr × (64 / d)^lr_exponent."""
    tokens = _need(spec, "tokens", where, float)
    per_step = _need(spec, "tokens_per_step", where)
    t_exp = float(spec.get("tokens_exponent", 1 / 3))
    lr_exp = float(spec.get("lr_exponent", 0.5))
    n = non_embedding_params(size["d_model"], size["layers"])
    steps = max(1, round(tokens * (n / smallest) ** t_exp / per_step))
    lr = _need(spec, "lr", where, float) * (64 / size["d_model"]) ** lr_exp
    return steps, float(f"{lr:.4g}")


def plan_scale(name, spec, reg, seeds, args):
    """The model-size ladder: every size × training length × encoding × seed,
    each run trained on the experiment's corpus and scored at the
    `eval_factors` multiples of its training length, with and without a
    sliding window of the training length (one run does both)."""
    where = f"experiment {name}"
    sizes = spec.get("sizes")
    if not isinstance(sizes, dict) or not sizes:
        raise ConfigError(f"{where}: 'sizes' must map a size's name to d_model, layers, heads")
    per_step = _need(spec, "tokens_per_step", where)
    factors = spec.get("eval_factors", [1, 4, 16])
    lengths = spec.get("ctx", [64])
    checked = {}
    for sname, sz in sizes.items():
        w = f"{where}, size {sname}"
        if not isinstance(sz, dict):
            raise ConfigError(f"{w}: give d_model, layers and heads")
        checked[sname] = {k: _need(sz, k, w) for k in ("d_model", "layers", "heads")}
        if checked[sname]["d_model"] % checked[sname]["heads"]:
            raise ConfigError(f"{w}: heads must divide d_model")
    smallest = min(non_embedding_params(s["d_model"], s["layers"]) for s in checked.values())
    only = spec.get("only_sizes")   # a ladder published a complete size at a time: the budgets stay the whole ladder's
    if only is not None and (not isinstance(only, list) or set(only) - set(sizes)):
        raise ConfigError(f"{where}: only_sizes must list sizes of 'sizes' ({', '.join(sizes)}), not {only!r}")
    runs = []
    for sname, sz in sizes.items():
        if only is not None and sname not in only:
            continue
        size = checked[sname]
        steps, lr = scale_budget(spec, size, smallest, f"{where}, size {sname}")
        size_seeds = parse_seeds(sz["seeds"], f"{where}, size {sname}") if "seeds" in sz else seeds
        for L in lengths:
            if L != lengths[0] and not sz.get("long"):
                continue   # the longer training lengths only for the sizes marked long
            if per_step % L:
                raise ConfigError(f"{where}: tokens_per_step {per_step} is not a multiple of ctx {L}")
            model = ["--d-model", str(size["d_model"]), "--layers", str(size["layers"]), "--heads", str(size["heads"])]
            train = ["--ctx", str(L), "--batch", str(per_step // L), "--steps", str(steps), "--lr", str(lr)]
            evals = ["--eval-ctx", ",".join(str(L * f) for f in factors), "--eval-window", str(L),
                     "--eval-tokens", str(_need(spec, "eval_tokens", where))]
            for pe in _encodings(spec, reg, where):
                for s in size_seeds:
                    runs.append(Run(name, f"{sname}.c{L}.{pe}", f"{pe} {sname} ctx {L}", s,
                                    ["--pe", pe, "--data", "{text}"] + model + train + evals + args, uses_text=True,
                                    meta={"pe": pe, "size": sname, "params": non_embedding_params(size["d_model"], size["layers"]),
                                          "d_model": size["d_model"], "layers": size["layers"], "train_ctx": L,
                                          "steps": steps, "tokens": steps * per_step}))
    return runs


def _per_task(spec, key, tasks, where, parse):
    """A tasks experiment's setting given once for every task or as {task: value}.
    A value for a task the experiment does not train is passed over: a config
    file that trains fewer tasks merges into the base's mapping key by key, so
    it cannot take the others out (a misspelt task that is trained still has
    no value, which is refused)."""
    v = spec.get(key)
    if not isinstance(v, dict):
        return {t: parse(v) for t in tasks}
    missing = [t for t in tasks if t not in v]
    if missing:
        raise ConfigError(f"{where}: '{key}' has no value for task(s) {missing}")
    return {t: parse(v[t]) for t in tasks}


def plan_tasks(name, spec, reg, seeds, args):
    """Every task × encoding × seed. `steps` (one budget, or {task: steps})
    is a cap when `until_solved` (a task_acc) is given: a run stops at the
    first --eval-every point where the training sizes are learned.
    `task_args` ({task: options}) sets a task's own model or sizes. Kind
    task_budget is the same plan with until_solved required: its table says
    by which step nine in ten seeds had learned each task."""
    where = f"experiment {name}"
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) for t in tasks):
        raise ConfigError(f"{where}: tasks must be a list of task names, not {tasks!r}")
    steps = _per_task(spec, "steps", tasks, where, lambda v: _need({"steps": v}, "steps", where))
    own = spec.get("task_args") or {}
    if not isinstance(own, dict) or any(t not in tasks for t in own):
        raise ConfigError(f"{where}: task_args must map tasks of the experiment to ./train options, not {own!r}")
    extra = {t: _split_args(own.get(t), where) for t in tasks}
    n_eval = _need(spec, "task_eval", where)
    solve = []
    if spec["kind"] == "task_budget" or "until_solved" in spec:
        acc = _need(spec, "until_solved", where, float)
        if acc > 1:
            raise ConfigError(f"{where}: 'until_solved' is a task_acc, at most 1, not {spec['until_solved']!r}")
        solve = ["--until-solved", str(acc), "--eval-every", str(_need(spec, "eval_every", where))]
    runs = []
    for task in tasks:
        for pe in _encodings(spec, reg, where):
            for s in seeds:
                runs.append(Run(name, f"{task}.{pe}", f"{task} {pe}", s,
                                ["--data", f"task:{task}", "--pe", pe, "--steps", str(steps[task])] + solve
                                + ["--task-eval", str(n_eval)] + extra[task] + args,
                                meta={"pe": pe, "task": task, "cap": steps[task]}))
    return runs


def plan_evaluate(name, spec, reg, seeds, args, planned, config):
    """Evaluations of the checkpoints another experiment (`from`) trains: the
    same seeds, so paired with its runs by construction. Kind evaluate reads
    a length or an order experiment: `eval_ctx` lengths (an order
    experiment's: its training length when not given), `window`
    (--eval-window) and args (e.g. --attn-stats, --probe-positions). Kind
    evaluate_tasks reads a tasks experiment (`tasks`: which of its tasks):
    `task_eval` instances per size range, and `variants` ({name: options},
    e.g. {sparse: --task-ignore 0.98}), each an arm 'TASK.PE.NAME' whose pe
    column reads 'PE (NAME)'."""
    where = f"experiment {name}"
    src = spec.get("from")
    exps = config.get("experiments") or {}
    kind = (exps.get(src) or {}).get("kind") if isinstance(exps.get(src), dict) else None
    reads = ("tasks",) if spec["kind"] == "evaluate_tasks" else ("length", "order")
    if kind not in reads:
        raise ConfigError(f"{where}: 'from' must name a {' or '.join(reads)} experiment of the config, not {src!r}")
    trained = {r.arm: r for r in planned[src] if r.trains}
    from_seeds = sorted({r.seed for r in planned[src] if r.trains})
    seeds = from_seeds if "seeds" not in spec else seeds
    missing = [s for s in seeds if s not in from_seeds]
    if missing:
        raise ConfigError(f"{where}: seed(s) {missing} are not trained by {src} (its seeds: {from_seeds})")
    names = _encodings({"encodings": spec.get("encodings", list(dict.fromkeys(r.meta['pe'] for r in trained.values()))),
                        "exclude": spec.get("exclude", [])}, reg, where)
    absent = [pe for pe in names if not any(r.meta["pe"] == pe for r in trained.values())]
    if absent:
        raise ConfigError(f"{where}: {src} does not train {absent}")
    if kind == "tasks":
        return _evaluate_tasks(name, spec, seeds, args, src, trained, names)
    lengths = spec.get("eval_ctx")
    if lengths is None and kind == "order":
        opts = []   # the length the checkpoint was trained at, on its own corpus (cats)
    elif not isinstance(lengths, list) or not lengths or not all(isinstance(L, int) and L > 0 for L in lengths):
        raise ConfigError(f"{where}: eval_ctx must be a list of positive lengths, not {lengths!r}")
    else:
        opts = ["--eval-ctx", ",".join(str(L) for L in lengths)]
    if kind == "length":
        opts = ["--data", "{text}"] + opts
    opts += ["--eval-tokens", str(_need(spec, "eval_tokens", where))]
    if "window" in spec:
        opts += ["--eval-window", str(_need(spec, "window", where))]
    return [Run(name, arm, r.label, s, opts + args, reads=arm, reads_exp=src, read_flag="--load",
                uses_text=kind == "length", meta=dict(r.meta))
            for arm, r in trained.items() if r.meta["pe"] in names for s in seeds]


def _evaluate_tasks(name, spec, seeds, args, src, trained, names):
    where = f"experiment {name}"
    tasks = spec.get("tasks") or list(dict.fromkeys(r.meta["task"] for r in trained.values()))
    absent = [t for t in tasks if not any(r.meta["task"] == t for r in trained.values())]
    if absent:
        raise ConfigError(f"{where}: {src} does not train the task(s) {absent}")
    variants = spec.get("variants") or {"plain": ""}
    if not isinstance(variants, dict):
        raise ConfigError(f"{where}: variants must map a name to ./train options, not {variants!r}")
    n_eval = str(_need(spec, "task_eval", where))
    runs = []
    for arm, r in trained.items():
        if r.meta["pe"] not in names or r.meta["task"] not in tasks:
            continue
        for v, vargs in variants.items():
            if not re.fullmatch(r"[A-Za-z0-9_-]+", str(v)):
                raise ConfigError(f"{where}: variant name '{v}': letters, digits, _ and - only")
            opts = ["--data", f"task:{r.meta['task']}", "--task-eval", n_eval] + _split_args(vargs, where) + args
            for s in seeds:
                runs.append(Run(name, f"{arm}.{v}", f"{r.label} ({v})", s, opts, reads=arm, reads_exp=src,
                                read_flag="--load", meta={**r.meta, "pe": f"{r.meta['pe']} ({v})", "variant": v}))
    return runs


def plan_rope_decay(name, spec, reg, seeds, args):
    """RoFormer's bound, from the formula: no runs."""
    where = f"experiment {name}"
    for key in ("head_sizes", "bases"):
        v = spec.get(key)
        if not isinstance(v, list) or not v or not all(isinstance(x, (int, float)) and x > 0 for x in v):
            raise ConfigError(f"{where}: '{key}' must be a list of positive numbers, not {v!r}")
    if any(int(h) % 2 for h in spec["head_sizes"]):
        raise ConfigError(f"{where}: head sizes must be even (RoPE rotates pairs)")
    _need(spec, "longest", where)
    return []


def cpu_has(flag):
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and flag in line.split() for line in f)
    except OSError:
        return False


# OpenBLAS kernels a config may pin, and the CPU flag each needs.
BLAS_KERNELS = {"Haswell": "avx2", "Zen": "avx2", "SkylakeX": "avx512f", "Cooperlake": "avx512_bf16",
                "Sandybridge": "avx", "Nehalem": "sse4_2", "Prescott": "sse3"}


def blas_env(config):
    """{OPENBLAS_CORETYPE: kernel} for config's blas_kernel ('' or absent:
    OpenBLAS's own pick). The kernel decides the last bits of every number,
    and on cats which side of a plateau a run ends on, so pinning it makes a
    run folder's BLAS the same on every machine that can run it (the build
    still differs between CPUs: docs/experiments.md)."""
    k = config.get("blas_kernel") or ""
    if not k:
        return {}
    if k not in BLAS_KERNELS:
        raise ConfigError(f"blas_kernel '{k}' is not one of {', '.join(BLAS_KERNELS)} (or '' for OpenBLAS's own pick)")
    if not cpu_has(BLAS_KERNELS[k]):
        raise ConfigError(f"blas_kernel {k} needs a CPU with {BLAS_KERNELS[k]}, which this one lacks; "
                          f"give --config blas_kernel='' (results then differ in the last bits from results/)")
    return {"OPENBLAS_CORETYPE": k}


def gemm_options(config):
    """['--gemm', E] for config's gemm ('' or absent: ./train's default,
    auto). Like the BLAS kernel, the matrix engine decides the last bits of
    every number, and auto's pick follows the CPU; results/ were made with
    OpenBLAS."""
    g = config.get("gemm") or ""
    if not g:
        return []
    engines = schema.engines()   # ./train --list-gemm: the engine list is the binary's
    if g not in engines:
        raise ConfigError(f"gemm '{g}' is not one of {', '.join(engines)} (or '' for ./train's default)")
    return ["--gemm", str(g)]


def kernel_of(env):
    """The OpenBLAS kernel a run with this env pins, else the environment's."""
    return env.get("OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE", ""))


def _unknown(key, known, where):
    near = difflib.get_close_matches(str(key), sorted(known), n=1)
    raise ConfigError(f"{where}: unknown key '{key}'" + (f" (did you mean '{near[0]}'?)" if near else "") +
                      f"; the keys are {', '.join(sorted(known))}")


_SHAPE = {"int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
          "num": (lambda v: isinstance(v, (int, float, str)) and not isinstance(v, bool), "a number"),
          "str": (lambda v: isinstance(v, str), "a string"),
          "bool": (lambda v: isinstance(v, bool), "true or false"),
          "dict": (lambda v: isinstance(v, dict), "a mapping"),
          "list[int]": (lambda v: isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v),
                        "a list of integers"),
          "list[str]": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of names")}


def _typed(value, shapes, key, where):
    if not any(_SHAPE[s][0](value) for s in shapes):
        raise ConfigError(f"{where}: '{key}' must be {' or '.join(_SHAPE[s][1] for s in shapes)}, not {value!r}")


def check_keys(config):
    """The config against its declared schema (kinds.py: TOP_KEYS,
    COMMON_KEYS, each kind's keys): an unknown key anywhere, or a common
    key of the wrong type, is refused before any run."""
    from .kinds import COMMON_KEYS, KEY_SHAPES, KINDS, TOP_KEYS
    for k, v in config.items():
        if k not in TOP_KEYS:
            _unknown(k, TOP_KEYS, "the config")
        _typed(v, TOP_KEYS[k], k, "the config")
    for name, spec in (config.get("experiments") or {}).items():
        if not isinstance(spec, dict) or not isinstance(spec.get("kind"), str) or spec["kind"] not in KINDS:
            raise ConfigError(f"experiment {name}: kind must be one of {sorted(KINDS)}")
        known = set(COMMON_KEYS) | set(KINDS[spec["kind"]].keys)
        for k, v in spec.items():
            if k not in known:
                _unknown(k, known, f"experiment {name} (kind {spec['kind']})")
            _typed(v, KEY_SHAPES[k], k, f"experiment {name}")


def check_args(args, where):
    """An experiment's args against ./train's option table (./train --help):
    every word an option ./train has, or the value of the one before it."""
    from . import schema
    table = schema.options()
    i = 0
    while i < len(args):
        a = args[i]
        name = a[2:].split("=", 1)[0] if a.startswith("--") else None
        if name is None:
            raise ConfigError(f"{where}: args: '{a}' is neither a ./train option nor the value of one")
        if name not in table:
            near = difflib.get_close_matches(name, sorted(table), n=1)
            raise ConfigError(f"{where}: args: ./train has no option --{name}" +
                              (f" (did you mean --{near[0]}?)" if near else "") + "; ./train --help lists them")
        if table[name] and "=" not in a:
            if i + 1 >= len(args):
                raise ConfigError(f"{where}: args: --{name} needs a value")
            i += 1
        i += 1


def plan(config, list_pe_text):
    """Every run of every experiment of config, checked; {exp: [Run]}.

    Raises ConfigError for anything ./train would refuse or the statistics
    would get wrong: unknown encodings, a mode an encoding refuses, duplicate
    seeds, missing budgets, an unknown experiment kind."""
    from .kinds import KINDS  # here: kinds imports this module
    check_keys(config)
    reg = Registry(list_pe_text)
    pinned = blas_env(config)
    engine = gemm_options(config)
    out = {}
    exps = config.get("experiments") or {}
    if not isinstance(exps, dict) or not exps:
        raise ConfigError("the config has no experiments")
    threads = config.get("threads", 1)
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ConfigError(f"threads must be a positive integer, not {threads!r}")
    # an evaluate experiment reads the runs of another: plan those first
    for name, spec in sorted(exps.items(), key=lambda kv: isinstance(kv[1], dict) and kv[1].get("kind") in ("evaluate", "evaluate_tasks")):
        if not re.fullmatch(r"[A-Za-z0-9_-]+", str(name)):
            raise ConfigError(f"experiment name '{name}': letters, digits, _ and - only")
        if not isinstance(spec, dict) or spec.get("kind") not in KINDS:
            raise ConfigError(f"experiment {name}: kind must be one of {sorted(KINDS)}")
        seeds = parse_seeds(spec.get("seeds", "1-3"), f"experiment {name}")
        args = _split_args(spec.get("args"), f"experiment {name}")
        check_args(args, f"experiment {name}")
        for a in args:
            if a in ("--seed", "--json", "--save", "--threads", "--load", "--init", "--resume", "--gemm"):
                raise ConfigError(f"experiment {name}: args may not set {a}; the workflow sets it per run")
        if spec["kind"] in ("evaluate", "evaluate_tasks"):
            runs = plan_evaluate(name, spec, reg, seeds, args, out, config)
        else:
            runs = KINDS[spec["kind"]].plan(name, spec, reg, seeds, args)
        env = {**pinned, **{str(k): str(v) for k, v in (spec.get("env") or {}).items()}}
        for r in runs:
            r.env = env
            r.options = r.options + (gemm_options(spec) if "gemm" in spec else engine)   # an experiment's own engine
            r.uses_text = r.uses_text or "{text}" in r.options   # args may name the corpus as {text}
            r.text = str(spec["text"]) if spec.get("text") and r.uses_text else None
            given = [o for o in r.options if isinstance(o, str) and o.startswith("--")]
            twice = sorted({o for o in given if given.count(o) > 1})
            if twice:   # ./train refuses an option given twice (the last used to win silently)
                raise ConfigError(f"experiment {name}: run {r.key} sets {', '.join(twice)} twice (the experiment "
                                  "sets it, and its args again); leave it out of args")
        keys = [r.key for r in runs]
        if len(set(keys)) != len(keys):
            raise ConfigError(f"experiment {name}: two runs share a name; make its arms distinct")
        out[name] = runs
    return {n: out[n] for n in exps if n in out}   # the config's order


def skipped(config, name):
    """Why experiment `name` is skipped on this machine, or None."""
    flag = (config["experiments"][name] or {}).get("needs_cpu_flag")
    if flag and not cpu_has(flag):
        return f"needs a CPU with {flag}, which this one lacks"
    return None
