"""Tie-aware trec metrics: the expected value of each metric over all equally likely orders of the
ids inside each tie group (McSherry & Najork, "Computing Information Retrieval Performance Measures
Efficiently in the Presence of Tied Scores", ECIR 2008), in closed form, vectorized over queries.

A tie group is a set of ids of one query whose scores are equal after rounding to float32 (as
trec_eval compares them, see :mod:`evaluation.runs`). A group of n ids after s ids scored strictly
higher occupies ranks s+1 .. s+n; under a uniformly random order inside it, a given id's rank is
uniform on those ranks and the group's r relevant ids take a uniformly random r-subset of them. With
a cut-off k the group has m = clip(k - s, 0, n) of its ranks in the top k; at most one group per
query has 0 < m < n (the group that *crosses* k, see :func:`ties_crossing`). Write, for a relevant
entry e of a group (s, n, r): i_e its index among the group's relevant ids (0-based, any fixed
order) and B_e the relevant ids in earlier groups. Without k, m = n.

- hits@k = |R ∩ top k| has E = Σ_e m/n (linear), so ``p@k`` = E/k, ``recall@k`` = E/|R|, and the
  trec ``f1@k`` = 2PR/(P + R) = 2 hits/(k + |R|) is linear too: 2E/(k + |R|) (``p``, ``f1`` without
  k: k := list length; these do not depend on ties).
- ``hit@k`` = 1 - P(no relevant id in the top k) = 1 - Π_groups C(n - r, m)/C(n, m)
  = 1 - Π_e (n - m - i_e)⁺/(n - i_e) (hypergeometric).
- ``complete@k``, one gold group per relevant id: P(every relevant id in the top k)
  = Π_e (m - i_e)⁺/(n - i_e), 0 if a relevant id was not retrieved. With gold groups of several ids:
  0 if a group has no member that can reach the top k, 1 if every group has a member in a tie group
  wholly inside it, else the probability that the crossing group's random m-subset meets every
  open group (:func:`probability_all_met`, exact inclusion–exclusion).
- ``mrr@k``: only the first tie group holding a relevant id (s, n, r) matters; the first relevant
  id there is at rank s + u with P(u) = C(n - u, r - 1)/C(n, r), u = 1 .. n - r + 1, so
  E = Σ_{u <= k - s} P(u)/(s + u).
- ``map@k`` by linearity over relevant ids: e at rank s + u (u uniform on 1..n) has B_e + 1 + X
  relevant ids at or above it, E[X | u] = (r - 1)(u - 1)/(n - 1), so its expected AP term is
  (1/n) Σ_{u=1}^{m} (B_e + 1 + (r - 1)(u - 1)/(n - 1))/(s + u)
  = (1/n) [(B_e + 1) A + (r - 1)/(n - 1) (m - (s + 1) A)] with A = H(s + m) - H(s) (harmonic
  numbers); summed over relevant ids and divided by |R|.
- ``ndcg@k``: a group with total gain G contributes (G/n) Σ_{u=1}^{m} 1/log2(s + u + 1)
  = (G/n) (D(s + m) - D(s)), D(x) = Σ_{p <= x} 1/log2(p + 1); IDCG does not depend on the order.

With no tie (n = 1 everywhere) every formula is the trec_eval value. The autorag convention has no
tie-aware form here (:func:`evaluation.evaluate_run` refuses it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from evaluation.ground_truth import check_cutoff
from evaluation.judgments import RankedJudgments, ratio
from evaluation.runs import Run, check_run, flat_values, padded_scores

#: The tie rules: "id" = trec_eval's (score descending, then doc id descending), "expected" = the
#: expected value over all orders of tied ids (this module).
TIE_RULES = ("id", "expected")

#: Rows x ranks of the first-relevant-rank distribution (``mrr``) evaluated per block.
_BLOCK = 1 << 18
#: Most overlapping open gold groups that :func:`probability_all_met` expands (2^n subsets).
MAX_OVERLAPPING_GROUPS = 16


@dataclass(frozen=True)
class _Layout:
    """The tie groups of the relevant entries of :class:`RankedJudgments` (queries x width arrays).

    ``start`` = s, ``size`` = n, ``index`` = i_e, ``count`` = r, ``before`` = B_e (module docstring);
    where an entry is not retrieved: start 0, size 1, index 0, count 1.
    """

    retrieved: np.ndarray
    start: np.ndarray
    size: np.ndarray
    index: np.ndarray
    count: np.ndarray
    before: np.ndarray

    @classmethod
    def of(cls, judged: RankedJudgments) -> _Layout:
        ranks = judged.ranks  # sorted per row, so a tie group's entries are adjacent
        retrieved = np.isfinite(ranks)
        cols = np.broadcast_to(np.arange(ranks.shape[1]), ranks.shape)
        opens = np.ones(ranks.shape, dtype=bool)
        opens[:, 1:] = ranks[:, 1:] != ranks[:, :-1]
        closes = np.ones(ranks.shape, dtype=bool)
        closes[:, :-1] = ranks[:, :-1] != ranks[:, 1:]
        first = np.maximum.accumulate(np.where(opens, cols, 0), axis=1)
        last = np.minimum.accumulate(np.where(closes, cols, ranks.shape[1])[:, ::-1], axis=1)[:, ::-1]
        sizes = np.ones(ranks.shape) if judged.tie_sizes is None else judged.tie_sizes
        return cls(retrieved, np.where(retrieved, ranks - 1.0, 0.0), np.where(retrieved, sizes, 1.0),
                   np.where(retrieved, cols - first, 0.0), np.where(retrieved, last - first + 1.0, 1.0),
                   np.where(retrieved, first, 0.0))

    def inside(self, k: int | None) -> np.ndarray:
        """m: the ranks of each entry's tie group that lie in the top k (0 where not retrieved)."""
        if k is None:
            return np.where(self.retrieved, self.size, 0.0)
        return np.where(self.retrieved, np.clip(k - self.start, 0.0, self.size), 0.0)


