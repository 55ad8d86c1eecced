"""Judging a pool where it decides: minimal test collections for nDCG@k (Carterette, Allan &
Sitaraman, "Minimal Test Collections for Retrieval Evaluation", SIGIR 2006).

A question's *pool* is the union of every method's top-k chunks. The methods are scored on *units*:
the chunks themselves (chunk level) or their pages (URL level: a method's units are the pages of its
first k chunks in the order of their best chunk, and a page's grade is the highest grade of its
judged chunks). Grades run 0..``max_grade``; an unjudged chunk counts as irrelevant in the end
(trec_eval's convention), and until then may still be anything from 0 to ``max_grade``.

For every pair of methods (A, B), :class:`PoolDecision` keeps the mean over the questions of
``nDCG@k(A) - nDCG@k(B)`` three ways: the *point* (every unjudged chunk irrelevant: what the
verdict reads today), and a *lower* and *upper bound* over every grade the unjudged chunks may
still get. Per question, with ``c_u = disc_A(u) - disc_B(u)`` (``disc(r) = 1/log2(r + 1)`` at the
unit's rank within the top k, 0 outside it) and each unit's grade interval ``[lo_u, hi_u]``::

    dDCG_min = sum_u c_u * (hi_u if c_u < 0 else lo_u)      dDCG_max = sum_u c_u * (hi_u if c_u > 0 else lo_u)

and the shared ideal DCG lies in ``[IDCG(lo), IDCG(hi)]``; a negative ``dDCG_min`` needs a unit of
grade >= 1, so IDCG >= 1 there. The nDCG bounds divide by the ideal that makes them widest, so they
hold for every assignment (sound, if not always tight), clipped to [-1, 1]. The bound of a mean is
the mean of the questions' bounds, since each (question, chunk) is graded on its own.

*Decided* (:meth:`PoolDecision.decision`): the leader (best point mean) stays ahead of every other
method whatever the unjudged chunks turn out to be: ``lower(leader - X) > 0``, or the pair can no
longer differ (``lower == upper == 0``: a tie that no grade can break). Then no judgment left can
change which method is best on the primary metric.

*Priority* (:meth:`PoolDecision.weight`): MTC judges next the chunk whose grade moves an undecided
difference most: ``sum over the undecided pairs (leader, X) of |c_u|`` for the chunk's unit, divided
by the question's count (each question weighs 1/n in a mean); a chunk that can no longer change its
unit's grade weighs 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

MAX_GRADE = 3


def discount(rank: int) -> float:
    """trec_eval's nDCG discount of a 1-based rank: ``1 / log2(rank + 1)``."""
    return 1.0 / math.log2(rank + 1)


def ideal_dcg(grades: Iterable[int], k: int) -> float:
    """DCG@k of the grades sorted best first (the ideal ranking)."""
    best = sorted((g for g in grades if g > 0), reverse=True)[:k]
    return sum(g * discount(r) for r, g in enumerate(best, start=1))


@dataclass(frozen=True)
class QuestionPool:
    """One question: each method's top-k units in rank order (deduplicated) and, for every pooled
    chunk, its unit (the chunk itself at chunk level, its page's URL at URL level). ``outside``
    holds grades of units judged outside the pool (imported judgments): they count in the ideal DCG."""

    lists: Mapping[str, Sequence[str]]
    chunk_unit: Mapping[str, str]
    outside: Mapping[str, int] = field(default_factory=dict)

    def units(self) -> list[str]:
        return list(dict.fromkeys(self.chunk_unit.values()))


def unit_grade_bounds(pool: QuestionPool, grades: Mapping[str, int], settled: Iterable[str] = (),
                      max_grade: int = MAX_GRADE) -> dict[str, tuple[int, int]]:
    """Per unit, the interval its grade may still take: ``lo`` = the best grade of its judged chunks
    (0 if none), ``hi`` = ``max_grade`` while one of its chunks is still open (neither judged nor
    ``settled``: a "can't tell" stays unjudged, irrelevant in the end), else ``lo``."""
    settled = set(settled)
    lo: dict[str, int] = {}
    open_: set[str] = set()
    for chunk, unit in pool.chunk_unit.items():
        if chunk in grades:
            lo[unit] = max(lo.get(unit, 0), grades[chunk])
        else:
            lo.setdefault(unit, 0)
            if chunk not in settled:
                open_.add(unit)
    return {unit: (g, max_grade if unit in open_ and g < max_grade else g) for unit, g in lo.items()}


