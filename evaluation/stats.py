"""Comparison statistics over per-query scores: bootstrap confidence intervals and paired tests.

- :func:`bootstrap_ci`: percentile bootstrap of the mean over queries, seeded. ``n_resamples``
  resamples of the n defined values are drawn with replacement; the interval is the
  ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the resampled means with
  linear interpolation (numpy's and scipy's default ``"linear"``, Hyndman & Fan type 7) — what
  ``scipy.stats.bootstrap(method="percentile")`` computes. Percentile rather than BCa because BCa's
  jackknife is O(n²) over queries and degenerates for constant data. Constant data gives (x, x).
- :func:`paired_randomization_test`: two-sided sign-flip randomization test of the mean paired
  difference d = a - b. The statistic is T = |sum(d)| (equivalently |mean(d)|); a resample flips the
  sign of each difference independently with probability 1/2. A resample is a hit when
  |T*| >= T - tol, tol = max(100 eps |sum d|, 4 n eps sum|d|) (a bound on the float rounding of the
  sums), so that exact ties count as hits. Exact when 2**n <= n_resamples: all 2**n sign vectors are enumerated
  and p = hits / 2**n. Otherwise Monte Carlo: p = (hits + 1) / (n_resamples + 1) (the observed
  arrangement counted once, so p > 0). All differences zero: p = 1. (scipy.stats.permutation_test,
  used before, doubles the smaller one-sided p-value instead: the same quantity, since the sign-flip
  null distribution is symmetric, with a noisier Monte Carlo estimate and a floor of 2 / (n_resamples + 1).)
- :func:`paired_t_test`: two-sided paired t-test (scipy.stats.ttest_1samp on the differences).
- :func:`compare_methods`: all of it for a long per-query table, with Holm's step-down correction
  over the method pairs (on the randomization p-values) by default; :func:`compare_metrics`: the
  same for several metrics at once (identical tables, computed together). With ``control`` the
  family is the many-to-one comparisons of every other method with that one (k - 1 tests, not
  k (k - 1) / 2).

Power, per paired comparison (columns of the pairwise table):

- :func:`smallest_p`: the smallest two-sided p-value the sign-flip test can return with n pairs,
  whatever the data: exact (2**n <= n_resamples) p = hits / 2**n and the identity and the all-flipped
  pattern always hit, so p >= 2 / 2**n = 2**(1 - n), reached when every difference has the same sign
  and no partial flip ties; Monte Carlo p = (hits + 1) / (n_resamples + 1) >= 1 / (n_resamples + 1).
- :func:`smallest_adjusted_p`: the same after the correction over m tests. Holm's adjusted p of the
  i-th smallest raw p is max_{j <= i} (m - j + 1) p_(j) >= m p_(1), so no test of the family can go below
  min(1, m * smallest_p(n)), reached by the smallest p when all others are 1 (without correction: smallest_p).
  A comparison is *underpowered* when this is >= alpha: it can never be significant at this n.
- :func:`minimum_detectable_difference`: the smallest true mean difference detected with probability
  ``power`` (80%) by the two-sided paired t-test at the level alpha / m (Holm's first, strictest step;
  Bonferroni), from the spread s of the paired differences: MDD = δ* s / sqrt(n), δ* the non-centrality
  at which the non-central t power 1 - F(t_c; n - 1, δ*) + F(-t_c; n - 1, δ*) equals ``power``, t_c the
  t quantile 1 - alpha / (2 m) with n - 1 degrees of freedom (Cohen 1988, ch. 2; for large n
  δ* -> z_{1 - alpha/(2m)} + z_power). The sign-flip test's power is close to the t-test's once its
  smallest attainable p is well below the level; inf when the comparison is underpowered.

The difference's interval, and how many questions would decide (the verdict's four outcomes read them):

- :func:`randomization_interval`: the confidence interval of the mean paired difference obtained by
  inverting the sign-flip test: every shift c for which the test of mean(d - c) = 0 is not rejected at
  ``level`` (p >= level). With the same flips for every c, each resample i (r_i flips, S_i the sum of the
  flipped differences, a_i = 2 (r_i mean(d) - S_i)) hits for the shifts in one interval around mean(d):
  below it up to a_i / (2 r_i) (a_i >= 0) or -a_i / (2 (n - r_i)) (a_i < 0), above it the other way round
  (the roots of (a_i + x (n - 2 r_i))^2 >= (n x)^2); the identity and the all-flipped pattern hit for every
  shift. p(c) is the share of resamples that hit, so the interval's ends are exact order statistics of these
  bounds: no search. Exact when 2**n <= n_resamples (every flip enumerated), Monte Carlo otherwise, with the
  same flips as the p-value: 0 lies outside the interval exactly when the raw p is below ``level``.
  Unbounded (-inf or inf) on a side where even the most extreme shift cannot be rejected (too few pairs).
  :func:`compare_metrics` gives every pair its interval at ``alpha / (k - 1)`` (Bonferroni over the k - 1
  comparisons of one method with the others: simultaneous 1 - alpha coverage for a best method's comparisons).
- :func:`questions_needed`: topic set size design (Sakai, "Topic set size design", Information Retrieval
  Journal 19, 2016) for an interval-based decision: the smallest n at which an interval of two-sided
  level ``level`` is expected to clear a bound ``distance`` away from the true difference with probability
  ``power``: (t_{1 - level/2, n - 1} + t_{power, n - 1}) s / sqrt(n) <= distance, s the standard deviation
  of the paired differences (the observed one, as Sakai's design takes a variance estimate from data).

Both resampling procedures are plain numpy: the resample matrix (multiplicities of each query per
bootstrap resample, drawn as ``rng.integers(0, n, (rows, n))`` like scipy does, or one flip bit per
query per sign-flip resample) depends only on (n, n_resamples, seed), so one draw serves every
method, pair and metric with that many defined values, and the resampled sums are one matrix
product with the data. Matrices are drawn in batches of at most ``_BATCH_VALUES`` entries, stored
at 1 byte per entry and, when small enough, kept for reuse (``_CACHE_VALUES``). The same seed gives
the same result whichever function computes it (up to float rounding in the last digit).

NaN / None values are excluded (undefined queries); paired tests use only the queries where both
methods have a defined value.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

#: Largest number of resampled values held in memory at once (resamples x queries).
_BATCH_VALUES = 10_000_000

#: Largest number of resample-matrix entries (1 byte each, almost always) kept for reuse across calls.
_CACHE_VALUES = 10 * _BATCH_VALUES

#: Resample-matrix entries converted to float64 at once for one matrix product (8 MB).
_BLOCK_VALUES = 2**20

#: Paired differences whose spread is below this are treated as constant (float noise).
_CONSTANT_TOLERANCE = 1e-12

_EPS = np.finfo(np.float64).eps


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


# --------------------------------------------------------------------------------------------------
# Resample matrices: rows are resamples, columns queries, small unsigned integers (bootstrap
# multiplicities, or sign-flip bits: 1 = flipped); ``matrix @ data`` gives resampled weighted sums.


def _bootstrap_counts(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """How often each of n queries occurs in each of ``rows`` resamples drawn with replacement."""
    dtype = np.int32 if rows * n < 2**31 else np.int64
    draws = rng.integers(0, n, size=(rows, n), dtype=dtype)
    draws += (np.arange(rows, dtype=dtype) * n)[:, None]  # one bin per (resample, query)
    counts = np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n)
    return counts.astype(np.min_scalar_type(counts.max()))


def _flip_bits(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """Independent fair sign flips (1 = flipped), one row per resample: one random bit per entry."""
    size = rows * n
    return np.unpackbits(np.frombuffer(rng.bytes(-(-size // 8)), dtype=np.uint8), count=size).reshape(rows, n)


def _all_flips(n: int) -> Iterator[np.ndarray]:
    """Every one of the 2**n flip patterns, in batches."""
    total, step = 2**n, _batch(n)
    for start in range(0, total, step):
        codes = np.arange(start, min(start + step, total), dtype=np.int64)[:, None]
        yield ((codes >> np.arange(n)) & 1).astype(np.uint8)


#: Cached resample matrices by (kind, n, n_resamples, seed), least recently used first.
_draw_cache: OrderedDict[tuple[str, int, int, int], list[np.ndarray]] = OrderedDict()
_draw_cache_lock = threading.Lock()


def _draws(kind: str, n: int, n_resamples: int, seed: object) -> Iterable[np.ndarray]:
    """The seeded resample matrix for ``kind`` ("bootstrap" or "flips"), in batches of rows.

    Depends only on (kind, n, n_resamples, seed); kept for reuse when it has at most
    ``_CACHE_VALUES`` entries and the seed is an integer (least recently used dropped first)."""
    cacheable = isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and n * n_resamples <= _CACHE_VALUES
    key = (kind, n, n_resamples, int(seed) if cacheable else 0)
    with _draw_cache_lock:
        if cacheable and key in _draw_cache:
            _draw_cache.move_to_end(key)
            return _draw_cache[key]
    make = _bootstrap_counts if kind == "bootstrap" else _flip_bits

    def generate() -> Iterator[np.ndarray]:
        rng, step = np.random.default_rng(seed), _batch(n)
        for start in range(0, n_resamples, step):
            yield make(rng, min(step, n_resamples - start), n)

    if not cacheable:
        return generate()
    batches = list(generate())
    for batch in batches:
        batch.flags.writeable = False
    with _draw_cache_lock:
        _draw_cache[key] = batches
        while sum(b.size for value in _draw_cache.values() for b in value) > _CACHE_VALUES:
            _draw_cache.popitem(last=False)
    return batches


def _resampled_sums(batches: Iterable[np.ndarray], data: np.ndarray) -> np.ndarray:
    """(resamples x columns): ``matrix @ data`` for the integer resample matrix, converted to float64
    a block of rows at a time (the stored matrices stay 1 byte per entry)."""
    rows = max(1, _BLOCK_VALUES // max(data.shape[0], 1))
    return np.concatenate([batch[start:start + rows].astype(np.float64) @ data
                           for batch in batches for start in range(0, len(batch), rows)])


def _by_length(columns: Sequence[np.ndarray], chosen: Iterable[int]) -> dict[int, list[int]]:
    """The chosen column indices grouped by column length."""
    groups: dict[int, list[int]] = {}
    for i in chosen:
        groups.setdefault(len(columns[i]), []).append(i)
    return groups


def _bootstrap_cis(samples: Sequence[np.ndarray], confidence: float, n_resamples: int, seed: object) -> list[tuple[float, float]]:
    """:func:`bootstrap_ci` of each sample of defined values; samples of one size share one matrix product."""
    cis: list[tuple[float, float]] = [(np.nan, np.nan)] * len(samples)
    varying = []
    for i, data in enumerate(samples):
        if len(data) and np.ptp(data) == 0:
            cis[i] = (float(data[0]), float(data[0]))
        elif len(data):
            varying.append(i)
    tail = (1 - confidence) / 2
    for n, members in _by_length(samples, varying).items():
        means = _resampled_sums(_draws("bootstrap", n, n_resamples, seed), np.column_stack([samples[i] for i in members])) / n
        low, high = np.quantile(means, [tail, 1 - tail], axis=0, method="linear")
        for i, lo, hi in zip(members, low, high):
            cis[i] = (float(lo), float(hi))
    return cis


def _randomization_pvalues(diffs: Sequence[np.ndarray], n_resamples: int, seed: object) -> list[float]:
    """:func:`paired_randomization_test` of each difference vector; vectors of one size share one matrix product."""
    p_values = [np.nan if len(diff) == 0 else 1.0 for diff in diffs]
    for n, members in _by_length(diffs, [i for i, diff in enumerate(diffs) if diff.any()]).items():
        data = np.column_stack([diffs[i] for i in members])
        exact = 2**n <= n_resamples
        flips = _all_flips(n) if exact else _draws("flips", n, n_resamples, seed)
        total = data.sum(axis=0)
        resampled = total - 2 * _resampled_sums(flips, data)  # flipping d_i subtracts 2 d_i
        tolerance = np.maximum(100 * _EPS * np.abs(total), 4 * n * _EPS * np.abs(data).sum(axis=0))
        hits = np.count_nonzero(np.abs(resampled) >= np.abs(total) - tolerance, axis=0)
        for i, count in zip(members, hits):
            p_values[i] = float(count / 2**n if exact else (count + 1) / (n_resamples + 1))
    return p_values


def _interval_count(level: float, total: int, exact: bool) -> int:
    """The hits a shift needs to stand (p >= level): exact p = hits / total, Monte Carlo (hits + 1) / (total + 1)."""
    needed = level * total if exact else level * (total + 1) - 1
    return max(int(math.ceil(needed - 1e-9)), 0)


def _randomization_intervals(diffs: Sequence[np.ndarray], level: float, n_resamples: int,
                             seed: object) -> list[tuple[float, float]]:
    """:func:`randomization_interval` of each difference vector; vectors of one size share one matrix product."""
    intervals: list[tuple[float, float]] = [(np.nan, np.nan)] * len(diffs)
    for n, members in _by_length(diffs, [i for i, diff in enumerate(diffs) if len(diff)]).items():
        data = np.column_stack([diffs[i] for i in members])
        exact = 2**n <= n_resamples
        flips = list(_all_flips(n)) if exact else _draws("flips", n, n_resamples, seed)
        flipped = _resampled_sums(flips, data)  # S_i per resample and vector
        count = _resampled_sums(flips, np.ones((n, 1)))[:, 0]  # r_i
        mean = data.mean(axis=0)
        a = 2.0 * (count[:, None] * mean[None, :] - flipped)
        with np.errstate(divide="ignore", invalid="ignore"):
            below = np.where(a >= 0, a / (2.0 * count[:, None]), -a / (2.0 * (n - count[:, None])))
            above = np.where(a >= 0, a / (2.0 * (n - count[:, None])), -a / (2.0 * count[:, None]))
        always = (count == 0) | (count == n)  # the identity and the all-flipped pattern hit for every shift
        below[always], above[always] = np.inf, np.inf
        k = _interval_count(level, len(count), exact)
        if k == 0:  # every shift stands
            for i in members:
                intervals[i] = (-np.inf, np.inf)
            continue
        reach_below = -np.partition(-below, k - 1, axis=0)[k - 1]  # the k-th largest
        reach_above = -np.partition(-above, k - 1, axis=0)[k - 1]
        for i, m, lo, hi in zip(members, mean, reach_below, reach_above):
            intervals[i] = (float(m - lo), float(m + hi))
    return intervals


# --------------------------------------------------------------------------------------------------
# Public tests


def bootstrap_ci(values: object, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean; (nan, nan) without defined values.

    Args:
        values: the per-query values (NaN ignored).
        confidence: the interval's coverage.
        n_resamples: bootstrap samples.
        seed: the random seed.

    Returns:
        ``(low, high)``.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    return _bootstrap_cis([_defined(values, "values")], confidence, n_resamples, seed)[0]


def paired_randomization_test(a: object, b: object, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of the sign-flip randomization test of mean(a - b) = 0.

    Args:
        a: the first method's per-query values.
        b: the second's, paired with ``a``.
        n_resamples: Monte Carlo samples when the exact test is too large.
        seed: the random seed.

    Returns:
        The p-value.
    """
    return _randomization_pvalues([_pairs(a, b)], n_resamples, seed)[0]


