"""The kinds of experiment: one registration each, with every part a kind
needs (docs/extending.md, "A kind of experiment"): how it plans its runs
(plan.py), the table and figures it makes (tables.py), the files those are,
and its report's title. A registration that lacks a part fails here, at
import, not when a report is made."""
from dataclasses import dataclass
from typing import Callable, Tuple

from . import plan, tables

FIGURE = ("png", "svg")  # a figure is written in both formats


@dataclass(frozen=True)
class Kind:
    name: str
    plan: Callable    # (experiment name, spec, encodings, seeds, args) -> [Run]
    table: Callable   # (experiment name, tidy table, stem, spec) -> the Markdown body
    files: Tuple[str, ...]    # suffixes of results/EXP: "" is EXP.md and EXP.csv; "_curve.csv"; a figure "fig" or "fig_acc"
    title: str

    def __post_init__(self):
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
         "Order: steps until the order task is solved, over seeds"),
    Kind("encodings", plan.plan_encodings, tables.encodings, ("",), "Every encoding with the defaults"),
    Kind("length", plan.plan_length, tables.length, _LENGTH_FILES,
         "Extrapolation: trained short, perplexity at longer contexts"),
    Kind("finetune", plan.plan_finetune, tables.length, _LENGTH_FILES, "RoPE context extension with fine-tuning"),
    Kind("sweep", plan.plan_sweep, tables.sweep, _LENGTH_FILES,
         "Sweeps: base frequencies, clipping distances, p-RoPE fractions"),
    Kind("tasks", plan.plan_tasks, tables.tasks, _TASK_FILES, "Tasks: trained short, tested long"),
    Kind("task_budget", plan.plan_tasks, tables.task_budget, ("", "_curve.csv", "fig", "fig_acc"),
         "Tasks learned first: the steps each task needs, from learning curves"),
    Kind("evaluate", plan.plan_evaluate, tables.evaluate, ("", "_attn.csv", "_probe.csv", "_baselines.csv", "fig"),
         "Context use: the same checkpoints with the context cut to a window, and where attention goes"),
    Kind("evaluate_tasks", plan.plan_evaluate, tables.tasks, _TASK_FILES,
         "Tasks again: the same checkpoints evaluated another way"),
    Kind("finetune_task", plan.plan_finetune_task, tables.tasks, _TASK_FILES,
         "Passkey retrieval: RoPE's context extension on a task"),
    Kind("rope_decay", plan.plan_rope_decay, tables.rope_decay, ("", "fig"), "RoPE's long-term decay, from its formula"),
    Kind("scale", plan.plan_scale, tables.scale, ("", "_fit.csv", "_baselines.csv", "fig"),
         "Scale: the encodings at several model sizes"),
]}


def outputs(kind, stem):
    """The files an experiment of this kind writes, its files starting with stem."""
    return KINDS[kind].outputs(stem)
