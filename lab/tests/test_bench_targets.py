"""make bench's Targets table (bench/peers/peers.py, target_rows) read from figures made up so that every verdict
can be checked by hand: met and missed, a ratio target out of the FMA peak's reach, an encoding inside, outside
and undecided, and an AVX2-only machine's single peak target."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "peers"))
import peers  # noqa: E402  (bench/peers is not a package; peers.py needs the standard library only)


def figures(avx512=True, tps=7500.0, bf16_tps=9000.0):
    # 20 M FLOPs a token at 7500 tokens/s = 150 GFLOP/s = 75% of a 200 GFLOP/s peak; the peak's bound 10000 tokens/s
    return {"avx512": avx512, "fma_peak_gflops": 200.0, "bf16_peak_gflops": 400.0 if avx512 else None,
            "reference": {"flops_per_token": 20e6, "tokens_per_s": tps,
                          "ops": {"matrix products": 0.8, "attention": 0.12, "LayerNorm": 0.05, "GELU": 0.03}},
            "engines": [{"engine": "onednn", "precision": "bf16", "tokens_per_s": bf16_tps}] if avx512 else [],
            "encodings": [{"pe": "none", "vs_none": 1.0, "low": 1.0, "high": 1.0},
                          {"pe": "xl", "vs_none": 0.90, "low": 0.89, "high": 0.91},
                          {"pe": "cope", "vs_none": 0.84, "low": 0.83, "high": 0.86},
                          {"pe": "fire", "vs_none": 0.80, "low": 0.78, "high": 0.82}]}


class Targets(unittest.TestCase):
    def test_avx512_rows_by_hand(self):
        rows = dict(peers.target_rows(figures(), 5000.0, ("PyTorch torch.compile", 6000.0)))
        fastest = rows["pelab ≥ 3× the fastest fp32 peer, reference shape"]
        self.assertTrue(fastest.startswith("**missed**: 1.25× PyTorch torch.compile"))
        self.assertIn("pelab needs 18000 tokens/s, 2.40× its speed", fastest)
        self.assertIn("train 10000 tokens/s, 1.67× this peer: out of reach here", fastest)
        eager = rows["pelab ≥ 5× PyTorch eager, reference shape"]
        self.assertTrue(eager.startswith("**missed**: 1.50× (pelab needs 25000 tokens/s"))
        self.assertEqual(rows["the fp32 step ≥ 70% of the measured FMA peak"], "**met**: 75.0% of 200.0 GFLOP/s")
        # 9000 × 20 M = 180 GFLOP/s = 45% of 400
        self.assertEqual(rows["the bf16 step ≥ 50% of the measured bf16 peak"],
                         "**missed**: 45.0% of 400.0 GFLOP/s (5.0% short)")
        pe = rows["every encoding within 15% of NoPE (blocks kernel)"]
        self.assertTrue(pe.startswith("**missed**: 1 of 3 within (whole interval); slowest fire -20.0% [-22.0, -18.0]"))
        self.assertIn("outside: fire -20.0%", pe)
        self.assertIn("undecided: cope", pe)

    def test_ratio_met_within_reach_and_missed_peak_names_the_ops(self):
        rows = dict(peers.target_rows(figures(tps=6000.0), 1000.0, ("PyTorch eager", 1900.0)))
        self.assertEqual(rows["pelab ≥ 3× the fastest fp32 peer, reference shape"], "**met**: 3.16× PyTorch eager")
        self.assertEqual(rows["pelab ≥ 5× PyTorch eager, reference shape"], "**met**: 6.00×")
        # 6000 × 20 M = 120 GFLOP/s = 60%: 10.0% short, the three largest ops outside the products named
        self.assertEqual(rows["the fp32 step ≥ 70% of the measured FMA peak"],
                         "**missed**: 60.0% of 200.0 GFLOP/s (10.0% short; matrix products 80.0% of the step; "
                         "outside the products: attention 12.0%, LayerNorm 5.0%, GELU 3.0%)")
        rows = dict(peers.target_rows(figures(tps=6000.0), 1500.0, ("PyTorch eager", 1500.0)))
        # 3 × 1500 = 4500 tokens/s is within the 10000 the peak allows: the text does not say "out of reach"
        self.assertNotIn("out of reach", rows["pelab ≥ 5× PyTorch eager, reference shape"])

    def test_no_peer_timed(self):
        rows = dict(peers.target_rows(figures(), None, None))
        self.assertEqual(rows["pelab ≥ 3× the fastest fp32 peer, reference shape"], "not measured (no peer timed)")
        self.assertEqual(rows["pelab ≥ 5× PyTorch eager, reference shape"], "not measured")

    def test_avx2_only_machine_has_the_peak_target_alone(self):
        rows = peers.target_rows(figures(avx512=False), 5000.0, ("PyTorch eager", 5000.0))
        self.assertEqual([t for t, _ in rows], ["the fp32 step ≥ 70% of the measured FMA peak",
                                                "every encoding within 15% of NoPE (blocks kernel)"])


if __name__ == "__main__":
    unittest.main()