def randomization_interval(a: object, b: object, level: float = 0.05, n_resamples: int = 10_000,
                           seed: int = 0) -> tuple[float, float]:
    """The interval of mean(a - b) that the sign-flip test at ``level`` does not reject (module docstring):
    every c with :func:`paired_randomization_test` of (a - c, b) >= level, up to the float tolerance of
    the test's ties. (nan, nan) without pairs; an end is -inf or inf when no shift on that side is rejected.

    Args:
        a: the first method's per-query values.
        b: the second's, paired with ``a``.
        level: the test's level (1 - the interval's coverage).
        n_resamples: Monte Carlo samples when the exact test is too large.
        seed: the random seed (the same flips as :func:`paired_randomization_test`).

    Returns:
        ``(low, high)``.
    """
    if not 0 < level < 1:
        raise ValueError(f"level: expected a number in (0, 1), got {level!r}")
    return _randomization_intervals([_pairs(a, b)], level, n_resamples, seed)[0]


#: The default margin of a decision on a metric in [0, 1]: the smallest difference that matters
#: (docs/evaluation.md, "The margin").
DEFAULT_MARGIN = 0.02

#: The largest number of questions :func:`questions_needed` names; more: "beyond any practical set".
MAX_QUESTIONS_NEEDED = 100_000


