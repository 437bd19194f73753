"""Unit tests of the lab's Python: the plan's checks, the statistics against
hand computations and statsmodels, the tidy tables' missing values, the
comparison's refusal to pool. Run: python3 -m unittest discover -s lab/tests -t lab"""
import contextlib
import io
import json
import math
import tempfile
import unittest
from pathlib import Path

import numpy as np
import pandas as pd
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from pelab_lab import cli, decay, plan, stats
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

    def test_gemm_engine_pinned_for_every_run(self):
        c = cfg(a={"kind": "encodings", "steps": 10, "encodings": ["rope"], "seeds": [1]})
        self.assertNotIn("--gemm", plan.plan(c, LIST_PE)["a"][0].options)
        c["gemm"] = "openblas"
        self.assertEqual(plan.plan(c, LIST_PE)["a"][0].options[-2:], ["--gemm", "openblas"])
        c["gemm"] = "mkl"
        with self.assertRaisesRegex(plan.ConfigError, "not one of"):
            plan.plan(c, LIST_PE)
        c["gemm"] = ""
        c["experiments"]["a"]["args"] = "--gemm onednn"
        with self.assertRaisesRegex(plan.ConfigError, "may not set --gemm"):
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

    def test_evaluate_reads_another_experiments_checkpoints_at_its_seeds(self):
        ext = {"kind": "length", "encodings": ["rope", "alibi"], "seeds": "1-3", "ctx": 16, "steps": 5, "lr": 1e-3,
               "eval_tokens": 64, "rope_scales": ["pi"]}
        use = {"kind": "evaluate", "from": "ext", "eval_ctx": [16, 256], "window": 16, "eval_tokens": 64,
               "args": "--attn-stats"}
        p = plan.plan(cfg(use=use, ext=ext), LIST_PE)
        self.assertEqual(list(p), ["use", "ext"])   # the config's order, though ext is planned first
        runs = p["use"]
        self.assertEqual(sorted({r.seed for r in runs}), [1, 2, 3])
        self.assertEqual({r.arm for r in runs}, {"rope", "alibi"})   # trained arms only, not rope.pi
        r = next(r for r in runs if r.arm == "rope" and r.seed == 2)
        self.assertEqual((r.read_flag, r.reads_ckpt), ("--load", "runs/ext/rope/2.ck"))
        self.assertIn("--eval-window", r.options)
        self.assertIn("--attn-stats", r.options)
        for bad, msg in (({"from": "nope"}, "length or order experiment"), ({"seeds": [4]}, "not trained by ext"),
                         ({"encodings": ["xpos"]}, "does not train"), ({"eval_ctx": 16}, "eval_ctx.? must be")):
            with self.assertRaisesRegex(plan.ConfigError, msg):
                plan.plan(cfg(use={**use, **bad}, ext=ext), LIST_PE)

    def test_evaluate_tasks_reads_the_task_checkpoints_with_each_variant(self):
        tasks = {"kind": "tasks", "encodings": ["rope", "alibi"], "tasks": ["copy", "flipflop"], "seeds": "1-2",
                 "steps": 10, "task_eval": 20}
        dens = {"kind": "evaluate_tasks", "from": "t", "tasks": ["flipflop"], "task_eval": 50,
                "variants": {"sparse": "--task-ignore 0.98", "dense": "--task-ignore 0.1"}}
        runs = plan.plan(cfg(t=tasks, d=dens), LIST_PE)["d"]
        self.assertEqual(len(runs), 2 * 2 * 2)   # encodings × variants × seeds
        r = next(r for r in runs if r.arm == "flipflop.rope.sparse" and r.seed == 2)
        self.assertEqual(r.reads_ckpt, "runs/t/flipflop.rope/2.ck")
        self.assertEqual(r.meta["pe"], "rope (sparse)")
        self.assertIn("--task-ignore", r.options)
        self.assertEqual(r.options[:2], ["--data", "task:flipflop"])
        with self.assertRaisesRegex(plan.ConfigError, "does not train the task"):
            plan.plan(cfg(t=tasks, d={**dens, "tasks": ["sort"]}), LIST_PE)
        with self.assertRaisesRegex(plan.ConfigError, "tasks experiment"):
            plan.plan(cfg(t=tasks, d={**dens, "from": "x"}), LIST_PE)

    def test_task_budgets_per_task_until_solved_and_own_options(self):
        spec = {"kind": "tasks", "encodings": ["rope"], "tasks": ["copy", "parity"], "seeds": [1],
                "steps": {"copy": 3000, "parity": 8000}, "task_eval": 20, "until_solved": 0.95, "eval_every": 250,
                "task_args": {"parity": "--layers 4"}}
        runs = {r.meta["task"]: r for r in plan.plan(cfg(t=spec), LIST_PE)["t"]}
        # a budget for a task this experiment does not train (a base config's, merged key by key) is passed over
        fewer = plan.plan(cfg(t={**spec, "steps": {**spec["steps"], "sort": 5000}}), LIST_PE)["t"]
        self.assertEqual(sorted(r.meta["task"] for r in fewer), ["copy", "parity"])
        self.assertEqual(runs["copy"].options[:10], ["--data", "task:copy", "--pe", "rope", "--steps", "3000",
                                                     "--until-solved", "0.95", "--eval-every", "250"])
        self.assertEqual(runs["parity"].meta["cap"], 8000)
        self.assertEqual(runs["parity"].options[-2:], ["--layers", "4"])
        self.assertNotIn("--layers", runs["copy"].options)
        for bad, msg in (({"steps": {"copy": 10}}, "no value for task"), ({"steps": {"cpy": 1, "parity": 1}},
                         "no value for task.*copy"), ({"task_args": {"sort": "--layers 4"}}, "task_args must map"),
                         ({"until_solved": 2}, "at most 1"), ({"tasks": "copy"}, "list of task names|.tasks. must be a list of names")):
            with self.assertRaisesRegex(plan.ConfigError, msg):
                plan.plan(cfg(t={**spec, **bad}), LIST_PE)
        plain = plan.plan(cfg(t={k: v for k, v in spec.items() if k not in ("until_solved", "eval_every")}), LIST_PE)["t"]
        self.assertNotIn("--until-solved", plain[0].options)
        budget = {k: v for k, v in spec.items() if k != "until_solved"}
        with self.assertRaisesRegex(plan.ConfigError, "'until_solved' is missing"):   # a budget needs a solve rule
            plan.plan(cfg(t={**budget, "kind": "task_budget"}), LIST_PE)

    def test_passkey_finetunes_read_the_base_and_share_the_test_sizes(self):
        spec = {"kind": "finetune_task", "task": "passkey", "seeds": [1], "task_len": "1:32", "steps": 5,
                "long_len": "1:128", "ft_steps": [20, 200], "ft_lr": 1e-3, "test_len": "129:256", "task_eval": 10,
                "methods": ["none", "pi"]}
        runs = plan.plan(cfg(p=spec), LIST_PE)["p"]
        arms = sorted(r.arm for r in runs)
        self.assertEqual(arms, ["base", "base-eval.pi", "fine-tuned-20.none", "fine-tuned-20.pi", "fine-tuned-200.none",
                                "fine-tuned-200.pi"])
        ft = next(r for r in runs if r.arm == "fine-tuned-200.pi")
        self.assertEqual((ft.reads, ft.read_flag), ("base", "--init"))
        self.assertEqual(ft.options[ft.options.index("--ctx") + 1], "142")   # passkey: n + 14 tokens
        self.assertTrue(all(r.options[r.options.index("--test-len") + 1] == "129:256" for r in runs))
        with self.assertRaisesRegex(plan.ConfigError, "above long_len"):
            plan.plan(cfg(p={**spec, "test_len": "100:200"}), LIST_PE)

    def test_rope_decay_has_no_runs_and_checks_its_head_sizes(self):
        spec = {"kind": "rope_decay", "head_sizes": [16, 64], "bases": [100, 10000], "longest": 256}
        self.assertEqual(plan.plan(cfg(d=spec), LIST_PE)["d"], [])
        with self.assertRaisesRegex(plan.ConfigError, "even"):
            plan.plan(cfg(d={**spec, "head_sizes": [15]}), LIST_PE)
        with self.assertRaisesRegex(plan.ConfigError, "bases"):
            plan.plan(cfg(d={**spec, "bases": []}), LIST_PE)

    def test_slug(self):
        self.assertEqual(plan.slug("fine-tuned (ntk)"), "fine-tuned.ntk")
        with self.assertRaises(plan.ConfigError):
            plan.slug("a/b")


