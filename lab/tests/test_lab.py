"""Unit tests of the lab's Python: the plan's checks, the statistics against
hand computations and statsmodels, the tidy tables' missing values, the
comparison's refusal to pool. Run: python3 -m unittest discover -s lab/tests -t lab"""
import json
import math
import tempfile
import unittest
from pathlib import Path

import numpy as np
import pandas as pd
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from pelab_lab import cli, plan, stats
from pelab_lab.runs import tidy

LIST_PE = """none               none      no position information (NoPE)
sinusoidal         absolute  fixed sines
learned            absolute  a trained table
rope               relative  rotated; --rope-base [10000], --rope-scale none|pi|ntk|yarn [none], --rope-factor [x]
alibi              relative  a fixed linear bias
xpos               relative  RoPE with decay; causal only; --xpos-scale-base [512]
learned+rope       composite one absolute and one relative encoding
learned+xpos       composite one absolute and one relative encoding
"""


def cfg(**exps):
    return {"threads": 1, "experiments": exps}


class Plan(unittest.TestCase):
    def test_duplicate_seeds_refused(self):
        with self.assertRaisesRegex(plan.ConfigError, "given twice"):
            plan.plan(cfg(e={"kind": "encodings", "steps": 10, "encodings": ["rope"], "seeds": [1, 1]}), LIST_PE)

    def test_seed_range(self):
        self.assertEqual(plan.parse_seeds("2-4", "x"), [2, 3, 4])
        for bad in ("4-2", "a", [], [1.5], [True]):
            with self.assertRaises(plan.ConfigError):
                plan.parse_seeds(bad, "x")

    def test_unknown_encoding_refused(self):
        with self.assertRaisesRegex(plan.ConfigError, "unknown encoding"):
            plan.plan(cfg(e={"kind": "encodings", "steps": 10, "encodings": ["ropee"]}), LIST_PE)

    def test_named_bidir_for_causal_only_refused_but_single_leaves_it_out(self):
        with self.assertRaisesRegex(plan.ConfigError, "causal only"):
            plan.plan(cfg(e={"kind": "order", "encodings": ["xpos"], "modes": ["bidir"], "eval_every": 10, "cap": 100, "solve_at": 0.99}), LIST_PE)
        runs = plan.plan(cfg(e={"kind": "order", "encodings": "all", "seeds": [1], "eval_every": 10, "cap": 100, "solve_at": 0.99}), LIST_PE)["e"]
        arms = {r.arm for r in runs}
        self.assertIn("xpos_causal", arms)
        self.assertNotIn("xpos_bidir", arms)
        self.assertNotIn("learned+xpos_bidir", arms)
        self.assertIn("learned+rope_bidir", arms)

    def test_blas_kernel_pinned_for_every_run_and_overridden_by_an_experiment(self):
        c = cfg(a={"kind": "encodings", "steps": 10, "encodings": ["rope"], "seeds": [1]},
                b={"kind": "encodings", "steps": 10, "encodings": ["rope"], "seeds": [1], "env": {"OPENBLAS_CORETYPE": "SkylakeX"}})
        c["blas_kernel"] = "Nehalem"   # sse4_2: every x86-64 machine this runs on has it
        p = plan.plan(c, LIST_PE)
        self.assertEqual(p["a"][0].env, {"OPENBLAS_CORETYPE": "Nehalem"})
        self.assertEqual(p["b"][0].env, {"OPENBLAS_CORETYPE": "SkylakeX"})
        c["blas_kernel"] = ""
        self.assertEqual(plan.plan(c, LIST_PE)["a"][0].env, {})
        c["blas_kernel"] = "Skylake"
        with self.assertRaisesRegex(plan.ConfigError, "not one of"):
            plan.plan(c, LIST_PE)

    def test_workflow_options_refused_in_args(self):
        with self.assertRaisesRegex(plan.ConfigError, "may not set --save"):
            plan.plan(cfg(e={"kind": "encodings", "steps": 10, "encodings": ["rope"], "args": "--save x.ck"}), LIST_PE)

    def test_evaluations_read_the_same_seed_and_are_paired(self):
        runs = plan.plan(cfg(e={"kind": "length", "encodings": ["rope", "alibi"], "seeds": "1-2", "ctx": 16,
                                "steps": 5, "lr": 1e-3, "eval_tokens": 64, "rope_scales": ["pi"]}), LIST_PE)["e"]
        ev = [r for r in runs if not r.trains]
        self.assertEqual({(r.arm, r.reads, r.read_flag) for r in ev}, {("rope.pi", "rope", "--load")})
        self.assertEqual(sorted(r.seed for r in ev), [1, 2])
        trained = [r for r in runs if r.trains]
        self.assertTrue(all("--eval-ctx" in r.options and "16,32,64,128,256" in r.options for r in trained))

    def test_finetune_reads_base_with_init(self):
        runs = plan.plan(cfg(f={"kind": "finetune", "seeds": [3], "ctx": 16, "long": 64, "steps": 5, "ft_steps": 20,
                                "ft_lr": 1e-3, "eval_tokens": 64}), LIST_PE)["f"]
        ft = [r for r in runs if r.arm.startswith("fine-tuned")]
        self.assertEqual(len(ft), 4)
        self.assertTrue(all(r.reads == "base" and r.read_flag == "--init" and r.seed == 3 for r in ft))
        self.assertTrue(all(r.options[r.options.index("--warmup") + 1] == "2" for r in ft))

    def test_slug(self):
        self.assertEqual(plan.slug("fine-tuned (ntk)"), "fine-tuned.ntk")
        with self.assertRaises(plan.ConfigError):
            plan.slug("a/b")


