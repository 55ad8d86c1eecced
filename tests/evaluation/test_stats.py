"""Comparison statistics against independent oracles: exact enumeration of sign flips, the t
formula written out, Holm's procedure by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from evaluation import bootstrap_ci, compare_methods, holm_adjust, paired_randomization_test, paired_t_test


def exact_sign_flip_p(a, b):
    diff = np.asarray(a, float) - np.asarray(b, float)
    observed = abs(diff.mean())
    flips = [abs(np.mean(diff * np.array(signs))) for signs in itertools.product([1, -1], repeat=len(diff))]
    return sum(value >= observed - 1e-12 for value in flips) / len(flips)


@pytest.mark.parametrize("seed", range(5))
def test_randomization_test_is_exact_for_small_samples(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.random(8), rng.random(8)
    assert paired_randomization_test(a, b) == pytest.approx(exact_sign_flip_p(a, b))


def test_randomization_test_monte_carlo_is_seeded_and_close_to_t_test():
    rng = np.random.default_rng(0)
    a = rng.random(200)
    b = a - 0.03 + rng.normal(0, 0.2, 200)
    p = paired_randomization_test(a, b, seed=1)
    assert p == paired_randomization_test(a, b, seed=1)
    assert abs(p - paired_t_test(a, b)) < 0.03


def test_t_test_formula():
    a, b = [0.9, 0.7, 0.8, 0.4, 0.65], [0.5, 0.6, 0.85, 0.1, 0.6]
    d = np.subtract(a, b)
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    assert paired_t_test(a, b) == pytest.approx(2 * scipy_stats.t.sf(abs(t), len(d) - 1))


def test_undefined_values_are_dropped_pairwise():
    a, b = [1.0, None, 0.5, float("nan"), 0.2], [0.0, 0.3, float("nan"), 0.1, 0.1]
    assert paired_randomization_test(a, b) == pytest.approx(exact_sign_flip_p([1.0, 0.2], [0.0, 0.1]))
    assert math.isnan(paired_t_test([1.0, None], [0.0, 0.3]))
    assert paired_randomization_test([0.3, 0.4], [0.3, 0.4]) == 1.0
    assert paired_t_test([0.3, 0.4], [0.3, 0.4]) == 1.0


def test_bootstrap_ci():
    rng = np.random.default_rng(3)
    values = rng.random(300)
    low, high = bootstrap_ci(values, seed=7)
    assert (low, high) == bootstrap_ci(values, seed=7)
    half_width = 1.96 * values.std(ddof=1) / math.sqrt(len(values))  # normal approximation
    assert low == pytest.approx(values.mean() - half_width, abs=0.01)
    assert high == pytest.approx(values.mean() + half_width, abs=0.01)
    assert bootstrap_ci([0.5, None, float("nan"), 0.5]) == (0.5, 0.5)
    assert all(math.isnan(x) for x in bootstrap_ci([None, float("nan")]))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(values, confidence=95)


def test_holm_by_hand():
    # sorted p: 0.01 (x3 = 0.03), 0.02 (x2 = 0.04), 0.04 (x1 = 0.04)
    assert holm_adjust([0.04, 0.01, 0.02]).tolist() == pytest.approx([0.04, 0.03, 0.04])
    assert holm_adjust([0.5, 0.6]).tolist() == pytest.approx([1.0, 1.0])


def test_compare_methods_tables():
    rng = np.random.default_rng(5)
    base = rng.random(40)
    per_query = pd.DataFrame({
        "method": ["dense"] * 40 + ["bm25"] * 40 + ["hybrid"] * 40,
        "qid": [f"q{i}" for i in range(40)] * 3,
        "ndcg@10": np.concatenate([base, base + 0.2, base + rng.normal(0, 0.01, 40)]),
    })
    per_query.loc[3, "ndcg@10"] = np.nan  # dense undefined on q3
    summary, pairwise = compare_methods(per_query, "ndcg@10", n_resamples=2000)
    assert list(summary["method"]) == ["dense", "bm25", "hybrid"]
    dense = summary.iloc[0]
    assert (dense["n"], dense["n_undefined"]) == (39, 1)
    assert dense["mean"] == pytest.approx(np.delete(base, 3).mean())
    assert dense["ci_low"] < dense["mean"] < dense["ci_high"]
    first = pairwise.iloc[0]
    assert (first["method_a"], first["method_b"], first["n_pairs"]) == ("dense", "bm25", 39)
    assert first["mean_diff"] == pytest.approx(-0.2)
    assert first["significant"] and first["p_ttest"] < 1e-10
    assert first["p_adjusted"] >= first["p_randomization"]
    assert "randomization" in first["test"] and "Holm" in first["test"]
    with pytest.raises(ValueError, match="missing column"):
        compare_methods(per_query, "mrr")


# --------------------------------------------------------------------------------------------------
# The numpy resampling against scipy's own implementations (independent draws: agreement within
# Monte Carlo error, exact agreement where both enumerate).


@pytest.mark.parametrize("seed", [0, 1])
def test_bootstrap_ci_agrees_with_scipy(seed):
    rng = np.random.default_rng(11)
    values = rng.exponential(0.3, 250)  # skewed, so the percentile interval is not symmetric
    expected = scipy_stats.bootstrap((values,), np.mean, n_resamples=10_000, method="percentile",
                                     rng=np.random.default_rng(1000 + seed)).confidence_interval
    low, high = bootstrap_ci(values, seed=seed)
    standard_error = values.std(ddof=1) / math.sqrt(len(values))
    # a 2.5% quantile of 10,000 resampled means varies by ~0.03 standard errors between draws
    assert low == pytest.approx(expected.low, abs=0.15 * standard_error)
    assert high == pytest.approx(expected.high, abs=0.15 * standard_error)


def _scipy_sign_flip_p(diff, n_resamples, seed=1000):
    return scipy_stats.permutation_test((diff, np.zeros_like(diff)), lambda x, y, axis: np.mean(x - y, axis=axis),
                                        permutation_type="samples", vectorized=True, n_resamples=n_resamples,
                                        rng=np.random.default_rng(seed)).pvalue


@pytest.mark.parametrize("shift", [0.0, 0.02, 0.08, 0.1])  # p from about 0.04 to 0.7
def test_randomization_test_agrees_with_scipy_monte_carlo(shift):
    rng = np.random.default_rng(4)
    a = rng.random(150)
    b = a - shift + rng.normal(0, 0.3, 150)
    expected = _scipy_sign_flip_p(a - b, 10_000)
    p = paired_randomization_test(a, b, seed=2)
    assert 0.001 < expected < 0.9
    assert p == pytest.approx(expected, abs=4 * math.sqrt(expected * (1 - expected) / 10_000) + 0.001)


def test_randomization_test_agrees_with_scipy_exact_with_ties():
    # differences on a grid of thirds: many sign patterns tie with the observed statistic up to float noise
    a = np.array([1, 2, 0, 3, 1, 2, 2, 0, 3, 1, 2, 1]) / 3
    b = np.array([0, 1, 0, 1, 2, 1, 0, 1, 2, 0, 2, 0]) / 3
    assert paired_randomization_test(a, b) == pytest.approx(_scipy_sign_flip_p(a - b, 10_000), abs=1e-12)
    assert paired_randomization_test(a, b) == pytest.approx(exact_sign_flip_p(a, b), abs=1e-12)


def test_monte_carlo_p_value_definition():
    # all differences of one sign and far from 0: no random sign vector reaches |sum|, so hits = 0 and
    # p = 1 / (n_resamples + 1) unless the identity (or its negation) is drawn
    diff = np.full(40, 0.5) + np.linspace(0, 0.1, 40)
    assert paired_randomization_test(diff, np.zeros(40), n_resamples=999) == pytest.approx(1 / 1000)
    assert paired_randomization_test([1.0], [0.5]) == 1.0  # exact: both sign flips reach |sum|


def test_batched_and_cached_draws_are_reproducible(monkeypatch):
    from evaluation import stats

    rng = np.random.default_rng(8)
    a, b = rng.random(90), rng.random(90)
    whole = (bootstrap_ci(a, seed=3), paired_randomization_test(a, b, seed=3))
    assert whole == (bootstrap_ci(a, seed=3), paired_randomization_test(a, b, seed=3))  # cached draws
    monkeypatch.setattr(stats, "_BATCH_VALUES", 90 * 700)  # 15 batches, not cached
    monkeypatch.setattr(stats, "_CACHE_VALUES", 0)
    batched = (bootstrap_ci(a, seed=3), paired_randomization_test(a, b, seed=3))
    assert batched == (bootstrap_ci(a, seed=3), paired_randomization_test(a, b, seed=3))
    assert batched[0] == pytest.approx(whole[0], abs=0.01)
    assert batched[1] == pytest.approx(whole[1], abs=0.03)


def test_compare_methods_matches_the_single_tests():
    rng = np.random.default_rng(9)
    scores = {"x": rng.random(60), "y": rng.random(60), "z": rng.random(60)}
    scores["z"][[2, 7]] = np.nan  # another length for z's interval and its pairs
    per_query = pd.DataFrame({"method": np.repeat(list(scores), 60), "qid": list(range(60)) * 3,
                              "m": np.concatenate(list(scores.values()))})
    summary, pairwise = compare_methods(per_query, "m", n_resamples=3000, seed=4)
    for row in summary.itertuples():
        expected = bootstrap_ci(scores[row.method], n_resamples=3000, seed=4)
        assert (row.ci_low, row.ci_high) == pytest.approx(expected, abs=1e-12)
    for row in pairwise.itertuples():
        a, b = scores[row.method_a], scores[row.method_b]
        assert row.p_randomization == pytest.approx(paired_randomization_test(a, b, n_resamples=3000, seed=4), abs=1e-12)
        assert row.p_ttest == paired_t_test(a, b)