class Configs(unittest.TestCase):
    def test_files_merge_key_by_key_and_a_mapping_replaces_a_number(self):
        from pelab_lab import configs
        base = {"threads": 1, "experiments": {"tasks": {"steps": 2000, "seeds": "1-5", "tasks": ["copy", "sort"]}}}
        over = {"experiments": {"tasks": {"steps": {"copy": 5000}, "tasks": ["copy"]}, "mine": {"kind": "order"}}}
        got = configs.merge(base, over)
        self.assertEqual(got["experiments"]["tasks"], {"steps": {"copy": 5000}, "seeds": "1-5", "tasks": ["copy"]})
        self.assertEqual(got["experiments"]["mine"], {"kind": "order"})
        self.assertEqual(base["experiments"]["tasks"]["steps"], 2000)   # the inputs are left alone
        self.assertEqual(configs.merge({"steps": {"copy": 5000}}, {"steps": 3000}), {"steps": 3000})


class Stats(unittest.TestCase):
    def test_fit_at_by_hand(self):
        """The fitted line read at x0, with the interval of its mean there:
        exact on a straight line; wider the further x0 is from the data."""
        v, lo, hi = stats.fit_at([1, 2, 3, 4], [3, 5, 7, 9], 10)
        self.assertAlmostEqual(v, 21)
        self.assertAlmostEqual(lo, 21)
        x, y = [0, 1, 2, 3], [0.1, 0.9, 2.2, 2.8]
        near, far = stats.fit_at(x, y, 1.5), stats.fit_at(x, y, 30)
        self.assertLess(near[2] - near[1], far[2] - far[1])
        # by hand at the mean of x: the mean of y, ± t(0.975, 2) · s / sqrt(4)
        b = sum((a - 1.5) * (c - 1.5) for a, c in zip(x, y)) / 5.0
        s = math.sqrt(sum((c - (1.5 + b * (a - 1.5))) ** 2 for a, c in zip(x, y)) / 2)
        self.assertAlmostEqual(near[0], 1.5)
        self.assertAlmostEqual(near[2] - near[0], 4.302652729911275 * s / 2, places=9)
        self.assertTrue(math.isnan(stats.fit_at([1, 1, 1], [1, 2, 3], 2)[0]))

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
    """A run's --json with the given parts (and the top-level fields ./train always writes)."""
    p = Path(folder) / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"config": config, "given": [], "params": 1000, "train": {}, "eval": [], "pelab": {}, **rest}))
    return p


class TimeToSolve(unittest.TestCase):
    # ten runs, three unsolved at the cap of 20000
    T = [400, 500, 500, 1200, 20000, 20000, 900, 700, 3000, 20000]
    E = [1, 1, 1, 1, 0, 0, 1, 1, 1, 0]

    def test_fraction_solved_is_the_plain_fraction_with_one_cap(self):
        frac, lo, hi = stats.solved_by(self.T, self.E, [499, 500, 1000, 20000])
        self.assertEqual(list(frac), [0.1, 0.3, 0.5, 0.7])
        self.assertEqual((lo[3], hi[3]), stats.solved_fraction(7, 10))

    def test_kaplan_meier_matches_statsmodels_with_mixed_caps(self):
        from statsmodels.duration.survfunc import SurvfuncRight
        t, e = [400, 500, 5000, 1200, 2000, 20000], [1, 1, 0, 1, 1, 0]
        frac, _, _ = stats.solved_by(t, e, [1999, 2000])
        sf = SurvfuncRight(t, e)
        self.assertAlmostEqual(frac[1], 1 - sf.surv_prob[-1])
        self.assertAlmostEqual(frac[0], 0.5)

    def test_median_and_its_order_statistic_interval(self):
        med, lo, hi = stats.median_solve(self.T, self.E)
        # sorted: 400 500 500 700 900 1200 3000 ∞ ∞ ∞; the 5th is the median;
        # n = 10: the 2nd and 9th order statistics cover it with 97.9%
        self.assertEqual((med, lo), (900, 500))
        self.assertTrue(math.isinf(hi))

    def test_median_not_reached(self):
        med, _, _ = stats.median_solve([20000] * 8 + [300, 400], [0] * 8 + [1, 1])
        self.assertTrue(math.isinf(med))


class Budget(unittest.TestCase):
    def test_step_by_which_nine_in_ten_had_solved(self):
        t = [100, 200, 300, 400, 500, 600, 700, 800, 900, 8000]
        self.assertEqual(stats.step_by_share(t, [1] * 9 + [0], 0.9), 900)
        self.assertEqual(stats.step_by_share(t, [1] * 8 + [0, 0], 0.9), math.inf)
        self.assertEqual(stats.step_by_share(t[:5], [1] * 5, 0.9), 500)   # 90% of 5 is all 5
        self.assertTrue(math.isnan(stats.step_by_share([], [], 0.9)))

    def test_a_fixed_budget_is_met_by_nine_seeds_in_ten_of_the_best_encoding(self):
        from pelab_lab import tables
        rows = []
        for pe, learned in (("rope", 9), ("alibi", 10)):
            for seed in range(1, 11):
                rows.append({"task": "copy", "pe": pe, "seed": seed, "range": 0, "path": f"{pe}/{seed}",
                             "learned": seed <= learned})
                rows.append({"task": "sort", "pe": pe, "seed": seed, "range": 0, "path": f"s{pe}/{seed}",
                             "learned": seed <= learned - 2})
        task = pd.DataFrame(rows)
        runs = pd.DataFrame({"path": task["path"], "steps": [3000 if p.startswith("s") else 5000 for p in task["path"]]})
        text = tables._learned_at_budget(task, runs)
        copy = next(l for l in text.splitlines() if l.startswith("| copy"))
        sort = next(l for l in text.splitlines() if l.startswith("| sort"))
        self.assertIn("| 5000 | alibi | 10/10", copy)
        self.assertTrue(copy.endswith("| met |"))
        self.assertIn("| 3000 | alibi | 8/10", sort)
        self.assertIn("not met", sort)


class Baselines(unittest.TestCase):
    def test_unigram_and_bigram_by_hand(self):
        from pelab_lab.baselines import byte_baselines
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "t.txt"
            p.write_bytes(b"ab" * 45 + b"abababbbba")   # 100 bytes: the last 10 are the validation split
            base = byte_baselines(p, [4], 8)           # two windows of 4: bytes 90..97 predict 91..98
            train = b"ab" * 45
            val = b"abababbbba"
            tgt, prev = val[1:9], val[0:8]
            uni = {c: (train.count(bytes([c])) + 0.5) / (len(train) + 0.5 * 256) for c in b"ab"}
            want_u = math.exp(-sum(math.log(uni[c]) for c in tgt) / 8)
            pairs = {(x, y): sum(1 for i in range(len(train) - 1) if train[i] == x and train[i + 1] == y) for x in b"ab" for y in b"ab"}
            row = {x: sum(pairs[(x, y)] for y in b"ab") for x in b"ab"}
            want_b = math.exp(-sum(math.log((pairs[(x, y)] + 0.5) / (row[x] + 0.5 * 256)) for x, y in zip(prev, tgt)) / 8)
            self.assertAlmostEqual(base[4][0], want_u)
            self.assertAlmostEqual(base[4][1], want_b)

    def test_no_file_no_baseline(self):
        from pelab_lab.baselines import byte_baselines
        self.assertEqual(byte_baselines("/nonexistent/x.txt", [64], 16384), {})


