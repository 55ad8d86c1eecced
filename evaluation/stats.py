"""Comparison statistics over per-query scores: bootstrap confidence intervals and paired tests.

- :func:`bootstrap_ci`: percentile bootstrap of the mean over queries (scipy.stats.bootstrap,
  ``method="percentile"``), seeded. Percentile rather than BCa because BCa's jackknife is
  O(n²) over queries and degenerates for constant data.
- :func:`paired_randomization_test`: two-sided sign-flip randomization test of the mean paired
  difference (scipy.stats.permutation_test, ``permutation_type="samples"``): exact when
  2**n <= n_resamples, else Monte Carlo with p = (hits + 1) / (n_resamples + 1).
- :func:`paired_t_test`: two-sided paired t-test (scipy.stats.ttest_rel).
- :func:`compare_methods`: all of it for a long per-query table, with Holm's step-down correction
  over the method pairs (on the randomization p-values) by default.

NaN / None values are excluded (undefined queries); paired tests use only the queries where both
methods have a defined value.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

#: Largest number of resampled values held in memory at once (resamples x queries).
_BATCH_VALUES = 10_000_000

#: Paired differences whose spread is below this are treated as constant (float noise).
_CONSTANT_TOLERANCE = 1e-12


def _as_float(values: object, where: str) -> np.ndarray:
    """A flat float array (None -> NaN)."""
    try:
        return np.ravel(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected numbers (NaN/None for undefined), got {values!r:.80}") from None


def _defined(values: object, where: str) -> np.ndarray:
    array = _as_float(values, where)
    return array[~np.isnan(array)]


def _pairs(a: object, b: object) -> np.ndarray:
    """Paired differences a - b over the pairs where both are defined."""
    first, second = _as_float(a, "a"), _as_float(b, "b")
    if first.shape != second.shape:
        raise ValueError(f"paired test: a and b must have the same length, got {len(first)} and {len(second)}")
    both = ~(np.isnan(first) | np.isnan(second))
    return first[both] - second[both]


def _batch(n: int) -> int:
    return max(1, _BATCH_VALUES // max(n, 1))


def bootstrap_ci(values: object, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean; (nan, nan) without defined values."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    data = _defined(values, "values")
    if len(data) == 0:
        return (np.nan, np.nan)
    if np.ptp(data) == 0:
        return (float(data[0]), float(data[0]))
    result = stats.bootstrap((data,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
                             method="percentile", vectorized=True, batch=_batch(len(data)),
                             rng=np.random.default_rng(seed))
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def paired_randomization_test(a: object, b: object, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of the sign-flip randomization test of mean(a - b) = 0."""
    diff = _pairs(a, b)
    if len(diff) == 0:
        return np.nan
    if not diff.any():
        return 1.0
    result = stats.permutation_test((diff, np.zeros_like(diff)), _mean_difference, permutation_type="samples",
                                    n_resamples=n_resamples, vectorized=True, batch=_batch(len(diff)),
                                    rng=np.random.default_rng(seed))
    return float(min(result.pvalue, 1.0))


def paired_t_test(a: object, b: object) -> float:
    """Two-sided paired t-test p-value; NaN with fewer than 2 pairs. When the differences are constant
    (spread <= 1e-12, i.e. float noise; the t statistic is then 0/0 or ±inf): 1.0 if they are 0, else 0.0."""
    diff = _pairs(a, b)
    if len(diff) < 2:
        return np.nan
    if np.ptp(diff) <= _CONSTANT_TOLERANCE * max(1.0, abs(float(diff.mean()))):
        return 1.0 if abs(float(diff.mean())) <= _CONSTANT_TOLERANCE else 0.0
    return float(stats.ttest_1samp(diff, 0.0).pvalue)


def holm_adjust(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values: p_(i) * (m - i + 1), cumulative max, capped at 1 (NaN kept)."""
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(len(p), np.nan)
    defined = np.flatnonzero(~np.isnan(p))
    order = defined[np.argsort(p[defined], kind="stable")]
    m = len(order)
    adjusted[order] = np.minimum(np.maximum.accumulate(p[order] * (m - np.arange(m))), 1.0)
    return adjusted


CORRECTIONS = ("holm", None)


def compare_methods(per_query: pd.DataFrame, metric: str, method_col: str = "method", query_col: str = "qid",
                    confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0, alpha: float = 0.05,
                    correction: str | None = "holm") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary per method and paired tests between every pair of methods on one metric.

    ``per_query`` is long: one row per (method, query) with a column ``metric``. Returns
    ``summary`` (method, mean, ci_low, ci_high, n, n_undefined) and ``pairwise`` (method_a,
    method_b, n_pairs, mean_diff = mean(a - b), p_randomization, p_ttest, p_adjusted, significant,
    test). ``significant`` = p_adjusted < alpha, p_adjusted being the Holm-adjusted randomization
    p-value (or the raw one with ``correction=None``).
    """
    missing = [column for column in (method_col, query_col, metric) if column not in per_query.columns]
    if missing:
        raise ValueError(f"per_query: missing column(s) {missing}; has {list(per_query.columns)}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction: expected 'holm' or None, got {correction!r}")
    if per_query.duplicated([method_col, query_col]).any():
        raise ValueError(f"per_query: a ({method_col}, {query_col}) pair occurs twice")
    values = per_query[metric].astype(np.float64)
    methods = list(dict.fromkeys(per_query[method_col]))
    summary_rows = []
    for method in methods:
        scores = values[per_query[method_col] == method].to_numpy()
        defined = scores[~np.isnan(scores)]
        low, high = bootstrap_ci(defined, confidence, n_resamples, seed)
        summary_rows.append({"method": method, "mean": float(defined.mean()) if len(defined) else np.nan,
                             "ci_low": low, "ci_high": high, "n": len(defined), "n_undefined": len(scores) - len(defined)})
    wide = per_query.assign(**{metric: values}).pivot(index=query_col, columns=method_col, values=metric)
    pair_rows = []
    for method_a, method_b in combinations(methods, 2):
        a, b = wide[method_a].to_numpy(), wide[method_b].to_numpy()
        diff = _pairs(a, b)
        pair_rows.append({"method_a": method_a, "method_b": method_b, "n_pairs": len(diff),
                          "mean_diff": float(diff.mean()) if len(diff) else np.nan,
                          "p_randomization": paired_randomization_test(a, b, n_resamples, seed),
                          "p_ttest": paired_t_test(a, b)})
    pairwise = pd.DataFrame(pair_rows, columns=["method_a", "method_b", "n_pairs", "mean_diff", "p_randomization", "p_ttest"])
    raw = pairwise["p_randomization"].to_numpy(dtype=np.float64)
    pairwise["p_adjusted"] = holm_adjust(raw) if correction == "holm" else raw
    pairwise["significant"] = pairwise["p_adjusted"] < alpha
    pairwise["test"] = (f"paired randomization (sign flip, {n_resamples} resamples, seed {seed})"
                        + (", Holm-adjusted" if correction == "holm" else ""))
    return pd.DataFrame(summary_rows), pairwise
