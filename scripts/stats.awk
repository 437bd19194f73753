# stats.awk — the statistics every experiment script reports, as awk
# functions (used with `awk -f scripts/stats.awk -f -` or -e).
#
# An experiment's number is a mean over seeds with its 95% confidence
# interval from Student's t distribution: mean ± t(0.975, n−1)·s/√n, s the
# sample standard deviation. A difference between two sets of seeds is
# Welch's: its interval uses the two variances and the Welch–Satterthwaite
# degrees of freedom (rounded down, which widens it a little).

# t(0.975, df): the two-sided 95% quantile of Student's t.
function t975(df,    k) {
    if (df < 1) return 0
    split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", T, " ")
    k = int(df)
    if (k <= 30) return T[k]
    if (k <= 40) return 2.021
    if (k <= 60) return 2.000
    if (k <= 120) return 1.980
    return 1.960
}

# Mean, sample variance and 95% half-width of x[1..n] into r["mean"],
# r["var"], r["half"] (half is -1 when n < 2: no interval).
function summarize(x, n, r,    i, s, q, m) {
    s = 0
    for (i = 1; i <= n; i++) s += x[i]
    m = n ? s / n : 0
    q = 0
    for (i = 1; i <= n; i++) q += (x[i] - m) ^ 2
    r["mean"] = m
    r["var"] = n > 1 ? q / (n - 1) : 0
    r["half"] = n > 1 ? t975(n - 1) * sqrt(r["var"] / n) : -1
}

# "0.812 ± 0.034" (or "0.812" alone for one seed), with fmt for the numbers.
function mean_ci(x, n, fmt,    r) {
    summarize(x, n, r)
    if (r["half"] < 0) return sprintf(fmt, r["mean"])
    return sprintf(fmt " ± " fmt, r["mean"], r["half"])
}

# The median of x[1..n] (x is sorted in place).
function median(x, n,    i, j, t) {
    for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
    if (n == 0) return ""
    return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
}

# Welch's difference mean(a) − mean(b) with its 95% interval into r["diff"],
# r["lo"], r["hi"], r["df"]; r["half"] is -1 when either side has n < 2.
function welch(a, na, b, nb, r,    ra, rb, va, vb, df) {
    summarize(a, na, ra)
    summarize(b, nb, rb)
    r["diff"] = ra["mean"] - rb["mean"]
    if (na < 2 || nb < 2) { r["half"] = -1; return }
    va = ra["var"] / na; vb = rb["var"] / nb
    if (va + vb == 0) { r["half"] = 0; r["lo"] = r["hi"] = r["diff"]; r["df"] = na + nb - 2; return }
    df = (va + vb) ^ 2 / (va ^ 2 / (na - 1) + vb ^ 2 / (nb - 1))
    r["df"] = df
    r["half"] = t975(df) * sqrt(va + vb)
    r["lo"] = r["diff"] - r["half"]
    r["hi"] = r["diff"] + r["half"]
}