def _coefficients(ranked_a: Sequence[str], ranked_b: Sequence[str], k: int) -> dict[str, float]:
    coef: dict[str, float] = {}
    for r, unit in enumerate(ranked_a[:k], start=1):
        coef[unit] = coef.get(unit, 0.0) + discount(r)
    for r, unit in enumerate(ranked_b[:k], start=1):
        coef[unit] = coef.get(unit, 0.0) - discount(r)
    return coef


def ndcg(ranked: Sequence[str], grades: Mapping[str, int], ideal: float, k: int) -> float:
    """nDCG@k of one ranked unit list against ``grades`` (missing = 0) and its ideal DCG."""
    if ideal <= 0:
        return 0.0
    return sum(grades.get(u, 0) * discount(r) for r, u in enumerate(ranked[:k], start=1)) / ideal


def difference_bounds(ranked_a: Sequence[str], ranked_b: Sequence[str], bounds: Mapping[str, tuple[int, int]],
                      outside: Mapping[str, int], k: int) -> tuple[float, float, float]:
    """``(lower, point, upper)`` of nDCG@k(A) - nDCG@k(B) on one question (module docstring);
    ``point`` takes every open grade at its lower end (unjudged = irrelevant)."""
    coef = _coefficients(ranked_a, ranked_b, k)
    lo_grades = {u: lo for u, (lo, _) in bounds.items()}
    lows = [*lo_grades.values(), *outside.values()]
    highs = [*(hi for _, hi in bounds.values()), *outside.values()]
    ideal_lo, ideal_hi = ideal_dcg(lows, k), ideal_dcg(highs, k)
    d_min = d_max = d_point = 0.0
    for unit, c in coef.items():
        lo, hi = bounds.get(unit, (outside.get(unit, 0),) * 2)
        d_point += c * lo
        d_min += c * (hi if c < 0 else lo)
        d_max += c * (hi if c > 0 else lo)
    point = d_point / ideal_lo if ideal_lo > 0 else 0.0

    def scaled(d: float, widest_when_negative: float, widest_when_positive: float) -> float:
        if d < 0:
            return max(-1.0, d / max(widest_when_negative, 1.0))
        if d > 0:
            return min(1.0, d / max(widest_when_positive, 1.0))
        return 0.0

    lower = scaled(d_min, ideal_lo, ideal_hi)
    upper = scaled(d_max, ideal_hi, ideal_lo)
    return min(lower, point), point, max(upper, point)


@dataclass(frozen=True)
class PairState:
    """The mean of nDCG@k(a) - nDCG@k(b) over the questions: ``lower <= point <= upper``."""

    a: str
    b: str
    lower: float
    point: float
    upper: float

    @property
    def fixed(self) -> bool:
        """No grade left can change the sign of the difference (or the pair can no longer differ)."""
        return self.lower > 0 or self.upper < 0 or self.lower == self.upper


@dataclass(frozen=True)
class Decision:
    """Where judging stands: the leader on point means, every pair with it, whether it is decided."""

    leader: str
    means: dict[str, float]
    pairs: list[PairState]  # (leader, other) for every other method
    decided: bool
    tied_with: list[str]  # methods the leader can no longer be told apart from