class Claims(unittest.TestCase):
    def ledger(self, rows, predicts=">", effect=None, pre=None, **extra):
        from pelab_lab import claims
        with tempfile.TemporaryDirectory() as d:
            pd.DataFrame(rows).to_csv(Path(d) / "e.csv", index=False)
            cl = {"id": "x", "paper": "P", "source": "T1", "claim": "c", "setting": "s", "experiment": "e",
                  "metric": "acc", "predicts": predicts, "paper_effect": {"value": effect},
                  "preconditions": pre or [], "comparisons": [{"a": {"pe": "a"}, "b": {"pe": "b"}, **extra}]}
            return claims.evaluate([cl], d)[0]

    @staticmethod
    def rows(a, b, learned=None):
        out = [{"pe": "a", "seed": i, "acc": v} for i, v in enumerate(a, 1)]
        out += [{"pe": "b", "seed": i, "acc": v} for i, v in enumerate(b, 1)]
        if learned is not None:
            for r, l in zip(out, learned):
                r["learned"] = l
        return out

    def test_the_five_verdicts(self):
        a, b = [0.9, 0.8, 0.85, 0.95], [0.5, 0.45, 0.6, 0.5]
        self.assertEqual(self.ledger(self.rows(a, b))["verdict"], "consistent")
        self.assertEqual(self.ledger(self.rows(a, b), predicts="<")["verdict"], "contrary")
        noisy_a, noisy_b = [0.9, 0.1, 0.5, 0.6], [0.2, 0.8, 0.4, 0.7]
        self.assertEqual(self.ledger(self.rows(noisy_a, noisy_b), effect=2.0)["verdict"], "inconclusive")
        self.assertEqual(self.ledger(self.rows(noisy_a, noisy_b), effect=0.01)["verdict"], "underpowered")
        rows = self.rows(a, b, learned=[True, False, False, False] * 2)
        for r in rows:
            r["train_range"] = False   # a read past the training sizes
        e = self.ledger(rows)          # not learned applies by rule, undeclared
        self.assertEqual(e["verdict"], "not testable here")
        self.assertIn("not learned", e["results"][0]["failed"])

    def test_not_learned_only_past_the_training_sizes(self):
        # at the training sizes learning them is what is measured: no seed is left out
        rows = self.rows([0.9, 0.8, 0.85, 0.95], [0.5, 0.45, 0.6, 0.5], learned=[True, False, False, False] * 2)
        for r in rows:
            r["train_range"] = True
        self.assertEqual(self.ledger(rows)["verdict"], "consistent")

    @staticmethod
    def length_table(d, ppl, unigram):
        """results/e.csv of perplexities {(label, L): [per seed]} and its byte-unigram baselines."""
        rows = [{"label": lab, "eval_ctx": L, "seed": i, "ppl": v}
                for (lab, L), vs in ppl.items() for i, v in enumerate(vs, 1)]
        pd.DataFrame(rows).to_csv(Path(d) / "e.csv", index=False)
        pd.DataFrame([{"eval_ctx": L, "unigram_ppl": u, "bigram_ppl": u / 2} for L, u in unigram.items()]).to_csv(
            Path(d) / "e_baselines.csv", index=False)

    def claim(self, comparisons, **extra):
        return {"id": "x", "paper": "P", "source": "T1", "claim": "c", "setting": "s", "experiment": "e",
                "metric": "log_ppl", "predicts": "<", "comparisons": comparisons, **extra}

    def test_collapse_fires_on_a_ratio_row_by_rule(self):
        from pelab_lab import claims
        ratio = {"a": {"label": "r", "eval_ctx": 1024, "minus": {"eval_ctx": 64}},
                 "b": {"label": "s", "eval_ctx": 1024, "minus": {"eval_ctx": 64}}}
        with tempfile.TemporaryDirectory() as d:
            # both worse than the unigram (28) at 1024 on every seed: two failures compared
            self.length_table(d, {("r", 64): [5, 5.1, 5.2], ("r", 1024): [36, 37, 35],
                                  ("s", 64): [5, 5.2, 5.1], ("s", 1024): [30, 31, 32]}, {64: 28, 1024: 28})
            r = claims.evaluate([self.claim([ratio])], d)[0]["results"][0]
            self.assertEqual(r["verdict"], "not testable here")
            self.assertIn("collapse", r["failed"])
            # one side fine on the majority of its seeds: testable
            self.length_table(d, {("r", 64): [5, 5.1, 5.2], ("r", 1024): [36, 37, 35],
                                  ("s", 64): [5, 5.2, 5.1], ("s", 1024): [6, 31, 7]}, {64: 28, 1024: 28})
            r = claims.evaluate([self.claim([ratio])], d)[0]["results"][0]
            self.assertIsNone(r["failed"])

    def test_fewer_than_two_pairs(self):
        e = self.ledger(self.rows([0.9], [0.5]))
        self.assertEqual(e["verdict"], "not testable here")
        self.assertIn("fewer than 2", e["results"][0]["failed"])

    def test_a_declaration_cannot_switch_a_precondition_off(self):
        from pelab_lab import claims
        for pre in (["learned"], ["not_collapsed"], [{"collapse": False}], [{"learned_in": "t", "off": True}]):
            with tempfile.TemporaryDirectory() as d:
                f = Path(d) / "c.yaml"
                f.write_text(json.dumps({"claims": [self.claim([{"a": {"label": "r"}, "b": {"label": "s"}}],
                                                               preconditions=pre)]}))
                with self.assertRaisesRegex(claims.ClaimError, "cannot be declared"):
                    claims.load_claims(f)

    def test_scale_precondition_reads_the_tables_command(self):
        from pelab_lab import claims
        with tempfile.TemporaryDirectory() as d:
            self.length_table(d, {("r", 64): [5, 5.1, 5.2], ("s", 64): [6, 6.2, 6.1]}, {64: 28})
            (Path(d) / "e.md").write_text("# t\n\nWorkflow: x — today, 2 cores (CPU, OpenBLAS kernel Haswell); 6 runs\n"
                                          "Each run is one `./train` command, e.g. `./train --pe r --layers 2 --d-model 32 --seed 1`.\n")
            self.assertEqual(claims.pelab_scale(d, "e")["params"], 12 * 32 * 32 * 2)
            comp = [{"a": {"label": "r", "eval_ctx": 64}, "b": {"label": "s", "eval_ctx": 64}}]
            e = claims.evaluate([self.claim(comp, needs={"layers": 3})], d)[0]
            self.assertEqual(e["verdict"], "not testable here")
            self.assertIn("scale", e["results"][0]["failed"])
            self.assertEqual(claims.evaluate([self.claim(comp, needs={"layers": 2})], d)[0]["verdict"], "consistent")

    def test_an_existence_claim(self):
        from pelab_lab import claims
        self.assertEqual(claims.claim_verdict(["contrary", "consistent"], "some"), "consistent")
        self.assertEqual(claims.claim_verdict(["contrary", "consistent"]), "contrary")
        self.assertEqual(claims.claim_verdict(["contrary", "not testable here"], "some"), "contrary")

    def test_effects_in_the_rows_units(self):
        noisy_a, noisy_b = [0.9, 0.1, 0.5, 0.6], [0.2, 0.8, 0.4, 0.7]
        # a small effect converted into the metric: underpowered; one with no conversion: inconclusive
        e = self.ledger(self.rows(noisy_a, noisy_b), effect=0.04)
        self.assertEqual(e["verdict"], "underpowered")
        from pelab_lab import claims
        with tempfile.TemporaryDirectory() as d:
            pd.DataFrame(self.rows(noisy_a, noisy_b)).to_csv(Path(d) / "e.csv", index=False)
            cl = {"id": "x", "paper": "P", "source": "T1", "claim": "c", "setting": "s", "experiment": "e",
                  "metric": "acc", "predicts": ">", "comparisons": [{"a": {"pe": "a"}, "b": {"pe": "b"}}],
                  "paper_effect": {"value": 0.04, "unit": "per-token accuracy", "comparable": False}}
            self.assertEqual(claims.evaluate([cl], d)[0]["verdict"], "inconclusive")
            cl["paper_effect"] = {"value": 4.0, "unit": "percent", "to_metric": 0.01}
            r = claims.evaluate([cl], d)[0]
            self.assertAlmostEqual(r["results"][0]["paper_effect"], 0.04)
            self.assertEqual(r["verdict"], "underpowered")

    def test_a_redeclaration_after_the_data_is_shown(self):
        import subprocess
        from pelab_lab import claims
        with tempfile.TemporaryDirectory() as d:
            git = lambda *a: subprocess.run(["git", "-C", d, "-c", "user.name=t", "-c", "user.email=t@t", *a],
                                            check=True, capture_output=True)
            git("init", "-q")
            decl = {"claims": [self.claim([{"a": {"label": "r"}, "b": {"label": "s"}}], predicts="=")]}
            (Path(d) / "c.yaml").write_text(json.dumps(decl))
            git("add", "c.yaml")
            git("commit", "-qm", "declared before the data")
            (Path(d) / "results").mkdir()
            (Path(d) / "results" / "e.csv").write_text("label,seed,ppl\n")
            git("add", "results")
            git("commit", "-qm", "the data")
            self.assertEqual(claims.declaration_history(Path(d) / "c.yaml", Path(d) / "results"), {})
            decl["claims"][0]["predicts"] = "≥"   # moved after the data (in the working tree, then committed)
            (Path(d) / "c.yaml").write_text(json.dumps(decl))
            for committed in (False, True):
                if committed:
                    git("commit", "-qam", "re-declared")
                h = claims.declaration_history(Path(d) / "c.yaml", Path(d) / "results")
                self.assertIn(("predicts '='", "predicts '≥'"), [(b, a) for _, b, a in h.get("x", [])])

    def test_trend_verdicts_by_rule(self):
        from pelab_lab import claims
        self.assertEqual(claims.trend_verdict(["consistent", "contrary"], 0.0, -1, 1, "<"), "flips")
        self.assertEqual(claims.trend_verdict(["consistent", "consistent"], -0.1, -0.2, -0.05, "<"), "grows with size")
        self.assertEqual(claims.trend_verdict(["consistent", "inconclusive"], 0.1, 0.05, 0.2, "<"), "shrinks with size")
        self.assertEqual(claims.trend_verdict(["consistent", "consistent"], 0.0, -0.1, 0.1, "<"), "holds at every size")
        self.assertEqual(claims.trend_verdict(["consistent", "inconclusive"], 0.0, -0.1, 0.1, ">"), "no trend detected")
        x = np.log([1e5] * 3 + [1e6] * 3 + [1e7] * 3)
        slope, lo, hi, mds = claims.slope_ci(x, 0.05 * x + np.tile([0.0, 0.01, -0.01], 3))
        self.assertAlmostEqual(slope, 0.05)
        self.assertTrue(lo < 0.05 < hi and mds > 0)

    def test_a_claim_across_ladder_sizes(self):
        from pelab_lab import claims
        with tempfile.TemporaryDirectory() as d:
            rows = []
            for size, n, gap in (("s", 1e5, 0.05), ("m", 1e6, 0.10), ("l", 1e7, 0.20)):
                for seed in (1, 2, 3):
                    for pe, extra in (("a", gap), ("b", 0.0)):
                        for f in (1, 16):
                            rows.append({"pe": pe, "size": size, "params": n, "train_ctx": 64, "seed": seed,
                                         "factor": f, "ppl": math.exp(1.5 + (extra if f == 16 else 0) + 0.001 * seed)})
            pd.DataFrame(rows).to_csv(Path(d) / "scale.csv", index=False)
            cl = self.claim([{"a": {"label": "a", "eval_ctx": 1024, "minus": {"eval_ctx": 64}},
                              "b": {"label": "b", "eval_ctx": 1024, "minus": {"eval_ctx": 64}}},
                             {"a": {"label": "a", "eval_ctx": 128}, "b": {"label": "b", "eval_ctx": 128}}],
                            predicts=">", across_sizes=True)
            t = claims.across_sizes([cl], d)[0]
            self.assertEqual(t["skipped"], 1)   # 2× has no ladder counterpart
            r = t["rows"][0]
            self.assertEqual([c["verdict"] for c in r["cells"]], ["consistent"] * 3)
            self.assertEqual(r["trend"], "grows with size")

    def test_a_claim_across_ladder_sizes_at_a_longer_training_length(self):
        """The sizes trained at 256 are judged at the same multiples of 256 as
        the claim reads of 64 (1024 − 64 there is 4096 − 256); one size gives
        no trend."""
        from pelab_lab import claims
        with tempfile.TemporaryDirectory() as d:
            rows = []
            for size, n, gap, ctxs in (("s", 1e5, 0.05, (64,)), ("m", 1e6, 0.10, (64, 256)), ("l", 1e7, 0.20, (64, 256))):
                for ctx in ctxs:
                    for seed in (1, 2, 3):
                        for pe, extra in (("a", gap if ctx == 64 else -gap), ("b", 0.0)):
                            for f in (1, 16):
                                rows.append({"pe": pe, "size": size, "params": n, "train_ctx": ctx, "seed": seed, "factor": f,
                                             "ppl": math.exp(1.5 + (extra if f == 16 else 0) + 0.001 * seed)})
            pd.DataFrame(rows).to_csv(Path(d) / "scale.csv", index=False)
            cl = self.claim([{"a": {"label": "a", "eval_ctx": 1024, "minus": {"eval_ctx": 64}},
                              "b": {"label": "b", "eval_ctx": 1024, "minus": {"eval_ctx": 64}}}],
                            predicts=">", across_sizes=True)
            t = claims.ladder_trends([cl], d)
            self.assertEqual(sorted(t), [64, 256])
            self.assertEqual(t[64][0]["sizes"], ["s", "m", "l"])
            long = t[256][0]
            self.assertEqual(long["sizes"], ["m", "l"])
            r = long["rows"][0]
            self.assertIn("eval_ctx 4096", r["a"])
            self.assertNotIn("eval_ctx 1024", r["a"])
            self.assertEqual([c["verdict"] for c in r["cells"]], ["contrary"] * 2)   # a gains at 16× of 256
            self.assertEqual(r["trend"], "shrinks with size")
            text = "\n".join(claims.render_sizes(t))
            self.assertIn("Trained at 256:", text)
            pd.DataFrame([x for x in rows if x["train_ctx"] == 64 or x["size"] == "l"]).to_csv(Path(d) / "scale.csv", index=False)
            self.assertEqual(claims.ladder_trends([cl], d)[256][0]["rows"][0]["trend"], "no trend: one size")

    def test_paired_by_seed(self):
        e = self.ledger(self.rows([1.0, 2.0, 3.0], [0.9, 1.9, 2.95]))
        r = e["results"][0]
        self.assertEqual(r["design"], "paired t")
        d = stats.paired([1.0, 2.0, 3.0], [0.9, 1.9, 2.95])
        self.assertAlmostEqual(r["lo"], d.lo)

    def test_holm_within_a_claim(self):
        from pelab_lab import claims
        with tempfile.TemporaryDirectory() as dd:
            rows = self.rows([0.9, 0.8, 0.85, 0.95], [0.5, 0.45, 0.6, 0.5])
            rows += [{"pe": "c", "seed": i, "acc": v} for i, v in enumerate([0.52, 0.49, 0.62, 0.47], 1)]
            pd.DataFrame(rows).to_csv(Path(dd) / "e.csv", index=False)
            cl = {"id": "x", "paper": "P", "source": "T1", "claim": "c", "setting": "s", "experiment": "e",
                  "metric": "acc", "predicts": ">",
                  "comparisons": [{"a": {"pe": "a"}, "b": {"pe": "b"}}, {"a": {"pe": "c"}, "b": {"pe": "b"}}]}
            res = claims.evaluate([cl], dd)[0]["results"]
            raw = sorted(r["p"] for r in res)
            self.assertAlmostEqual(min(r["p_holm"] for r in res), min(1, 2 * raw[0]))

    def test_power_for_a_huge_effect_does_not_crash(self):
        from pelab_lab import claims
        self.assertEqual(claims.n_needed(0.5, 0.0025), 2.0)   # the solver aborts the process out there
        self.assertEqual(claims.n_needed(0.5, 0.0), 2.0)
        self.assertTrue(math.isnan(claims.n_needed(None, 0.1)))

    def test_the_ledger_declarations_load(self):
        from pelab_lab import claims
        decl = claims.load_claims(Path(__file__).resolve().parents[1] / "claims.yaml")
        self.assertGreaterEqual(len(decl), 12)