def questions_needed(sd: float, distance: float, level: float, power: float = 0.8) -> int | None:
    """Topic set size design (module docstring): the smallest n >= 2 with
    (t_{1 - level/2, n - 1} + t_{power, n - 1}) sd / sqrt(n) <= distance. None when ``distance`` <= 0
    or n would exceed :data:`MAX_QUESTIONS_NEEDED`; 2 when ``sd`` is 0.

    Args:
        sd: the standard deviation of the paired differences (per question).
        distance: how far the true difference lies from the bound the interval must clear.
        level: the interval's two-sided level (Bonferroni-adjusted where it is).
        power: the wanted probability that the interval clears the bound.

    Returns:
        The number of questions, or None.
    """
    if not (distance > 0 and math.isfinite(distance) and math.isfinite(sd)):
        return None
    if sd <= _CONSTANT_TOLERANCE:
        return 2
    guess = ((stats.norm.ppf(1 - level / 2) + stats.norm.ppf(power)) * sd / distance) ** 2
    if guess > MAX_QUESTIONS_NEEDED:
        return None
    n = np.arange(max(2, int(guess)), MAX_QUESTIONS_NEEDED + 1)[: 10 * int(guess) + 100]
    width = (stats.t.ppf(1 - level / 2, n - 1) + stats.t.ppf(power, n - 1)) * sd / np.sqrt(n)
    fits = np.flatnonzero(width <= distance)
    return int(n[fits[0]]) if len(fits) else None


