"""Attainable p-values and minimum detectable differences against brute force: every sign-flip
pattern enumerated, Holm's procedure on every placement of the smallest p, and the t-test's power
simulated with scipy's own test."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from evaluation import (
    compare_methods, holm_adjust, minimum_detectable_difference, paired_randomization_test, pairs_needed,
    smallest_adjusted_p, smallest_p,
)


def brute_force_p(diff: np.ndarray) -> float:
    """Two-sided sign-flip p by enumerating all 2**n patterns."""
    observed = abs(diff.sum())
    hits = sum(abs(np.dot(diff, signs)) >= observed - 1e-12 for signs in itertools.product([1, -1], repeat=len(diff)))
    return hits / 2 ** len(diff)


def brute_force_smallest_p(n: int) -> float:
    """The smallest p over every sign pattern of n distinct magnitudes (the minimum is at same signs)."""
    magnitudes = np.arange(1, n + 1) + 0.1 * np.arange(n) ** 2
    return min(brute_force_p(magnitudes * np.array(signs)) for signs in itertools.product([1, -1], repeat=n))


@pytest.mark.parametrize("n", range(1, 10))
def test_smallest_p_equals_brute_force_enumeration(n: int) -> None:
    assert smallest_p(n) == brute_force_smallest_p(n) == 2.0 ** (1 - n)
    same_sign = np.linspace(0.1, 0.9, n)
    assert paired_randomization_test(same_sign, np.zeros(n)) == pytest.approx(smallest_p(n))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=9))
def test_no_data_goes_below_the_smallest_p(values: list[float]) -> None:
    diff = np.asarray(values)
    assert paired_randomization_test(diff, np.zeros(len(diff))) >= smallest_p(len(diff)) - 1e-15


def test_monte_carlo_floor() -> None:
    assert smallest_p(14, n_resamples=10_000) == 1 / 10_001  # 2**14 > 10,000: Monte Carlo
    assert smallest_p(13, n_resamples=10_000) == 2.0**-12  # 2**13 <= 10,000: exact
    assert smallest_p(20, n_resamples=999) == 1 / 1000
    rng = np.random.default_rng(0)
    same_sign = rng.random(40) + 0.1  # no resample reaches the observed sum: (0 + 1) / (R + 1)
    assert paired_randomization_test(same_sign, np.zeros(40), n_resamples=999) == smallest_p(40, 999)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 15])
@pytest.mark.parametrize("n", [3, 7, 10])
def test_smallest_holm_p_equals_brute_force(n: int, m: int) -> None:
    """Holm over m tests whose raw p-values are attainable by the sign-flip test on n pairs (k / 2**n,
    k >= 2): the smallest adjusted p over every vector (m <= 3; random vectors beyond) is min(1, m * 2**(1 - n))."""
    attainable = np.array([k / 2**n for k in range(2, 2**n + 1, 2)])[:12]  # the smallest ones decide
    if m <= 3:
        vectors = itertools.product(attainable, repeat=m)
    else:
        rng = np.random.default_rng(m * n)
        vectors = [rng.choice(attainable, size=m) for _ in range(500)] + [[attainable[0]] + [1.0] * (m - 1)]
    assert min(holm_adjust(list(ps)).min() for ps in vectors) == pytest.approx(smallest_adjusted_p(n, m))


def test_the_issue_example() -> None:
    """7 answered questions, 6 methods (15 pairs), Holm: at best 15 * 2 / 128 = 0.234."""
    assert smallest_adjusted_p(7, 15) == pytest.approx(0.234375)
    assert pairs_needed(15) == 10  # 15 * 2**-9 = 0.029 < 0.05; 15 * 2**-8 = 0.059
    assert pairs_needed(5) == 8  # 5 * 2**-7 = 0.039
    assert pairs_needed(1000, n_resamples=10_000) is None  # 1000 / 10,001 >= 0.05


@pytest.mark.parametrize(("n", "level"), [(8, 0.05), (7, 0.05 / 15), (12, 0.01), (30, 0.05 / 15), (200, 0.05)])
def test_minimum_detectable_difference_has_the_stated_power(n: int, level: float) -> None:
    """At a true shift of MDD the paired t-test (scipy.stats.ttest_1samp) rejects in 80% of normal samples."""
    rng = np.random.default_rng(n)
    observed = rng.normal(0, 0.3, n)
    mdd = minimum_detectable_difference(observed, level)
    spread = observed.std(ddof=1)
    samples = rng.normal(mdd, spread, size=(20_000, n))
    rejected = scipy_stats.ttest_1samp(samples, 0.0, axis=1).pvalue < level
    assert rejected.mean() == pytest.approx(0.8, abs=0.012)


def test_minimum_detectable_difference_large_n_is_the_normal_formula() -> None:
    rng = np.random.default_rng(1)
    diff = rng.normal(0, 1, 5000)
    z = scipy_stats.norm.ppf(1 - 0.025) + scipy_stats.norm.ppf(0.8)
    assert minimum_detectable_difference(diff, 0.05) == pytest.approx(z * diff.std(ddof=1) / math.sqrt(5000), rel=2e-3)
    assert math.isnan(minimum_detectable_difference([0.2, 0.2, 0.2], 0.05))
    assert math.isnan(minimum_detectable_difference([0.2], 0.05))


def test_compare_methods_reports_power() -> None:
    rng = np.random.default_rng(2)
    methods = ["a", "b", "c", "d", "e", "f"]
    rows = [{"method": m, "qid": f"q{i}", "f1": rng.random()} for m in methods for i in range(7)]
    _, pairwise = compare_methods(pd.DataFrame(rows), "f1")
    assert pairwise["smallest_p_adjusted"].tolist() == pytest.approx([15 * 2 / 2**7] * 15)
    assert pairwise["underpowered"].all() and np.isinf(pairwise["mdd"]).all() and not pairwise["significant"].any()
    _, control = compare_methods(pd.DataFrame(rows), "f1", control="a")
    assert list(control["method_b"]) == ["a"] * 5 and list(control["method_a"]) == methods[1:]
    assert control["smallest_p_adjusted"].tolist() == pytest.approx([5 * 2 / 2**7] * 5)
    rows = [{"method": m, "qid": f"q{i}", "f1": rng.random()} for m in methods[:2] for i in range(30)]
    _, two = compare_methods(pd.DataFrame(rows), "f1")
    diff = pd.DataFrame(rows).pivot(index="qid", columns="method", values="f1")
    assert not two["underpowered"].iloc[0]
    assert two["mdd"].iloc[0] == pytest.approx(minimum_detectable_difference(diff["a"] - diff["b"], 0.05))