class Corpus(unittest.TestCase):
    """The linux-source recipe's rule on made-up files: disjoint by file, and
    ./train's validation split is exactly the held-out files."""

    def files(self, n=400):
        rng = np.random.default_rng(1)
        return {f"dir{i % 7}/file{i}.c": bytes(rng.integers(32, 127, size=int(rng.integers(50, 400)), dtype=np.uint8))
                for i in range(n)}

    def test_held_out_by_file_and_at_trains_split(self):
        from pelab_lab import corpus
        files = self.files()
        data, rows = corpus.assemble(files, 20000)
        train = {r[0] for r in rows if r[1] == "train"}
        val = {r[0] for r in rows if r[1] == "validation"}
        self.assertTrue(train and val and not train & val)
        self.assertTrue(all(corpus.held_out(p) for p in val) and not any(corpus.held_out(p) for p in train))
        first_val = min(r[2] for r in rows if r[1] == "validation")
        self.assertEqual(corpus.train_split(len(data)), first_val)
        self.assertEqual(data[:first_val], b"".join(files[r[0]] for r in rows if r[1] == "train"))
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "c.txt"
            p.write_bytes(data)
            Path(f"{p}.files.tsv").write_text("".join(f"{a}\t{b}\t{c}\t{e}\n" for a, b, c, e in rows))
            self.assertEqual(corpus.check_split(p), [])
            # a training file moved into the held-out part: caught
            bad = [(a, "validation" if i == 0 else b, c, e) for i, (a, b, c, e) in enumerate(rows)]
            Path(f"{p}.files.tsv").write_text("".join(f"{a}\t{b}\t{c}\t{e}\n" for a, b, c, e in bad))
            self.assertTrue(corpus.check_split(p))

    def test_val_length_puts_the_split_exactly(self):
        from pelab_lab import corpus
        for t in (9, 10, 99, 100_000_000, 100_000_007, 123_456_789):
            self.assertEqual(corpus.train_split(t + corpus.val_bytes_for(t)), t)

    def test_too_few_files_refused(self):
        from pelab_lab import corpus
        with self.assertRaises(corpus.CorpusError):
            corpus.assemble(self.files(20), 10 ** 6)