def paired_t_test(a: object, b: object) -> float:
    """Two-sided paired t-test p-value; NaN with fewer than 2 pairs. When the differences are constant
    (spread <= 1e-12, i.e. float noise; the t statistic is then 0/0 or ±inf): 1.0 if they are 0, else 0.0.

    Args:
        a: the first method's per-query values.
        b: the second's, paired with ``a``.

    Returns:
        The p-value.
    """
    return _t_test_p(_pairs(a, b))


def _t_test_p(diff: np.ndarray) -> float:
    if len(diff) < 2:
        return np.nan
    if np.ptp(diff) <= _CONSTANT_TOLERANCE * max(1.0, abs(float(diff.mean()))):
        return 1.0 if abs(float(diff.mean())) <= _CONSTANT_TOLERANCE else 0.0
    return float(stats.ttest_1samp(diff, 0.0).pvalue)


def holm_adjust(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values: p_(i) * (m - i + 1), cumulative max, capped at 1 (NaN kept).

    Args:
        p_values: the family's raw p-values.

    Returns:
        The adjusted p-values, in the input order.
    """
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(len(p), np.nan)
    defined = np.flatnonzero(~np.isnan(p))
    order = defined[np.argsort(p[defined], kind="stable")]
    m = len(order)
    adjusted[order] = np.minimum(np.maximum.accumulate(p[order] * (m - np.arange(m))), 1.0)
    return adjusted


CORRECTIONS = ("holm", None)

#: Power at which :func:`minimum_detectable_difference` is stated.
POWER = 0.8


def smallest_p(n: int, n_resamples: int = 10_000) -> float:
    """The smallest two-sided p-value :func:`paired_randomization_test` can return on n pairs:
    2**(1 - n) when exact (2**n <= n_resamples), 1 / (n_resamples + 1) by Monte Carlo; NaN for n = 0.

    Args:
        n: pairs.
        n_resamples: Monte Carlo samples.

    Returns:
        The p-value.
    """
    if n <= 0:
        return np.nan
    return 2.0 ** (1 - n) if 2**n <= n_resamples else 1.0 / (n_resamples + 1)


def smallest_adjusted_p(n: int, m: int, n_resamples: int = 10_000, correction: str | None = "holm") -> float:
    """The smallest p-value after the correction over ``m`` tests that a test on ``n`` pairs can reach:
    min(1, m * smallest_p(n)) under Holm (or Bonferroni), smallest_p(n) without correction.

    Args:
        n: pairs.
        m: tests in the family.
        n_resamples: Monte Carlo samples.
        correction: ``holm``, ``bonferroni`` or None.

    Returns:
        The p-value.
    """
    raw = smallest_p(n, n_resamples)
    return float(min(1.0, max(m, 1) * raw)) if correction == "holm" else raw


def pairs_needed(m: int, alpha: float = 0.05, n_resamples: int = 10_000, correction: str | None = "holm") -> int | None:
    """The smallest n at which a test in a family of ``m`` can reach p < alpha after the correction
    (None when even Monte Carlo's floor 1 / (n_resamples + 1) cannot).

    Args:
        m: tests in the family.
        alpha: the significance level.
        n_resamples: Monte Carlo samples.
        correction: ``holm``, ``bonferroni`` or None.

    Returns:
        The number of pairs, or None.
    """
    for n in range(1, 64):
        if smallest_adjusted_p(n, m, n_resamples, correction) < alpha:
            return n
    return None


@functools.lru_cache(maxsize=4096)
def _noncentrality(df: int, level: float, power: float) -> float:
    """δ* with 1 - F(t_c; df, δ*) + F(-t_c; df, δ*) = power, t_c = t_{1 - level/2, df} (root by brentq)."""
    from scipy.optimize import brentq

    critical = stats.t.ppf(1 - level / 2, df)

    def shortfall(delta: float) -> float:  # scipy returns NaN for the far tail opposite the shift (< 1e-16): 0
        return stats.nct.sf(critical, df, delta) + np.nan_to_num(stats.nct.cdf(-critical, df, delta)) - power

    high = critical + stats.norm.ppf(power) + 1.0
    while shortfall(high) < 0:
        high *= 2
    return float(brentq(shortfall, 0.0, high, xtol=1e-10))


def minimum_detectable_difference(diffs: object, level: float, power: float = POWER) -> float:
    """The true mean paired difference the two-sided paired t-test at ``level`` detects with
    probability ``power``, from the spread of the observed differences: δ* s / sqrt(n) (s with ddof 1,
    δ* from the non-central t). NaN with fewer than 2 defined differences or no spread.

    Args:
        diffs: the observed paired differences (NaN ignored).
        level: the test's significance level.
        power: the wanted probability of detection.

    Returns:
        The difference, in the metric's units.
    """
    diff = _defined(diffs, "diffs")
    if len(diff) < 2 or not 0 < level < 1:
        return np.nan
    spread = float(diff.std(ddof=1))
    if spread <= _CONSTANT_TOLERANCE:
        return np.nan
    return _noncentrality(len(diff) - 1, float(level), float(power)) * spread / float(np.sqrt(len(diff)))


def compare_methods(per_query: pd.DataFrame, metric: str, method_col: str = "method", query_col: str = "qid",
                    confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0, alpha: float = 0.05,
                    correction: str | None = "holm", control: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary per method and paired tests between every pair of methods on one metric (or, with
    ``control``, between every other method and that one: method_a = the method, method_b = control).

    ``per_query`` is long: one row per (method, query) with a column ``metric``. Returns
    ``summary`` (method, mean, ci_low, ci_high, n, n_undefined) and ``pairwise`` (method_a,
    method_b, n_pairs, mean_diff = mean(a - b), p_randomization, p_ttest, p_adjusted, significant,
    test, smallest_p_adjusted, underpowered, mdd, interval_low, interval_high, interval_level, sd_diff).
    ``interval_low``/``interval_high``: :func:`randomization_interval` of mean(a - b) at ``interval_level`` =
    alpha / (k - 1), k the methods defining the metric; ``sd_diff``: the differences' standard deviation
    (ddof 1). ``smallest_p_adjusted``: the smallest p the test
    could reach at its n after the correction (:func:`smallest_adjusted_p`); ``underpowered``: that is
    >= alpha; ``mdd``: :func:`minimum_detectable_difference` at alpha / m. ``significant`` = p_adjusted < alpha,
    p_adjusted being the Holm-adjusted randomization
    p-value (or the raw one with ``correction=None``). Holm's correction is over the method pairs of
    this metric. See :func:`compare_metrics` for several metrics at once.

    Args:
        per_query: one row per (method, query) with a column ``metric``.
        metric: the metric column.
        method_col: the method column.
        query_col: the query id column.
        confidence: the CIs' coverage.
        n_resamples: bootstrap and randomization samples.
        seed: the random seed.
        alpha: the significance level.
        correction: ``holm``, ``bonferroni`` or None.
        control: compare every method with this one only (None: all pairs).

    Returns:
        ``(summary, pairwise)`` as described above.
    """
    return compare_metrics(per_query, [metric], method_col, query_col, confidence, n_resamples, seed, alpha,
                           correction, control)[metric]


def compare_metrics(per_query: pd.DataFrame, metrics: Sequence[str], method_col: str = "method",
                    query_col: str = "qid", confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0,
                    alpha: float = 0.05, correction: str | None = "holm",
                    control: str | None = None) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """:func:`compare_methods` of every metric in ``metrics``, by metric: the same tables, computed
    together (one matrix product per sample size for all metrics' bootstraps, one for their tests).

    Args:
        metrics: the metric columns.
        per_query, method_col, query_col, confidence, n_resamples, seed, alpha, correction, control: as
            for :func:`compare_methods`.

    Returns:
        ``{metric: (summary, pairwise)}``.
    """
    metrics = list(dict.fromkeys(metrics))
    missing = [column for column in (method_col, query_col, *metrics) if column not in per_query.columns]
    if missing:
        raise ValueError(f"per_query: missing column(s) {missing}; has {list(per_query.columns)}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction: expected 'holm' or None, got {correction!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    if per_query.duplicated([method_col, query_col]).any():
        raise ValueError(f"per_query: a ({method_col}, {query_col}) pair occurs twice")
    values = per_query[metrics].astype(np.float64)
    methods = list(dict.fromkeys(per_query[method_col]))
    if control is not None and control not in methods:
        raise ValueError(f"control: {control!r} is not one of the methods {methods}")
    pairs = (list(combinations(methods, 2)) if control is None
             else [(method, control) for method in methods if method != control])
    rows_of = [(per_query[method_col] == method).to_numpy() for method in methods]
    scores = {metric: [values[metric].to_numpy()[rows] for rows in rows_of] for metric in metrics}
    defined = {metric: [column[~np.isnan(column)] for column in scores[metric]] for metric in metrics}
    wide = per_query[[method_col, query_col]].join(values).pivot(index=query_col, columns=method_col, values=metrics)
    diffs = {metric: [_pairs(wide[(metric, a)].to_numpy(), wide[(metric, b)].to_numpy()) for a, b in pairs]
             for metric in metrics}
    cis = iter(_bootstrap_cis([data for metric in metrics for data in defined[metric]], confidence, n_resamples, seed))
    p_values = iter(_randomization_pvalues([diff for metric in metrics for diff in diffs[metric]], n_resamples, seed))
    # each pair's interval at alpha / (k - 1): k = the methods defining the metric (simultaneous over one
    # method's comparisons with the others; docstring, "interval")
    others = {metric: max(sum(len(data) > 0 for data in defined[metric]) - 1, 1) for metric in metrics}
    intervals = {metric: _randomization_intervals(diffs[metric], alpha / others[metric], n_resamples, seed)
                 for metric in metrics}
    test = (f"paired randomization (sign flip, {n_resamples} resamples, seed {seed})"
            + (", Holm-adjusted" if correction == "holm" else ""))
    results = {}
    for metric in metrics:
        summary = pd.DataFrame([{"method": method, "mean": float(data.mean()) if len(data) else np.nan,
                                 "ci_low": low, "ci_high": high, "n": len(data), "n_undefined": len(column) - len(data)}
                                for method, column, data, (low, high) in zip(methods, scores[metric], defined[metric], cis)])
        pairwise = pd.DataFrame([{"method_a": a, "method_b": b, "n_pairs": len(diff),
                                  "mean_diff": float(diff.mean()) if len(diff) else np.nan,
                                  "p_randomization": p, "p_ttest": _t_test_p(diff)}
                                 for (a, b), diff, p in zip(pairs, diffs[metric], p_values)],
                                columns=["method_a", "method_b", "n_pairs", "mean_diff", "p_randomization", "p_ttest"])
        raw = pairwise["p_randomization"].to_numpy(dtype=np.float64)
        pairwise["p_adjusted"] = holm_adjust(raw) if correction == "holm" else raw
        pairwise["significant"] = pairwise["p_adjusted"] < alpha
        pairwise["test"] = test
        family = max(1, int(np.count_nonzero(~np.isnan(raw)))) if correction == "holm" else 1
        pairwise["smallest_p_adjusted"] = [smallest_adjusted_p(n, family, n_resamples, correction)
                                           for n in pairwise["n_pairs"]]
        pairwise["underpowered"] = pairwise["smallest_p_adjusted"] >= alpha
        pairwise["mdd"] = [np.inf if low else minimum_detectable_difference(diff, alpha / family)
                           for diff, low in zip(diffs[metric], pairwise["underpowered"])]
        pairwise["interval_low"] = [low for low, _ in intervals[metric]]
        pairwise["interval_high"] = [high for _, high in intervals[metric]]
        pairwise["interval_level"] = alpha / others[metric]
        pairwise["sd_diff"] = [float(diff.std(ddof=1)) if len(diff) > 1 else np.nan for diff in diffs[metric]]
        results[metric] = (summary, pairwise)
    return results