class PoolDecision:
    """The minimal-test-collection state of one question set (module docstring).

    ``pools`` maps question id -> :class:`QuestionPool`; :meth:`judge` records one chunk's grade
    (None: "can't tell", settled as unjudged) and updates only that question's terms, so a judgment
    costs O(methods^2 x k)."""

    def __init__(self, pools: Mapping[str, QuestionPool], methods: Sequence[str], k: int,
                 max_grade: int = MAX_GRADE):
        self.pools = dict(pools)
        self.methods = list(methods)
        self.k = k
        self.max_grade = max_grade
        self.pairs = list(combinations(self.methods, 2))
        self.qids = list(self.pools)
        self.row = {qid: i for i, qid in enumerate(self.qids)}
        self.grades: dict[str, dict[str, int]] = {qid: {} for qid in self.qids}
        self.settled: dict[str, set[str]] = {qid: set() for qid in self.qids}
        n, p = len(self.qids), len(self.pairs)
        self.lower, self.point, self.upper = np.zeros((n, p)), np.zeros((n, p)), np.zeros((n, p))
        self.values = np.zeros((n, len(self.methods)))  # per question and method: nDCG@k, unjudged = 0
        self.bounds: dict[str, dict[str, tuple[int, int]]] = {}
        self.coef = {qid: [_coefficients(pool.lists.get(a, []), pool.lists.get(b, []), k) for a, b in self.pairs]
                     for qid, pool in self.pools.items()}  # rankings are fixed: computed once
        for qid in self.qids:
            self._update(qid)

    def judge(self, qid: str, chunk: str, grade: int | None) -> None:
        """Record a grade (0..max_grade) or a "can't tell" (None) of a pooled or outside chunk."""
        if grade is None:
            self.grades[qid].pop(chunk, None)
            self.settled[qid].add(chunk)
        else:
            self.grades[qid][chunk] = int(grade)
            self.settled[qid].discard(chunk)
        self._update(qid)

    def _update(self, qid: str) -> None:
        pool, i = self.pools[qid], self.row[qid]
        bounds = unit_grade_bounds(pool, self.grades[qid], self.settled[qid], self.max_grade)
        self.bounds[qid] = bounds
        for j, (a, b) in enumerate(self.pairs):
            self.lower[i, j], self.point[i, j], self.upper[i, j] = difference_bounds(
                pool.lists.get(a, []), pool.lists.get(b, []), bounds, pool.outside, self.k)
        lo_grades = {u: lo for u, (lo, _) in bounds.items()}
        ideal = ideal_dcg([*lo_grades.values(), *pool.outside.values()], self.k)
        for m, method in enumerate(self.methods):
            self.values[i, m] = ndcg(pool.lists.get(method, []), {**pool.outside, **lo_grades}, ideal, self.k)

    def pair_state(self, a: str, b: str) -> PairState:
        """The mean difference of ``a`` minus ``b``, with its bounds."""
        j, sign = self._pair_index(a, b), (1.0 if (a, b) in self.pairs else -1.0)
        lo, pt, hi = (float(x[:, j].mean()) if len(self.qids) else 0.0 for x in (self.lower, self.point, self.upper))
        return PairState(a, b, *((lo, pt, hi) if sign > 0 else (-hi, -pt, -lo)))

    def decision(self) -> Decision:
        """The leader (best point mean; ties broken by the methods' order) and whether it is decided."""
        means = {m: float(self.values[:, j].mean()) if len(self.qids) else 0.0 for j, m in enumerate(self.methods)}
        leader = max(self.methods, key=lambda m: (means[m], -self.methods.index(m)))
        pairs = [self.pair_state(leader, other) for other in self.methods if other != leader]
        decided = all(p.lower > 0 or p.lower == p.upper for p in pairs)  # the leader's lead can no longer be lost
        tied = [p.b for p in pairs if p.lower == p.upper == 0.0]
        return Decision(leader, means, pairs, decided, tied)

    def is_open(self, qid: str, chunk: str) -> bool:
        """The chunk is neither judged nor settled."""
        return chunk not in self.grades[qid] and chunk not in self.settled[qid]

    def weight(self, qid: str, chunk: str, decision: Decision | None = None) -> float:
        """MTC's priority of an open chunk (module docstring); 0 once it can change nothing."""
        pool = self.pools[qid]
        unit = pool.chunk_unit.get(chunk)
        if unit is None or not self.is_open(qid, chunk):
            return 0.0
        lo, hi = self.bounds[qid].get(unit, (0, 0))
        if lo >= hi:
            return 0.0
        decision = decision or self.decision()
        coef = self.coef[qid]
        total = sum(abs(coef[self._pair_index(p.a, p.b)].get(unit, 0.0)) for p in decision.pairs if not p.fixed)
        return total / max(len(self.qids), 1)

    def _pair_index(self, a: str, b: str) -> int:
        return self.pairs.index((a, b)) if (a, b) in self.pairs else self.pairs.index((b, a))

    def open_chunks(self) -> list[tuple[str, str]]:
        """Every open (question, pooled chunk)."""
        return [(qid, c) for qid in self.qids for c in self.pools[qid].chunk_unit if self.is_open(qid, c)]


