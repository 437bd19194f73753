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
import warnings

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

    @property
    def clipped(self):
        """The interval was cut at a bound of the quantity (an accuracy at 0
        or 1), so it is no longer symmetric about the mean."""
        return not math.isnan(self.half) and abs((self.mean - self.lo) - (self.hi - self.mean)) > 1e-9 * max(1.0, abs(self.mean))

    def fmt(self, digits=3):
        """mean ± half-width; a clipped interval as mean [lo, hi] (a "±"
        would reach past the bound)."""
        if self.n == 0 or math.isnan(self.mean):
            return "—"
        if self.n < 2 or math.isnan(self.half):
            return f"{self.mean:.{digits}f} (n={self.n})"
        if self.clipped:
            return f"{self.mean:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"
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
    with np.errstate(all="ignore"), warnings.catch_warnings():  # SciPy's noncentral t at n = 2 warns, and converges
        warnings.simplefilter("ignore", RuntimeWarning)
        d = TTestPower().solve_power(nobs=n, alpha=ALPHA, power=POWER, alternative="two-sided")
    return float(d * sd)


def min_detectable_welch(n_a, n_b, sd_a, sd_b):
    if n_a < 2 or n_b < 2:
        return math.nan
    pooled = math.sqrt(((n_a - 1) * sd_a ** 2 + (n_b - 1) * sd_b ** 2) / (n_a + n_b - 2))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
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


# ---- time to solve (the order task): a time to event, censored at a cap ----

def _common_cap(times, solved):
    """The one step every unsolved run was censored at, when no solve came
    later than it (then the fraction solved by any step is a plain binomial
    proportion); None otherwise."""
    caps = {float(t) for t, s in zip(times, solved) if not s}
    if len(caps) > 1:
        return None
    cap = caps.pop() if caps else math.inf
    return cap if all(t <= cap for t, s in zip(times, solved) if s) else None


def solved_by(times, solved, steps):
    """Fraction of runs solved by each of `steps`, with its 95% band: the
    Kaplan–Meier estimate. When every unsolved run stopped at one cap (the
    workflow's design) that is the plain fraction and the band is
    Clopper–Pearson's; otherwise statsmodels' product-limit estimate with a
    log–log (Greenwood) band. Returns (frac, lo, hi) arrays."""
    t = np.asarray(times, dtype=float)
    e = np.asarray(solved, dtype=bool)
    steps = np.asarray(steps, dtype=float)
    n = len(t)
    if n == 0:
        z = np.full(len(steps), math.nan)
        return z, z, z
    if _common_cap(t, e) is not None:
        k = np.array([int(((t <= s) & e).sum()) for s in steps])
        lo, hi = zip(*(solved_fraction(int(x), n) for x in k))
        return k / n, np.array(lo), np.array(hi)
    from statsmodels.duration.survfunc import SurvfuncRight
    sf = SurvfuncRight(t, e.astype(int))
    idx = np.searchsorted(sf.surv_times, steps, side="right") - 1
    surv = np.where(idx >= 0, sf.surv_prob[np.maximum(idx, 0)], 1.0)
    se = np.where(idx >= 0, sf.surv_prob_se[np.maximum(idx, 0)], 0.0)
    z = float(sps.norm.ppf(1 - ALPHA / 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        ll = se / (surv * np.abs(np.log(surv)))
        s_lo, s_hi = surv ** np.exp(z * ll), surv ** np.exp(-z * ll)
    s_lo = np.where(np.isfinite(s_lo), s_lo, surv)
    s_hi = np.where(np.isfinite(s_hi), s_hi, surv)
    return 1 - surv, 1 - s_hi, 1 - s_lo


def step_by_share(times, solved, share):
    """The first step by which at least `share` of the runs had solved (a
    budget rule: 0.9 is nine seeds in ten); math.inf when fewer ever did."""
    t = np.sort(np.where(np.asarray(solved, dtype=bool), np.asarray(times, dtype=float), math.inf))
    if len(t) == 0:
        return math.nan
    return float(t[math.ceil(share * len(t) - 1e-9) - 1])


def median_solve(times, solved):
    """The median step to solve: the first step by which at least half the
    runs solved (Kaplan–Meier), with a 95% interval. With one common cap the
    interval is the distribution-free one from order statistics (binomial,
    coverage ≥ 95%); otherwise statsmodels' Brookmeyer–Crowley interval.
    math.inf: not reached within the cap."""
    t = np.asarray(times, dtype=float)
    e = np.asarray(solved, dtype=bool)
    n = len(t)
    if n == 0:
        return math.nan, math.nan, math.nan
    if _common_cap(t, e) is not None:
        srt = np.sort(np.where(e, t, math.inf))
        med = float(srt[math.ceil(n / 2) - 1])
        # the widest-coverage-first search: the largest j with P(X < j) ≤ α/2, X ~ Bin(n, 1/2)
        j = int(sps.binom.ppf(ALPHA / 2, n, 0.5))
        while j > 0 and sps.binom.cdf(j - 1, n, 0.5) > ALPHA / 2:
            j -= 1
        if j < 1:  # too few runs for any interval of 95% coverage
            return med, math.nan, math.nan
        lo, hi = float(srt[j - 1]), float(srt[n - j])
        return med, lo, hi
    from statsmodels.duration.survfunc import SurvfuncRight
    sf = SurvfuncRight(t, e.astype(int))
    reached = np.flatnonzero(sf.surv_prob <= 0.5 + 1e-12)  # products of fractions: 0.5 within rounding
    med = sf.surv_times[reached[0]] if len(reached) else math.inf
    lo, hi = sf.quantile_ci(0.5)
    fix = lambda v: math.inf if v is None or not np.isfinite(v) else float(v)
    return fix(med), fix(lo), fix(hi)


def fit_at(x, y, x0):
    """The least-squares line of y on x, read at x0: (value, lo, hi), the
    95% interval of the line's mean there (not of one new run); NaNs where
    fewer than 3 pairs or a single x. At an x0 outside the x fitted this is
    an extrapolation, which the interval does not make safe: it assumes the
    line holds there."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = len(x)
    if n < 3 or np.ptp(x) == 0:
        return math.nan, math.nan, math.nan
    r = sps.linregress(x, y)
    resid = y - (r.intercept + r.slope * x)
    s = math.sqrt(float(resid @ resid) / (n - 2))
    se = s * math.sqrt(1 / n + (x0 - x.mean()) ** 2 / float(((x - x.mean()) ** 2).sum()))
    t = float(sps.t.ppf(1 - ALPHA / 2, n - 2))
    v = r.intercept + r.slope * x0
    return float(v), float(v - t * se), float(v + t * se)


def slope_ci(x, y):
    """Least-squares slope of y on x over the finite pairs: (slope, lo, hi,
    smallest slope detectable with 80% power at α = 0.05, n); NaNs where
    fewer than 3 pairs or a single x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = len(x)
    if n < 3 or np.ptp(x) == 0:
        return math.nan, math.nan, math.nan, math.nan, n
    r = sps.linregress(x, y)
    t = float(sps.t.ppf(1 - ALPHA / 2, n - 2))
    return (float(r.slope), float(r.slope - t * r.stderr), float(r.slope + t * r.stderr),
            (t + float(sps.t.ppf(POWER, n - 2))) * r.stderr, n)
