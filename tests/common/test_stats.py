import math

import numpy as np
import pytest
from scipy import stats
from worldmemory.common.stats import binomial_ci, paired_t


def test_half_width_at_one_half_matches_paper():
    # Section 3.2: "binomial 95% half-width 0.13 at 0.5" for 60 scenes.
    lo, hi = binomial_ci(30, 60)
    assert (hi - lo) / 2 == pytest.approx(0.13, abs=0.01)
    assert lo < 0.5 < hi


def test_interval_reaches_the_bounds():
    assert binomial_ci(0, 60)[0] == 0.0
    assert binomial_ci(60, 60)[1] == 1.0
    # Clopper-Pearson at k = 0: upper bound 1 - (alpha/2)^(1/n).
    assert binomial_ci(0, 60)[1] == pytest.approx(1 - 0.025 ** (1 / 60))


def test_empty_interval_is_nan():
    assert all(math.isnan(x) for x in binomial_ci(0, 0))


def test_paired_t_matches_scipy():
    rng = np.random.default_rng(0)
    a = rng.normal(size=60)
    b = a - 0.1 + rng.normal(scale=0.05, size=60)
    expected = stats.ttest_rel(a, b)
    t, p = paired_t(a, b)
    assert t == pytest.approx(expected.statistic)
    assert p == pytest.approx(expected.pvalue)


def test_paired_t_drops_nan_pairs():
    a = np.array([1.0, 2.0, np.nan, 4.5, 3.0])
    b = np.array([0.5, 1.0, 7.0, 4.0, np.nan])
    expected = stats.ttest_rel([1.0, 2.0, 4.5], [0.5, 1.0, 4.0])
    assert paired_t(a, b) == pytest.approx((expected.statistic, expected.pvalue))


@pytest.mark.parametrize("a, b", [([1.0], [0.0]), ([1.0, 2.0, 3.0], [0.5, 1.5, 2.5])])
def test_paired_t_undefined_is_nan(a, b):
    t, p = paired_t(a, b)
    assert math.isnan(t) and math.isnan(p)
