"""Statistics of the belief probe (Section 3.2 of *Tracking Is Not Permanence*).

Each time point pools 60 independent scene decisions, so P(present) is a binomial proportion;
comparisons with a control pair the same scenes, so they use a paired t-test on e.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def binomial_ci(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson (exact) interval for k successes in n trials.

    Exact rather than Wald because the curves sit at 0 and 1, where a Wald interval collapses to
    a point; it also reproduces the paper's "binomial 95% half-width 0.13 at 0.5" for n = 60.
    n = 0 gives (nan, nan).
    """
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def paired_t(a, b) -> tuple[float, float]:
    """Paired t-test of a against b (two-sided): (t, p).

    Pairs with a NaN on either side are dropped (e is NaN where the two references coincide).
    Returns (nan, nan) when fewer than two pairs remain or the differences have zero variance,
    where the test is undefined.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    diff = a[keep] - b[keep]
    if diff.size < 2 or np.all(diff == diff[0]):
        return math.nan, math.nan
    result = stats.ttest_rel(a[keep], b[keep])
    return float(result.statistic), float(result.pvalue)
