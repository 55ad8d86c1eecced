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