class ScaleLadder(unittest.TestCase):
    LIST = LIST_PE

    def test_budget_rule_and_sizes(self):
        spec = {"kind": "scale", "encodings": ["none", "rope"], "tokens": 1024 * 100, "tokens_per_step": 1024,
                "tokens_exponent": 0.5, "lr": 3e-3, "eval_tokens": 1024, "ctx": [64, 256],
                "sizes": {"s": {"d_model": 32, "layers": 1, "heads": 2, "seeds": "1-2"},
                          "l": {"d_model": 64, "layers": 4, "heads": 4, "seeds": [1], "long": True}}}
        runs = plan.plan(cfg(scale=spec), LIST_PE)["scale"]
        by = {(r.meta["size"], r.meta["train_ctx"]) for r in runs}
        self.assertEqual(by, {("s", 64), ("l", 64), ("l", 256)})   # 256 only for the size marked long
        small = next(r for r in runs if r.meta["size"] == "s")
        large = next(r for r in runs if r.meta["size"] == "l" and r.meta["train_ctx"] == 256)
        self.assertEqual(large.meta["params"] / small.meta["params"], 16)
        self.assertEqual(small.meta["steps"], 100)
        self.assertEqual(large.meta["steps"], 400)        # 16× the parameters, ^0.5: 4× the tokens
        self.assertIn("--batch", large.options)
        self.assertEqual(large.options[large.options.index("--batch") + 1], "4")   # 1024 tokens a step at ctx 256
        self.assertEqual(large.options[large.options.index("--eval-ctx") + 1], "256,1024,4096")
        self.assertEqual(len(runs), 2 * 2 + 2 * 1 * 2)

    def test_records_seeded_only_where_wanted(self):
        from pelab_lab import records
        self.assertTrue(records._wanted([], {"scale"}))
        self.assertTrue(records._wanted(["-j", "2", "publish_scale"], {"scale"}))
        self.assertTrue(records._wanted(["runs/scale/x/1.json"], {"scale"}))
        self.assertFalse(records._wanted(["-j", "2", "results/slow.md"], {"scale"}))

    def test_record_must_be_the_planned_run(self):
        from pelab_lab import records
        spec = {"kind": "scale", "encodings": ["rope"], "tokens": 2048, "tokens_per_step": 1024, "lr": 3e-3,
                "eval_tokens": 1024, "sizes": {"s": {"d_model": 32, "layers": 1, "heads": 2, "seeds": [1]}}}
        r = plan.plan(cfg(scale=spec), LIST_PE)["scale"][0]
        cfgd = {"pe": "rope", "data": "corpus/x.txt", "d_model": 32, "layers": 1, "heads": 2, "ctx": 64, "batch": 16,
                "steps": 2, "lr": 0.004243, "eval_ctx": [64, 256, 1024], "eval_window": 64, "eval_tokens": 1024, "seed": 1}
        self.assertIsNone(records.mismatch(r, {"config": cfgd}, "corpus/x.txt"))
        self.assertIn("--steps", records.mismatch(r, {"config": {**cfgd, "steps": 3}}, "corpus/x.txt"))
        self.assertIn("--data", records.mismatch(r, {"config": cfgd}, "corpus/y.txt"))
        self.assertIn("interrupted", records.mismatch(r, {"config": cfgd, "interrupted": {"signal": "SIGINT"}}, "corpus/x.txt"))


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

    def test_window_and_attention_statistics(self):
        with tempfile.TemporaryDirectory() as d:
            p = write_run(d, "a.json", {"pe": "alibi", "data": "book.txt", "seed": 1, "ctx": 64}, train={"steps": 10},
                          eval=[{"ctx": 64, "loss": 1.0, "ppl": 2.718, "attn_sink": [[0.1, 0.3]],
                                 "attn_far": {"16": [[0.2, None]]}},
                                {"ctx": 256, "loss": 0.9, "ppl": 2.46, "window": 64, "window_loss": 0.95,
                                 "window_ppl": 2.59}])
            t = tidy([(p, {})])
            e = t["evals"]
            self.assertAlmostEqual(e["sink"][0], 0.2)
            self.assertAlmostEqual(e["far_16"][0], 0.2)        # the head without rows is missing, not 0
            self.assertTrue(math.isnan(e["far_64"][0]))
            self.assertTrue(math.isnan(e["window_loss"][0]) and e["window_loss"][1] == 0.95)
            self.assertEqual(len(t["attn"]), 2)
            self.assertTrue(math.isnan(t["attn"]["far_16"][1]))

    def test_solve_step_from_curve(self):
        with tempfile.TemporaryDirectory() as d:
            p = write_run(d, "a.json", {"pe": "rope", "data": "cats", "seed": 1}, order={"acc": 1.0, "n": 400},
                          curve=[{"step": 100, "order_acc": 0.5}, {"step": 200, "order_acc": 0.995},
                                 {"step": 300, "order_acc": 0.9}])
            self.assertEqual(tidy([(p, {})])["runs"]["solve_step"][0], 200)

    def test_until_solved_record_solved_and_censored(self):
        with tempfile.TemporaryDirectory() as d:
            a = write_run(d, "a.json", {"pe": "rope", "data": "cats", "seed": 1},
                          order={"acc": 1.0, "n": 400, "until_solved": 0.99, "solved_step": 700, "cap": 20000})
            b = write_run(d, "b.json", {"pe": "none", "data": "cats", "seed": 1},
                          order={"acc": 0.5, "n": 400, "until_solved": 0.99, "solved_step": None, "cap": 20000})
            r = tidy([(a, {}), (b, {})])["runs"]
            self.assertEqual(list(r["solve_time"]), [700, 20000])
            self.assertEqual(list(r["solved"]), [1.0, 0.0])
            self.assertTrue(math.isnan(r["solve_step"][1]))