def _rank_sums(weight: Callable[[np.ndarray], np.ndarray], start: np.ndarray, inside: np.ndarray,
               size: np.ndarray) -> np.ndarray:
    """Σ_{u=1}^{m} weight(s + u) per entry, as a difference of the cumulative sums of ``weight`` over
    ranks; a group of one takes weight(s + 1) directly, so untied entries get trec_eval's own term."""
    last = int((start + inside).max(initial=0))
    table = np.concatenate(([0.0], np.cumsum(weight(np.arange(1.0, last + 1.0)))))
    first, end = start.astype(np.int64), (start + inside).astype(np.int64)
    return np.where(size == 1, np.where(inside > 0, weight(start + 1.0), 0.0), table[end] - table[first])


def _expected_hits(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """E|R ∩ top k| = Σ_e m/n."""
    layout = _Layout.of(judged)
    return (layout.inside(k) / layout.size).sum(axis=1)


def _list_size(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """k, or the list length without a cut-off (the denominators of trec P and F)."""
    return judged.n_retrieved if k is None else np.full(len(judged.qids), k)


def precision(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """E[p@k] = E[hits]/k (without k: relevant retrieved / list length)."""
    return judged.undefined(ratio(_expected_hits(judged, k), _list_size(judged, k)))


def recall(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """E[recall@k] = E[hits]/|R|."""
    return judged.undefined(ratio(_expected_hits(judged, k), judged.n_relevant))


def f1(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """E[f1@k] = 2 E[hits]/(k + |R|) (trec F with P = hits/k, R = hits/|R| is linear in hits)."""
    return judged.undefined(ratio(2 * _expected_hits(judged, k), _list_size(judged, k) + judged.n_relevant))


def hit(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """E[hit@k] = 1 - Π_e (n - m - i_e)⁺/(n - i_e)."""
    layout = _Layout.of(judged)
    missed = np.maximum(layout.size - layout.inside(k) - layout.index, 0.0) / (layout.size - layout.index)
    return judged.undefined(1.0 - np.where(layout.retrieved, missed, 1.0).prod(axis=1))


def complete(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """E[complete@k]: Π_e (m - i_e)⁺/(n - i_e) for one group per relevant id; with gold groups see
    :func:`probability_all_met`."""
    layout = _Layout.of(judged)
    inside = layout.inside(k)
    if judged.groups is not None:
        return judged.undefined(_complete_with_groups(judged, layout, inside))
    is_entry = np.arange(judged.ranks.shape[1]) < judged.n_relevant[:, None]
    found = np.maximum(inside - layout.index, 0.0) / (layout.size - layout.index)
    return judged.undefined(np.where(layout.retrieved, found, np.where(is_entry, 0.0, 1.0)).prod(axis=1))


def _complete_with_groups(judged: RankedJudgments, layout: _Layout, inside: np.ndarray) -> np.ndarray:
    """complete@k with gold groups: 0 where a group cannot reach the top k, 1 where every group has a
    member in a tie group wholly inside it, otherwise exact per query (:func:`probability_all_met`)."""
    groups = judged.groups
    at = (groups.row, groups.col)
    reach, size = inside[at], layout.size[at]
    sure = layout.retrieved[at] & (reach == size)
    n_queries = len(judged.qids)
    values = groups.all_found(sure, n_queries).astype(np.float64)
    open_rows = np.flatnonzero(groups.all_found(reach > 0, n_queries) & (values == 0))
    if len(open_rows) == 0:
        return values
    group_sure = np.bincount(groups.group, weights=sure, minlength=len(groups.group_row)) > 0
    order = np.argsort(groups.row, kind="stable")
    bounds = np.searchsorted(groups.row[order], [open_rows, open_rows + 1])
    for row, lo, hi in zip(open_rows, *bounds):
        members = [i for i in order[lo:hi].tolist() if not group_sure[groups.group[i]] and reach[i] > 0]
        open_sets: dict[int, set[int]] = {}
        for i in members:  # every such member lies in the one tie group that crosses k
            open_sets.setdefault(int(groups.group[i]), set()).add(int(groups.col[i]))
        crossing = members[0]
        values[row] = probability_all_met(int(size[crossing]), int(reach[crossing]),
                                          [frozenset(s) for s in open_sets.values()])
    return values


def _polynomial_product(a: Sequence[int], b: Sequence[int]) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def _overlap_components(sets: list[frozenset[int]]) -> list[list[frozenset[int]]]:
    """The sets in groups that share items (transitively)."""
    components: list[tuple[set[int], list[frozenset[int]]]] = []
    for item_set in sets:
        touching = [c for c in components if c[0] & item_set]
        merged_items, merged_sets = set(item_set), [item_set]
        for items, members in touching:
            merged_items |= items
            merged_sets += members
            components.remove((items, members))
        components.append((merged_items, merged_sets))
    return [members for _, members in components]


def probability_all_met(n: int, m: int, sets: Sequence[frozenset[int]]) -> float:
    """P(a uniformly random m-subset of n items meets every one of ``sets``) (sets of item labels
    among the n), exactly.

    Sets that contain another set are dropped (meeting the smaller one meets them), the rest are
    split into components that share items. The number of m-subsets meeting every set is the
    coefficient of x^m in (1 + x)^(n - Σ a_c) Π_c Σ_{J ⊆ c} (-1)^|J| (1 + x)^(a_c - |∪J|), with
    a_c the items of component c (inclusion–exclusion inside each component; components are
    independent in the count); divided by C(n, m). Integer arithmetic, so exact until the division.
    """
    minimal = [s for s in set(sets) if not any(other < s for other in sets)]
    polynomial, covered = [1], 0
    for component in _overlap_components(minimal):
        if len(component) > MAX_OVERLAPPING_GROUPS:
            raise ValueError(f"ties='expected': {len(component)} overlapping gold groups share one tie group; "
                             f"complete@k is computed exactly for at most {MAX_OVERLAPPING_GROUPS}")
        items = frozenset().union(*component)
        part = [0] * (len(items) + 1)
        for chosen in range(len(component) + 1):
            for subset in combinations(component, chosen):
                free = len(items) - len(frozenset().union(*subset))
                for j in range(free + 1):
                    part[j] += (-1) ** chosen * comb(free, j)
        polynomial = _polynomial_product(polynomial, part)
        covered += len(items)
    polynomial = _polynomial_product(polynomial, [comb(n - covered, j) for j in range(n - covered + 1)])
    return polynomial[m] / comb(n, m) if m < len(polynomial) else 0.0


def reciprocal_rank(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """E[mrr@k] = Σ_{u <= min(n - r + 1, k - s)} P(u)/(s + u) over the first tie group holding a
    relevant id, P(1) = r/n, P(u + 1) = P(u) (n - u - r + 1)/(n - u)."""
    layout = _Layout.of(judged)
    s, n, r = layout.start[:, 0], layout.size[:, 0], layout.count[:, 0]
    last = n - r + 1 if k is None else np.minimum(n - r + 1, k - s)
    rows = np.flatnonzero(layout.retrieved[:, 0] & (last >= 1))
    values = np.zeros(len(judged.qids))
    if len(rows) == 0:
        return judged.undefined(values)
    width = int(last[rows].max())
    u = np.arange(1.0, width + 1.0)
    step = max(_BLOCK // width, 1)
    for begin in range(0, len(rows), step):
        block = rows[begin:begin + step]
        sb, nb, rb = s[block, None], n[block, None], r[block, None]
        numerator, denominator = np.maximum(nb - u[:-1] - rb + 1, 0.0), nb - u[:-1]
        steps = np.divide(numerator, denominator, out=np.zeros(numerator.shape), where=denominator > 0)
        probability = rb / nb * np.cumprod(np.hstack([np.ones((len(block), 1)), steps]), axis=1)
        values[block] = np.where(u <= last[block, None], probability / (sb + u), 0.0).sum(axis=1)
    return judged.undefined(values)


def average_precision(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """E[map@k] = Σ_e (1/n) [(B_e + 1) A + (r - 1)/(n - 1) (m - (s + 1) A)] / |R|, A = Σ_{u<=m} 1/(s + u)."""
    layout = _Layout.of(judged)
    inside = layout.inside(k)
    reciprocal_sum = _rank_sums(np.reciprocal, layout.start, inside, layout.size)
    others = ratio(layout.count - 1, layout.size - 1)
    term = (layout.before + 1) * reciprocal_sum + others * (inside - (layout.start + 1) * reciprocal_sum)
    return judged.undefined(ratio((term / layout.size).sum(axis=1), judged.n_relevant))


def ndcg(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """E[ndcg@k] = Σ_e (gain_e/n) Σ_{u<=m} 1/log2(s + u + 1) / IDCG@k."""
    layout = _Layout.of(judged)
    discounts = _rank_sums(lambda rank: 1.0 / np.log2(rank + 1.0), layout.start, layout.inside(k), layout.size)
    dcg = (judged.gains / layout.size * discounts).sum(axis=1)
    return judged.undefined(ratio(dcg, judged.ideal_dcg(k)))


def ties_crossing(run: Run, cutoffs: Iterable[int]) -> dict[str, bool]:
    """Per query of ``run``: True when a tie group (ids whose float32 scores are equal) crosses one
    of the ``cutoffs`` k, i.e. holds ids both at ranks <= k and at ranks > k, so that the id rule,
    not the scores, decides which of them make the top k (a ``None`` cut-off, the whole list, is
    never crossed). Vectorized: each row of scores is sorted descending once and, for each k, the
    k-th and (k+1)-th scores are compared.

    Args:
        run: ``{qid: {doc_id: score}}``.
        cutoffs: the cut-offs k (None: the whole list).

    Returns:
        ``{qid: crossed}``.
    """
    run = check_run(run)
    qids = list(run)
    ks = sorted({check_cutoff(k, "cutoffs") for k in cutoffs} - {None})
    values, lengths = flat_values(list(run.values()), "run", qids)
    with np.errstate(over="ignore"):
        ordered = -np.sort(-padded_scores(values.astype(np.float32), lengths), axis=1)
    crossing = np.zeros(len(qids), dtype=bool)
    for k in ks:
        if k < ordered.shape[1]:
            crossing |= (lengths > k) & (ordered[:, k - 1] == ordered[:, k])
    return dict(zip(qids, crossing.tolist()))
