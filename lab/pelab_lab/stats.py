"""Intervals and comparisons: every number of every table comes from here.

An experiment's number is a mean over seeds with its 95% t-interval. A
comparison is paired when both sides have the same seeds (same data, and
for evaluations of one checkpoint the same model): the interval is the
t-interval of the per-seed differences. Otherwise it is Welch's. Both report
n and the smallest difference this n detects with 80% power at α = 0.05
(two-sided), from statsmodels' power solvers.
"""
from dataclasses import dataclass
import math

import numpy as np
from scipy import stats as sps
from statsmodels.stats.power import TTestIndPower, TTestPower

ALPHA = 0.05
POWER = 0.8


@dataclass
class Estimate:
    mean: float
    lo: float
    hi: float
    n: int
    sd: float

    @property
    def half(self):
        return (self.hi - self.lo) / 2

    def fmt(self, digits=3):
        if self.n == 0 or math.isnan(self.mean):
            return "—"
        if self.n < 2 or math.isnan(self.half):
            return f"{self.mean:.{digits}f} (n={self.n})"
        return f"{self.mean:.{digits}f} ± {self.half:.{digits}f}"


def mean_ci(values, bounds=None):
    """Mean and 95% t-interval of the finite values. bounds=(lo, hi) clips the
    interval to what the quantity can take (an accuracy stays in [0, 1])."""
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    n = len(x)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, math.nan)
    m = float(x.mean())
    if n < 2:
        return Estimate(m, math.nan, math.nan, 1, math.nan)
    sd = float(x.std(ddof=1))
    h = float(sps.t.ppf(1 - ALPHA / 2, n - 1)) * sd / math.sqrt(n)
    lo, hi = m - h, m + h
    if bounds:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return Estimate(m, lo, hi, n, sd)


@dataclass
class Comparison:
    test: str          # "paired t" or "Welch t"
    diff: float        # mean(A) - mean(B)
    lo: float
    hi: float
    n_a: int
    n_b: int
    p: float
    mde: float         # smallest |difference| detectable with 80% power

    @property
    def verdict(self):
        if math.isnan(self.lo):
            return "too few runs"
        return "differ" if self.lo > 0 or self.hi < 0 else "not told apart"


def min_detectable_paired(n, sd):
    if n < 2 or not np.isfinite(sd):
        return math.nan
    d = TTestPower().solve_power(nobs=n, alpha=ALPHA, power=POWER, alternative="two-sided")
    return float(d * sd)


def min_detectable_welch(n_a, n_b, sd_a, sd_b):
    if n_a < 2 or n_b < 2:
        return math.nan
    pooled = math.sqrt(((n_a - 1) * sd_a ** 2 + (n_b - 1) * sd_b ** 2) / (n_a + n_b - 2))
    d = TTestIndPower().solve_power(nobs1=n_a, ratio=n_b / n_a, alpha=ALPHA, power=POWER, alternative="two-sided")
    return float(d * pooled)


def paired(a, b):
    """a, b: equal-length sequences, element i of each from the same seed."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    d = d[np.isfinite(d)]
    e = mean_ci(d)
    p = float(sps.ttest_1samp(d, 0.0).pvalue) if e.n >= 2 and e.sd > 0 else math.nan
    return Comparison("paired t", e.mean, e.lo, e.hi, e.n, e.n, p, min_detectable_paired(e.n, e.sd))


def welch(a, b):
    a = np.asarray([v for v in a if np.isfinite(v)], dtype=float)
    b = np.asarray([v for v in b if np.isfinite(v)], dtype=float)
    na, nb = len(a), len(b)
    diff = float(a.mean() - b.mean()) if na and nb else math.nan
    if na < 2 or nb < 2:
        return Comparison("Welch t", diff, math.nan, math.nan, na, nb, math.nan, math.nan)
    va, vb = a.var(ddof=1) / na, b.var(ddof=1) / nb
    se = math.sqrt(va + vb)
    if se == 0:
        return Comparison("Welch t", diff, diff, diff, na, nb, math.nan, 0.0)
    df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    h = float(sps.t.ppf(1 - ALPHA / 2, df)) * se
    p = float(sps.ttest_ind(a, b, equal_var=False).pvalue)
    return Comparison("Welch t", diff, diff - h, diff + h, na, nb, p,
                      min_detectable_welch(na, nb, float(a.std(ddof=1)), float(b.std(ddof=1))))


def solved_fraction(solved, n):
    """Clopper–Pearson 95% interval of a count of successes."""
    lo = 0.0 if solved == 0 else float(sps.beta.ppf(ALPHA / 2, solved, n - solved + 1))
    hi = 1.0 if solved == n else float(sps.beta.ppf(1 - ALPHA / 2, solved + 1, n - solved))
    return lo, hi