def depth_pool(lists: Mapping[str, Sequence[str]], k: int) -> list[str]:
    """The union of every method's top-k, in depth-pool order: every method's rank 1, then rank 2, ...
    (methods in the mapping's order), each item once."""
    pooled: dict[str, None] = {}
    for r in range(k):
        for ranked in lists.values():
            if r < len(ranked):
                pooled.setdefault(ranked[r], None)
    return list(pooled)


class JudgingOrder:
    """Which open (question, chunk) to judge next.

    ``"mtc"``: the highest :meth:`PoolDecision.weight` (ties: a seeded random key), falling back to
    depth order once no open chunk can move an undecided pair. ``"depth"``: question by question,
    each question's pool in depth-pool order (:func:`depth_pool`). ``"random"``: a seeded shuffle of
    every pooled chunk (for benchmarks). Weights are recomputed for every chunk only when the
    leader or the set of undecided pairs changes, else only for the question just judged."""

    def __init__(self, decision: PoolDecision, order: str = "mtc", seed: int = 0,
                 depth_orders: Mapping[str, Sequence[str]] | None = None):
        if order not in ("mtc", "depth", "random"):
            raise ValueError(f"order {order!r}: expected mtc, depth or random")
        self.state, self.order = decision, order
        rng = np.random.default_rng(seed)
        self.sequence = [(qid, c) for qid in decision.qids
                         for c in (depth_orders or {}).get(qid, list(decision.pools[qid].chunk_unit))]
        if order == "random":
            self.sequence = [self.sequence[i] for i in rng.permutation(len(self.sequence))]
        self.key = {item: float(x) for item, x in zip(self.sequence, rng.random(len(self.sequence)))}
        self._signature: tuple | None = None
        self._weights: dict[tuple[str, str], float] = {}

    def _refresh(self, changed: str | None) -> None:
        decision = self.state.decision()
        signature = (decision.leader, tuple(p.b for p in decision.pairs if not p.fixed))
        if signature != self._signature:
            self._signature = signature
            self._weights = {item: self.state.weight(*item, decision) for item in self.sequence
                             if self.state.is_open(*item)}
        elif changed is not None:
            for chunk in self.state.pools[changed].chunk_unit:
                item = (changed, chunk)
                if self.state.is_open(changed, chunk):
                    self._weights[item] = self.state.weight(changed, chunk, decision)
                else:
                    self._weights.pop(item, None)

    def judged(self, qid: str) -> None:
        """Tell the order that ``qid`` got a judgment (after :meth:`PoolDecision.judge`)."""
        if self.order == "mtc":
            self._refresh(qid)

    def next(self, skip: set[tuple[str, str]] = frozenset()) -> tuple[str, str] | None:
        """The next open item not in ``skip``; None when every pooled chunk is judged or skipped."""
        if self.order == "mtc":
            if self._signature is None:
                self._refresh(None)
            best = max(((w, self.key[item], item) for item, w in self._weights.items()
                        if w > 0 and item not in skip and self.state.is_open(*item)), default=None)
            if best is not None:
                return best[2]
        return next((item for item in self.sequence if item not in skip and self.state.is_open(*item)), None)