class Format(unittest.TestCase):
    def test_a_clipped_interval_shows_its_bounds(self):
        from pelab_lab.stats import mean_ci
        self.assertRegex(mean_ci([0.0, 0.0, 0.0, 1.0], (0, 1)).fmt(2), r"^0\.25 \[0\.00, 1\.00\]$")
        self.assertRegex(mean_ci([0.0, 1.0, 0.0, 1.0], (0, 1)).fmt(2), r"^0\.50 ± 0\.50$")   # cut evenly: still symmetric
        self.assertRegex(mean_ci([0.4, 0.5, 0.6], (0, 1)).fmt(2), r"^0\.50 ± 0\.25$")


class ReadmeTables(unittest.TestCase):
    def test_a_synced_table_is_checked_and_must_end_at_a_blank_line(self):
        from pelab_lab import readme
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "results").mkdir()
            (Path(d) / "results" / "e.md").write_text("# e\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
            mark = "<!-- results/e.md table 1 -->"
            good = f"{mark}\n| a | b |\n|---|---|\n| 1 | 2 |\n\nText.\n"
            self.assertEqual(readme.sync(good, Path(d), False)[1], [])
            stale = good.replace("| 1 | 2 |", "| 1 | 3 |")
            self.assertIn("is not results/e.md's table 1", readme.sync(stale, Path(d), False)[1][0])
            self.assertEqual(readme.sync(stale, Path(d), True)[0], good)   # `make readme` copies it again
            glued = good.replace("\n\nText.", "\nText.")   # Markdown reads "Text." as one more row
            self.assertIn("runs into the line after it", readme.sync(glued, Path(d), False)[1][0])


class Bounds(unittest.TestCase):
    def test_a_bound_is_decided_by_a_separated_difference_only(self):
        from pelab_lab.claims import verdict_of
        c = lambda est, p: {"failed": None, "est": est, "p_holm": p, "mde": 0.01}
        self.assertEqual(verdict_of(c(0.006, 0.002), "≥", None), "consistent")   # no better: worse, separated
        self.assertEqual(verdict_of(c(-0.006, 0.002), "≥", None), "contrary")    # better, separated
        self.assertEqual(verdict_of(c(0.001, 0.4), "≥", None), "inconclusive")   # not separated: neither
        self.assertEqual(verdict_of(c(-0.006, 0.002), "≤", None), "consistent")
        self.assertEqual(verdict_of(c(0.006, 0.002), "=", None), "contrary")


class UniformAttention(unittest.TestCase):
    def test_the_baseline_counts_the_keys_each_row_sees(self):
        from pelab_lab.baselines import uniform_attention
        self.assertAlmostEqual(uniform_attention(3), (1 / 2 + 1 / 3) / 2)          # rows 1 and 2: first key's share
        self.assertAlmostEqual(uniform_attention(3, 1), (1 / 2 + 2 / 3) / 2)       # keys ≥ 1 back
        self.assertAlmostEqual(uniform_attention(4, 2), (1 / 3 + 2 / 4) / 2)       # rows 2 and 3
        self.assertTrue(math.isnan(uniform_attention(4, 4)))                       # no row has such keys


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

    def test_a_file_unlike_the_results_schema_is_not_a_result(self):
        from pelab_lab.runs import accept_main
        with tempfile.TemporaryDirectory() as d:
            ok = write_run(d, "ok.json", {"pe": "rope"}, eval=[{"ctx": 64, "ppl": 2.0, "loss": 0.7}])
            text = write_run(d, "s.json", {"pe": "rope"}, eval=[{"ctx": 64, "ppl": "2.0", "loss": 0.7}])
            extra = write_run(d, "x.json", {"pe": "rope"}, eval=[{"ctx": 64, "perplexity": 2.0}])
            short = Path(d) / "short.json"
            short.write_text(json.dumps({"config": {"pe": "rope"}, "eval": []}))
            nan = Path(d) / "nan.json"
            nan.write_text(ok.read_text().replace("2.0", "NaN"))
            with contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(accept_main([str(ok)]), 0)
                for bad in (text, extra, short, nan):
                    self.assertEqual(accept_main([str(bad)]), 3, bad)
            for what in ("eval[].ppl: str", "eval[].perplexity: not a field", "given: missing", "NaN literal"):
                self.assertIn(what, err.getvalue())

    def test_an_interrupted_run_is_not_a_result(self):
        from pelab_lab.runs import accept_main
        with tempfile.TemporaryDirectory() as d:
            cut = write_run(d, "i.json", {"pe": "rope", "seed": 1}, eval=[], interrupted={"signal": "SIGINT", "step": 40})
            whole = write_run(d, "w.json", {"pe": "rope", "seed": 2}, eval=[{"ctx": 64, "ppl": 2.0, "loss": 0.7}])
            self.assertEqual(accept_main([str(cut)]), 3)
            self.assertEqual(accept_main([str(whole)]), 0)
            with contextlib.redirect_stderr(io.StringIO()) as err:
                r = tidy([(cut, {}), (whole, {})])["runs"]
            self.assertEqual(list(r["seed"]), [2])
            self.assertIn("interrupted", err.getvalue())


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


class Decay(unittest.TestCase):
    def test_roformer_bound_by_hand(self):
        # r = 0: every |S_j| = j, the mean over j = 1 … hd/2 is (hd/2 + 1)/2
        self.assertAlmostEqual(decay.rope_bound(16, 10000, [0])[0], 4.5)
        # hd 4, base 1: θ = (1, 1); at r = π, S_1 = −1, S_2 = −2: (1 + 2)/2
        self.assertAlmostEqual(decay.rope_bound(4, 1.0, [math.pi])[0], 1.5)
        # hd 4, base 100: θ = (1, 0.1); at r = 10, S_2 = e^{10i} + e^{i}
        want = (1 + abs(complex(math.cos(10), math.sin(10)) + complex(math.cos(1), math.sin(1)))) / 2
        self.assertAlmostEqual(decay.rope_bound(4, 100, [10])[0], want)


class TorchFiles(unittest.TestCase):
    """pelab_lab.torch's files, without PyTorch: the safetensors export read
    back, and what the command line refuses (the model itself is tested by
    tests/test_torch.c)."""

    def test_safetensors_round_trip(self):
        from pelab_lab import torch as pt
        cfg = pt.resolve_options(dict(vocab=20, ctx=8, d=8, layers=2, heads=2, causal=1, pe="learned+xl", base_ctx=0,
                                      rand_pos=0, options={}), {})
        n = sum(int(np.prod(s)) for _, s in pt.layout(cfg))
        flat = np.random.default_rng(1).standard_normal(n).astype(np.float32)
        with tempfile.TemporaryDirectory() as d:
            path = f"{d}/m.safetensors"
            pt.write_safetensors(path, cfg, flat)
            cfg2, flat2 = pt.read_any(path)
            self.assertTrue(np.array_equal(flat, flat2))
            self.assertEqual((cfg2["pe"], cfg2["layers"]), ("learned+xl", 2))
            tensors, _ = pt.read_safetensors(path)
            # GPT-2's (in, out) orientation: qkvw of layer 1 transposed
            qkvw = pt.unflatten(cfg, flat)["qkvw"]
            self.assertTrue(np.array_equal(tensors["h.1.attn.c_attn.weight"], qkvw[1].T))
            self.assertIn("h.0.attn.pos.xl_wr", tensors)
            self.assertEqual(json.load(open(f"{d}/config.json"))["pe"], "learned+xl")
            Path(f"{d}/x.txt").write_text("hello, not a model\n")
            with self.assertRaisesRegex(pt.PelabFileError, "neither a pelab checkpoint"):
                pt.read_any(f"{d}/x.txt")

    def test_eval_rows_file(self):
        """./train --eval-rows's file read back; a damaged one refused."""
        import struct
        from pelab_lab import torch as pt
        L, w = 4, 2
        body = np.arange(3 * L * w, dtype="<i4")
        raw = b"PELABROW" + struct.pack("<III", 1, 1, L) + struct.pack("<I", w) + body.tobytes()
        with tempfile.TemporaryDirectory() as d:
            Path(f"{d}/r.bin").write_bytes(raw)
            tok, tgt, seg = pt.read_rows(f"{d}/r.bin")[L]
            self.assertEqual(tok.shape, (w, L))
            self.assertEqual((int(tok[1, 0]), int(tgt[0, 0]), int(seg[1, 3])), (4, 8, 23))
            for bad, why in ((raw[:-3], "truncated"), (raw + b"x", "after its last"), (b"PELABROX" + raw[8:], "not a file")):
                Path(f"{d}/b.bin").write_bytes(bad)
                with self.assertRaisesRegex(pt.PelabFileError, why):
                    pt.read_rows(f"{d}/b.bin")

    def test_command_line_refusals(self):
        from pelab_lab import torch as pt
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(pt.main([]), 2)
            self.assertEqual(pt.main(["m.ck", "--eval", "--bogus"]), 2)
            self.assertEqual(pt.main(["m.ck", "--export"]), 2)
            self.assertEqual(pt.main(["a.ck", "b.ck", "--export", "o.safetensors"]), 2)
            self.assertEqual(pt.main(["/nonexistent/m.ck", "--export", "o.safetensors"]), 1)
        self.assertIn("unknown option '--bogus'", err.getvalue())
        self.assertIn("cannot read '/nonexistent/m.ck'", err.getvalue())


class Kinds(unittest.TestCase):
    """Each kind of experiment is one registration (pelab_lab/kinds.py)."""

    def test_every_kind_has_every_part(self):
        from pelab_lab import kinds
        for k in kinds.KINDS.values():
            self.assertTrue(callable(k.plan) and callable(k.table) and k.title, k.name)
            self.assertIn(f"results/x.md", k.outputs("results/x"))

    def test_a_registration_missing_a_part_fails_at_once(self):
        from pelab_lab import kinds, tables
        with self.assertRaises(TypeError):
            kinds.Kind("new", plan.plan_order, tables.order, ("",))  # no title
        with self.assertRaisesRegex(TypeError, "table is not a function"):
            kinds.Kind("new", plan.plan_order, None, ("",), "A new kind")

    def test_args_that_repeat_an_option_the_experiment_sets_are_refused(self):
        cfg = {"experiments": {"x": {"kind": "encodings", "seeds": [1], "steps": 10, "encodings": ["rope"],
                                     "args": "--pe none"}}}
        lp = "rope   relative  q and k rotated\nnone   none      no position information\n"
        with self.assertRaisesRegex(plan.ConfigError, "sets --pe twice"):
            plan.plan(cfg, lp)

    def test_the_config_schema(self):
        """Unknown keys (with the nearest known one), a common key of the
        wrong type, a fractional step count and args naming no option of
        ./train are refused before any run (issue 56 #15)."""
        lp = "rope   relative  q and k rotated\nnone   none      no position information\n"
        good = {"kind": "encodings", "seeds": [1], "steps": 10, "encodings": ["rope"]}
        for cfg, why in (
                ({"threds": 2, "experiments": {"x": good}}, "unknown key 'threds' .*did you mean 'threads'"),
                ({"experiments": {"x": {**good, "seedz": "1-2"}}}, "unknown key 'seedz' .*did you mean 'seeds'"),
                ({"experiments": {"x": {**good, "cap": 5}}}, "unknown key 'cap'"),   # an order key, not this kind's
                ({"experiments": {"x": {**good, "args": ["--pe"]}}}, "'args' must be a string"),
                ({"experiments": {"x": {**good, "steps": 20.5}}}, "must be an integer"),
                ({"experiments": {"x": {**good, "args": "--bogus 3"}}}, "no option --bogus"),
                ({"experiments": {"x": {**good, "args": "--eval-tokne 3"}}}, "did you mean --eval-tokens"),
                ({"experiments": {"x": {**good, "args": "--eval-tokens"}}}, "needs a value"),
                ({"experiments": {"x": {**good, "args": "512"}}}, "neither a ./train option")):
            with self.subTest(why=why), self.assertRaisesRegex(plan.ConfigError, why):
                plan.plan(cfg, lp)
        self.assertEqual(len(plan.plan({"experiments": {"x": {**good, "args": "--eval-tokens 512 --attn-stats"}}},
                                       lp)["x"]), 1)
        # every config the lab ships passes its schema
        from pelab_lab import configs
        for files in (["config.yaml"], ["config.yaml", "quick.yaml"], ["config.yaml", "scale_published.yaml"]):
            plan.check_keys(configs.load([str(Path(__file__).resolve().parents[1] / f) for f in files]))

    def test_an_unknown_kind_is_refused_by_the_plan(self):
        cfg = {"experiments": {"x": {"kind": "nope", "seeds": [1]}}}
        with self.assertRaisesRegex(plan.ConfigError, "kind must be one of"):
            plan.plan(cfg, "")


class ConfigProperty(unittest.TestCase):
    """The config parser, property-tested (hypothesis, a bounded number of
    examples): each experiment the lab ships, with one or two of its keys
    replaced by any value (or removed), is planned or refused with a
    ConfigError, never another exception (issue 56 #15; the first run of
    this found a list as `kind`, a mapping as `eval_factors`, `modes: null`
    and unbalanced quotes in `args` ending in tracebacks)."""

    def test_any_value_is_planned_or_refused_in_words(self):
        import copy
        import subprocess
        from hypothesis import HealthCheck, given, settings, strategies as st
        from pelab_lab import configs, kinds
        lab = Path(__file__).resolve().parents[1]
        lp = subprocess.run([str(lab.parent / "train"), "--list-pe"], capture_output=True, text=True, check=True).stdout
        base = configs.load([str(lab / "config.yaml"), str(lab / "quick.yaml")])
        keys = sorted(kinds.KEY_SHAPES)
        scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 70000), st.floats(allow_nan=True),
                           st.text(max_size=12), st.sampled_from(["1-3", "rope", "causal", "--eval-tokens 256", "copy",
                                                                  "d48L2", "pi", "order", "all", "'"]))
        value = st.recursive(scalar, lambda c: st.one_of(st.lists(c, max_size=4),
                                                         st.dictionaries(st.sampled_from(keys + ["copy", "rope"]), c,
                                                                         max_size=4)), max_leaves=8)

        @settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
        @given(st.sampled_from(sorted(base["experiments"])),
               st.lists(st.tuples(st.sampled_from(keys), st.one_of(st.just(None), value)), min_size=1, max_size=2),
               st.booleans())
        def planned_or_refused(name, changes, remove):
            spec = copy.deepcopy(base["experiments"][name])
            for k, v in changes:
                if remove and v is None:
                    spec.pop(k, None)
                else:
                    spec[k] = v
            exps = {name: spec}
            src = base["experiments"][name].get("from")
            if src:
                exps[src] = base["experiments"][src]
            try:
                plan.plan({**{k: v for k, v in base.items() if k != "experiments"}, "experiments": exps}, lp)
            except plan.ConfigError:
                pass

        planned_or_refused()


