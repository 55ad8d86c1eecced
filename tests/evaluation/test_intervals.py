"""The difference's interval (the inverted sign-flip test) and the topic-set-size figure, each against an
oracle of its own: the interval against the p-value of :func:`paired_randomization_test` on shifted data
(brute force over a grid of shifts), and scipy's t-interval for large n; ``questions_needed`` against the
formula written out here and against simulated experiments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evaluation import paired_randomization_test, questions_needed, randomization_interval


def _agrees_with_the_test(a: np.ndarray, b: np.ndarray, level: float, n_resamples: int) -> None:
    low, high = randomization_interval(a, b, level, n_resamples, seed=3)
    d = a - b
    spread = max(float(np.ptp(d)), 0.1)
    for shift in np.linspace(d.mean() - 2 * spread, d.mean() + 2 * spread, 81):
        if min(abs(shift - low), abs(shift - high)) < 1e-9:
            continue  # on an end: the test's float tolerance decides
        p = paired_randomization_test(a - shift, b, n_resamples, seed=3)
        assert (low <= shift <= high) == (p >= level), (shift, p, low, high)


@pytest.mark.parametrize("n", [5, 8, 13])
def test_exact_interval_is_the_set_of_shifts_the_exact_test_keeps(n: int) -> None:
    rng = np.random.default_rng(n)
    a = rng.random(n)
    _agrees_with_the_test(a, a - 0.1 + rng.normal(0, 0.15, n), 0.05, 10_000)


@pytest.mark.parametrize("level", [0.05, 0.05 / 3])
def test_monte_carlo_interval_is_the_set_of_shifts_the_test_keeps(level: float) -> None:
    rng = np.random.default_rng(7)
    a = rng.random(60)
    _agrees_with_the_test(a, a + rng.normal(0.02, 0.2, 60), level, 2_000)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=11), st.sampled_from([0.05, 0.1, 0.3]))
def test_interval_holds_the_mean_and_matches_the_test_on_any_data(values: list[float], level: float) -> None:
    d = np.array(values)
    low, high = randomization_interval(d, np.zeros_like(d), level)
    assert low <= d.mean() + 1e-12 and d.mean() - 1e-12 <= high
    _agrees_with_the_test(d, np.zeros_like(d), level, 10_000)


def test_too_few_pairs_leave_the_interval_unbounded() -> None:
    """4 pairs: the smallest exact p is 2 / 16 = 0.125 > 0.05, so no shift is rejected."""
    assert randomization_interval([0.9, 0.8, 0.7, 0.95], [0.1, 0.2, 0.1, 0.0]) == (-np.inf, np.inf)


def test_constant_differences_give_a_point() -> None:
    low, high = randomization_interval([0.5] * 20, [0.3] * 20)
    assert low == pytest.approx(0.2) and high == pytest.approx(0.2)


def test_large_sample_interval_is_close_to_the_t_interval() -> None:
    rng = np.random.default_rng(11)
    d = rng.normal(0.03, 0.2, 600)
    low, high = randomization_interval(d, np.zeros(600), 0.05, 10_000)
    t_low, t_high = stats.t.interval(0.95, 599, loc=d.mean(), scale=d.std(ddof=1) / np.sqrt(600))
    assert low == pytest.approx(t_low, abs=0.002) and high == pytest.approx(t_high, abs=0.002)


def test_questions_needed_is_the_smallest_n_of_the_formula() -> None:
    sd, distance, level = 0.15, 0.03, 0.05 / 3
    n = questions_needed(sd, distance, level)

    def width(m: int) -> float:
        return (stats.t.ppf(1 - level / 2, m - 1) + stats.t.ppf(0.8, m - 1)) * sd / np.sqrt(m)

    assert width(n) <= distance < width(n - 1)
    assert questions_needed(sd, 0.0, level) is None and questions_needed(sd, -0.01, level) is None
    assert questions_needed(0.0, 0.01, level) == 2
    assert questions_needed(0.3, 1e-5, level) is None  # beyond any practical set


def test_questions_needed_gives_the_power_it_promises() -> None:
    """Simulated experiments of the named size clear the bound in about 80% of draws (t-intervals)."""
    sd, distance, level = 0.2, 0.05, 0.05
    n = questions_needed(sd, distance, level)
    rng = np.random.default_rng(5)
    draws = rng.normal(distance, sd, size=(4000, n))  # true difference `distance` above the bound 0
    half = stats.t.ppf(1 - level / 2, n - 1) * draws.std(axis=1, ddof=1) / np.sqrt(n)
    cleared = np.mean(draws.mean(axis=1) - half > 0)
    assert 0.77 <= cleared <= 0.86
    fewer = draws[:, : n - 6]
    half = stats.t.ppf(1 - level / 2, n - 7) * fewer.std(axis=1, ddof=1) / np.sqrt(n - 6)
    assert np.mean(fewer.mean(axis=1) - half > 0) < cleared
