"""The kinds of experiment: one registration each, with every part a kind
needs (docs/extending.md, "A kind of experiment"): how it plans its runs
(plan.py), the table and figures it makes (tables.py), the files those are,
and its report's title. A registration that lacks a part fails here, at
import, not when a report is made."""
from dataclasses import dataclass
from typing import Callable, Tuple

from . import plan, tables

FIGURE = ("png", "svg")  # a figure is written in both formats


# The config's schema (lab/config.yaml; docs/workflow.md): the keys at its
# top, the keys every experiment may have, and (Kind.keys) the keys each
# kind reads, each with the shapes its value may take ("int", "num": a
# number or a number's text such as 3e-3, "str", "bool", "dict",
# "list[int]", "list[str]"). A key outside them, or a value of another
# shape, is refused before any run (plan.check_keys): a typo (`seedz`,
# `threds`) is not silently ignored. What a value must be beyond its shape
# (positive, a known encoding, …) is checked where it is read.
TOP_KEYS = {"text": ("str",), "corpora": ("dict",), "threads": ("int",), "blas_kernel": ("str",), "gemm": ("str",),
            "experiments": ("dict",), "quick": ("bool",)}
COMMON_KEYS = {"kind": ("str",), "seeds": ("int", "str", "list[int]"), "args": ("str",), "env": ("dict",),
               "gemm": ("str",), "text": ("str",), "title": ("str",), "needs_cpu_flag": ("str",),
               "pictures": ("list[str]",), "records": ("bool",)}
KEY_SHAPES = {**COMMON_KEYS,
              "encodings": ("str", "list[str]"), "exclude": ("list[str]",), "modes": ("list[str]",), "cap": ("int",),
              "eval_every": ("int",), "solve_at": ("num",), "steps": ("int", "dict"), "ctx": ("int", "list[int]"),
              "eval_tokens": ("int",), "lr": ("num",), "rope_scales": ("list[str]",), "methods": ("list[str]",),
              "ft_lr": ("num",), "ft_steps": ("int", "list[int]"), "long": ("int",), "long_len": ("str",),
              "task": ("str",), "task_eval": ("int",), "task_len": ("str",), "test_len": ("str",), "sweeps": ("dict",),
              "task_args": ("dict",), "tasks": ("list[str]", "dict"), "until_solved": ("num",), "from": ("str",),
              "eval_ctx": ("list[int]",), "window": ("int",), "variants": ("dict",), "head_sizes": ("list[int]",),
              "longest": ("int",), "bases": ("list[int]",), "train_ctx": ("int",), "eval_factors": ("list[int]",),
              "only_sizes": ("list[str]",), "sizes": ("dict",), "tokens_per_step": ("int",), "lr_exponent": ("num",),
              "tokens": ("int", "str"), "tokens_exponent": ("num",)}
_ENC = ("encodings", "exclude")
_TASKS = _ENC + ("eval_every", "steps", "task_args", "task_eval", "tasks", "until_solved")


@dataclass(frozen=True)
class Kind:
    name: str
    plan: Callable    # (experiment name, spec, encodings, seeds, args) -> [Run]
    table: Callable   # (experiment name, tidy table, stem, spec) -> the Markdown body
    files: Tuple[str, ...]    # suffixes of results/EXP: "" is EXP.md and EXP.csv; "_curve.csv"; a figure "fig" or "fig_acc"
    title: str
    keys: Tuple[str, ...] = ()   # the experiment keys this kind reads, beyond COMMON_KEYS

    def __post_init__(self):
        untyped = [k for k in self.keys if k not in KEY_SHAPES]
        if untyped:
            raise TypeError(f"kind {self.name}: keys without a declared shape (KEY_SHAPES): {untyped}")
        for part in ("plan", "table"):
            if not callable(getattr(self, part)):
                raise TypeError(f"kind {self.name}: its {part} is not a function")
        if not self.files or not self.title:
            raise TypeError(f"kind {self.name}: it names no files or no title")

    def outputs(self, stem):
        """The files the table builder writes for an experiment whose files start with stem."""
        out = []
        for f in self.files:
            if f == "":
                out += [f"{stem}.md", f"{stem}.csv"]
            elif f.startswith("fig"):
                out += [f"{stem}{f[3:]}.{ext}" for ext in FIGURE]
            else:
                out.append(f"{stem}{f}")
        return out


_TASK_FILES = ("", "fig", "fig_length")
_LENGTH_FILES = ("", "_baselines.csv", "fig")
KINDS = {k.name: k for k in [
    Kind("order", plan.plan_order, tables.order, ("", "_curve.csv", "fig", "fig_acc"),
         "Order: steps until the order task is solved, over seeds", _ENC + ("modes", "cap", "eval_every", "solve_at")),
    Kind("encodings", plan.plan_encodings, tables.encodings, ("",), "Every encoding with the defaults", _ENC + ("steps",)),
    Kind("length", plan.plan_length, tables.length, _LENGTH_FILES,
         "Extrapolation: trained short, perplexity at longer contexts",
         _ENC + ("ctx", "eval_tokens", "lr", "rope_scales", "steps")),
    Kind("finetune", plan.plan_finetune, tables.length, _LENGTH_FILES, "RoPE context extension with fine-tuning",
         ("methods", "ctx", "eval_tokens", "ft_lr", "ft_steps", "long", "steps")),
    Kind("sweep", plan.plan_sweep, tables.sweep, _LENGTH_FILES,
         "Sweeps: base frequencies, clipping distances, p-RoPE fractions", ("ctx", "eval_tokens", "lr", "steps", "sweeps")),
    Kind("tasks", plan.plan_tasks, tables.tasks, _TASK_FILES, "Tasks: trained short, tested long", _TASKS),
    Kind("task_budget", plan.plan_tasks, tables.task_budget, ("", "_curve.csv", "fig", "fig_acc"),
         "Tasks learned first: the steps each task needs, from learning curves", _TASKS),
    Kind("evaluate", plan.plan_evaluate, tables.evaluate, ("", "_attn.csv", "_probe.csv", "_baselines.csv", "fig"),
         "Context use: the same checkpoints with the context cut to a window, and where attention goes",
         _ENC + ("from", "eval_ctx", "eval_tokens", "window")),
    Kind("evaluate_tasks", plan.plan_evaluate, tables.tasks, _TASK_FILES,
         "Tasks again: the same checkpoints evaluated another way", _ENC + ("from", "task_eval", "tasks", "variants")),
    Kind("finetune_task", plan.plan_finetune_task, tables.tasks, _TASK_FILES,
         "Passkey retrieval: RoPE's context extension on a task",
         ("methods", "ft_lr", "ft_steps", "long_len", "steps", "task", "task_eval", "task_len", "test_len")),
    Kind("rope_decay", plan.plan_rope_decay, tables.rope_decay, ("", "fig"), "RoPE's long-term decay, from its formula",
         ("head_sizes", "longest", "bases", "train_ctx")),
    Kind("scale", plan.plan_scale, tables.scale, ("", "_fit.csv", "_baselines.csv", "fig"),
         "Scale: the encodings at several model sizes",
         _ENC + ("ctx", "eval_factors", "eval_tokens", "only_sizes", "sizes", "tokens_per_step", "lr", "lr_exponent",
                 "tokens", "tokens_exponent")),
]}


def outputs(kind, stem):
    """The files an experiment of this kind writes, its files starting with stem."""
    return KINDS[kind].outputs(stem)