class SmokeAndOffline(unittest.TestCase):
    """Issue 59: a --quick report says it is a smoke test and gives no
    verdicts; a corpus that cannot be downloaded is said before anything
    runs, the --text fix last."""

    def test_quick_report_has_a_banner_and_no_verdicts(self):
        from pelab_lab import report
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "report.html"
            report.html_report({"exps": [], "skipped": {}, "quick": True, "kernel": "", "text": "x", "pictures": []}, out)
            page = out.read_text()
            self.assertIn("Smoke test, not evidence", page)
            self.assertIn("No verdicts", page)
            self.assertNotIn("contrary", page)

    def test_unreachable_corpus_is_said_with_the_fix_last(self):
        from pelab_lab import corpus
        with tempfile.TemporaryDirectory() as d:
            conf = Path(d) / "c.yaml"
            conf.write_text("text: far\ncorpora:\n  far:\n    url: http://pelab-test.invalid/corpus.txt\n"
                            "    sha256: '" + "0" * 64 + "'\n")
            lines = corpus.preflight(conf, Path(d) / "run", timeout=5)
            self.assertTrue(lines and "cannot be reached" in lines[0] and "nothing was run" in lines[0])
            self.assertEqual(lines[-1].strip(), f"lab/run --text PATH {Path(d) / 'run'}")
            (Path(d) / "run" / "corpus").mkdir(parents=True)
            (Path(d) / "run" / "corpus" / ("0" * 16 + ".txt")).write_text("here already")
            self.assertEqual(corpus.preflight(conf, Path(d) / "run"), [])
            conf.write_text("text: /some/local/file.txt\n")
            self.assertEqual(corpus.preflight(conf, Path(d) / "run"), [])