class Stats(unittest.TestCase):
    def test_mean_ci_by_hand(self):
        e = stats.mean_ci([1.0, 2.0, 4.0])
        sd = math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)
        self.assertAlmostEqual(e.mean, 7 / 3)
        self.assertAlmostEqual(e.half, 4.302652729911275 * sd / math.sqrt(3), places=9)
        self.assertEqual(stats.mean_ci([5.0]).n, 1)
        self.assertTrue(math.isnan(stats.mean_ci([5.0]).lo))
        self.assertEqual(stats.mean_ci([math.nan, 1.0, 1.0]).n, 2)   # missing is not a value

    def test_clipped_to_bounds(self):
        e = stats.mean_ci([0.0, 1.0, 1.0], (0, 1))
        self.assertGreaterEqual(e.lo, 0)
        self.assertLessEqual(e.hi, 1)

    def test_paired_is_the_interval_of_differences(self):
        a, b = [1.0, 2.0, 3.0, 4.5], [0.5, 1.8, 2.4, 4.0]
        c = stats.paired(a, b)
        lo, hi = DescrStatsW(np.subtract(a, b)).tconfint_mean()
        self.assertAlmostEqual(c.lo, lo, places=10)
        self.assertAlmostEqual(c.hi, hi, places=10)
        self.assertEqual(c.verdict, "differ")
        # the same numbers unpaired: the seed-to-seed spread swamps the difference
        self.assertEqual(stats.welch(a, b).verdict, "not told apart")

    def test_welch_matches_statsmodels(self):
        a, b = [1.0, 2.0, 4.0, 3.5], [2.0, 2.5, 7.0]
        c = stats.welch(a, b)
        lo, hi = CompareMeans(DescrStatsW(a), DescrStatsW(b)).tconfint_diff(usevar="unequal")
        self.assertAlmostEqual(c.lo, lo, places=10)
        self.assertAlmostEqual(c.hi, hi, places=10)

    def test_welch_by_hand(self):
        # A = 1, 2, 3; B = 5, 6, 7.5: difference -4.1667, variances of the
        # means 1/3 and 0.5278 (se 0.9280), Welch-Satterthwaite df 3.806,
        # t(0.975, 3.806) = 2.8332 (a table's t(3) = 3.182 would be the
        # rounded-down, wider interval), half-width 2.6291
        c = stats.welch([1.0, 2.0, 3.0], [5.0, 6.0, 7.5])
        self.assertAlmostEqual(c.diff, -4.1667, places=4)
        self.assertAlmostEqual(c.lo, -6.7957, places=3)
        self.assertAlmostEqual(c.hi, -1.5376, places=3)
        self.assertEqual(c.verdict, "differ")
        self.assertEqual(stats.welch([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]).verdict, "not told apart")

    def test_detectable_effect_shrinks_with_n(self):
        m5, m20 = stats.min_detectable_paired(5, 1.0), stats.min_detectable_paired(20, 1.0)
        self.assertGreater(m5, m20)
        self.assertAlmostEqual(m20, 0.6604, places=2)   # d for n = 20, 80% power, two-sided 0.05

    def test_clopper_pearson(self):
        lo, hi = stats.solved_fraction(10, 10)
        self.assertEqual(hi, 1.0)
        self.assertAlmostEqual(lo, 0.69150, places=4)