class RunFolder(unittest.TestCase):
    def test_a_stale_snakemake_lock_does_not_stop_a_resume(self):
        """A run that died with its machine leaves Snakemake's lock behind;
        lab/run, holding its own lock on the folder, knows it is stale."""
        import subprocess
        repo = Path(__file__).resolve().parents[2]
        with tempfile.TemporaryDirectory() as d:
            locks = Path(d) / ".snakemake" / "locks"
            locks.mkdir(parents=True)
            (locks / "0.output.lock").write_text("results/rope_decay.md\n")
            # the timeout only guards against a hang: on a starved machine the workflow's start takes minutes
            p = subprocess.run([str(repo / "lab" / "run"), d, "-j", "1", "--touch", "results/rope_decay.md"],
                               capture_output=True, text=True, timeout=1800)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.assertIn("stale Snakemake lock", p.stderr)
            self.assertNotIn("LockException", p.stdout + p.stderr)


class AnalyseSummary(unittest.TestCase):
    """Issue 59: lab/analyse's summary has a column per evaluation length, its
    rows ranked, one run's value without "(n=1)", tokens/s as a whole number;
    lab/compare's refusal of an empty side lists the values there are."""

    def runs(self, d):
        for pe, ppl in (("rope", (8.0, 8.4)), ("alibi", (7.0, 7.2))):
            for seed, p in zip((1, 2), ppl):
                write_run(d, f"{pe}{seed}.json", {"pe": pe, "seed": seed, "data": "t.txt", "ctx": 64},
                          train={"steps": 10, "final_loss": 2.0 + seed / 10, "tokens_per_s": 168680.7},
                          eval=[{"ctx": 64, "loss": math.log(p), "ppl": p, "tokens": 100},
                                {"ctx": 256, "loss": math.log(p + 1), "ppl": p + 1, "tokens": 100}])
        write_run(d, "none1.json", {"pe": "none", "seed": 1, "data": "t.txt", "ctx": 64},
                  train={"steps": 10, "final_loss": 2.5, "tokens_per_s": 100000.0},
                  eval=[{"ctx": 64, "loss": math.log(9.0), "ppl": 9.0, "tokens": 100}])

    def test_ranked_per_length_columns_clean_numbers(self):
        from pelab_lab.cli import load, summary_table
        with tempfile.TemporaryDirectory() as d:
            self.runs(d)
            lines = summary_table(load([d]), ["pe"], [d])
            head = next(l for l in lines if l.startswith("| rank"))
            self.assertIn("| ppl at 64 | ppl at 256 |", head)
            rows = [l for l in lines if l.startswith("| ") and l[2].isdigit()]
            self.assertEqual([r.split(" | ")[1] for r in rows], ["alibi", "rope", "none"])
            self.assertIn("7.100 ± ", rows[0])
            self.assertIn("| 9.000 | — |", rows[2])
            self.assertNotIn("n=1", "\n".join(lines))
            self.assertIn("| 168681 |", rows[0])

    def test_compare_lists_the_labels_there_are(self):
        from pelab_lab.cli import compare_main
        with tempfile.TemporaryDirectory() as d:
            self.runs(d)
            with self.assertRaises(SystemExit) as e:
                compare_main([d, "--metric", "ppl", "--a", "label=rope", "--b", "label=rope (yarn)", "--at", "eval_ctx=64"])
            self.assertIn("label takes alibi, none, rope", str(e.exception))

    def test_a_curve_gets_its_picture(self):
        from pelab_lab.cli import analyse_main
        with tempfile.TemporaryDirectory() as d:
            for seed in (1, 2):
                write_run(Path(d) / "r", f"rope{seed}.json", {"pe": "rope", "seed": seed, "data": "t.txt", "ctx": 64},
                          train={"steps": 20, "final_loss": 2.0},
                          curve=[{"step": s, "train_loss": 3.0 - s / 20, "val_loss": 3.1 - s / 40 + seed / 100}
                                 for s in (10, 20)])
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(analyse_main([str(Path(d) / "r"), "--out", str(Path(d) / "out")]), 0)
            self.assertTrue((Path(d) / "out" / "loss.png").stat().st_size > 0)
            self.assertIn("![loss](loss.png)", (Path(d) / "out" / "summary.md").read_text())