def write_run(folder, name, config, **rest):
    p = Path(folder) / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"config": config, **rest}))
    return p


class Tidy(unittest.TestCase):
    def test_missing_metrics_are_missing_not_zero(self):
        with tempfile.TemporaryDirectory() as d:
            p = write_run(d, "a.json", {"pe": "rope", "data": "book.txt", "seed": 1, "ctx": 64},
                          train={"steps": 10}, eval=[{"ctx": 64, "loss": 1.0, "ppl": 2.718},
                                                      {"ctx": 128, "error": "refused"}])
            t = tidy([(p, {})])
            self.assertTrue(math.isnan(t["runs"]["order_acc"][0]))
            self.assertEqual(len(t["evals"]), 2)
            self.assertTrue(math.isnan(t["evals"]["ppl"][1]))
            self.assertEqual(t["evals"]["refused"][1], "refused")

    def test_solve_step_from_curve(self):
        with tempfile.TemporaryDirectory() as d:
            p = write_run(d, "a.json", {"pe": "rope", "data": "cats", "seed": 1}, order={"acc": 1.0, "n": 400},
                          curve=[{"step": 100, "order_acc": 0.5}, {"step": 200, "order_acc": 0.96},
                                 {"step": 300, "order_acc": 0.9}])
            self.assertEqual(tidy([(p, {})])["runs"]["solve_step"][0], 200)


class Accept(unittest.TestCase):
    def test_a_refusal_for_memory_is_not_a_result(self):
        from pelab_lab.runs import accept_main
        with tempfile.TemporaryDirectory() as d:
            mem = write_run(d, "m.json", {"pe": "rope"}, eval=[{"ctx": 64, "ppl": 2.0, "loss": 0.7},
                            {"ctx": 8192, "error": "evaluation at batch 1 x ctx 8192 needs about 900 MiB (activations), "
                                                   "more than the 500 MiB of memory available; evaluate a shorter length"}])
            pos = write_run(d, "p.json", {"pe": "learned"}, eval=[{"ctx": 128, "error": "--pe learned has no positions past 64"}])
            self.assertEqual(accept_main([str(mem)]), 3)
            self.assertEqual(accept_main([str(pos)]), 0)


class Compare(unittest.TestCase):
    def test_repeated_measures_are_not_pooled(self):
        df = pd.DataFrame({"seed": [1, 1, 2, 2], "eval_ctx": [64, 128, 64, 128], "ppl": [1, 2, 3, 4], "path": "x"})
        with self.assertRaises(SystemExit) as e:
            cli.one_per_seed(df, "ppl", "A", ["eval_ctx"])
        self.assertIn("--at eval_ctx=", str(e.exception))
        s = cli.one_per_seed(df[df["eval_ctx"] == 64], "ppl", "A", ["eval_ctx"])
        self.assertEqual(list(s), [1, 3])

    def test_a_number_selects_a_float_column_by_value(self):
        # a setting only some runs have (sin_base) is a float column with NaNs
        df = pd.DataFrame({"pe": ["sinusoidal", "sinusoidal", "rope"], "sin_base": [100.0, 100000.0, float("nan")],
                           "rel_clip": [16, 16, 2], "label": ["a", "b", "c"]})
        self.assertEqual(list(cli.select(df, {"sin_base": "100000"}, "A")["label"]), ["b"])
        self.assertEqual(list(cli.select(df, {"rel_clip": "2"}, "A")["label"]), ["c"])
        self.assertEqual(list(cli.select(df, {"pe": "rope"}, "A")["label"]), ["c"])

    def test_labels_from_a_workflow_folder(self):
        self.assertEqual(cli.labels_from_path("out/evals/ext/rope.pi/3.json")["arm"], "rope.pi")
        self.assertEqual(cli.labels_from_path("mine/run.json"), {})


if __name__ == "__main__":
    unittest.main()
