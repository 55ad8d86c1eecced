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

*Confident* (Carterette, Allan & Sitaraman's confidence): the bounds assume every unjudged chunk
may be the best one, so over hundreds of questions they close only once nearly the whole pool is
judged. MTC's own stopping rule reads the unjudged grades as random instead: an open unit's grade
follows the grades judged so far (one rate for every unit, add-one smoothing over the scale, at
least the grade its judged chunks already give it), and the mean
difference is approximately normal with ``mean = sum_q sum_u c_u E[g_u] / N_q / n`` and
``var = sum_q sum_u c_u^2 Var[g_u] / N_q^2 / n^2`` (``N_q`` the ideal DCG of the expected grades)
plus the uncertainty of the grade rate itself, which every open unit shares
(``(sum_u c_u / N_q / n)^2 Var(rate)``, the Dirichlet posterior's). Only questions
with a judgment are read this way; the others are taken as a sample's (the judged questions'
spread over their count, finite-population corrected, read with Student's t; at least
:data:`MIN_JUDGED_QUESTIONS` judged questions), never as the rate prior's guess. The rate is one for
every rank on purpose: a rate per best rank favours the methods that agree with the others, not the
ones that find answers (docs/judging.md, "Measured").
The recommendation is decided *with 95% confidence* when ``P(leader - X > 0) >= 1 - 0.05 / (m - 1)``
for every other method X of the m (Bonferroni over the leader's comparisons; or the pair is fixed by
the bounds), and decided *for certain* by the bounds.

*Priority* (:meth:`PoolDecision.chunk_weights`): MTC judges next the chunk whose grade is expected
to shrink the uncertainty of an undecided pair (leader, X) most, summed over those pairs: the unit's
``c_u^2 Var(g_u) / N_q^2``, and, for a question nobody judged yet, what one more judged question
takes off the sampling variance minus what its open units leave once its :data:`LOOKAHEAD` most
telling ones are judged. A chunk that can no longer change its unit's grade weighs 0. So it judges
first where the methods disagree near the top of their lists, question after question, and leaves
alone what cannot move the verdict. LOOKAHEAD was chosen on scripts/bench_judging.py's sets
(docs/judging.md, "Measured": 1, 2, 3 and 5 compared).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

MAX_GRADE = 3
CONFIDENCE = 0.95
LOOKAHEAD = 1  # a question not judged yet is weighed with its most telling open unit judged (docs/judging.md)
MIN_JUDGED_QUESTIONS = 10  # fewer judged questions than this (or than the set has): no confidence yet


def ranks_alike(pool: "QuestionPool", methods: Sequence[str], k: int) -> bool:
    """Every method ranks the same units in the same places of its top k (a method without a list ranks
    nothing): no grade can change any difference of nDCG@k between them (every ``c_u`` is 0)."""
    lists = [list(pool.lists.get(method, []))[:k] for method in methods]
    return all(ranked == lists[0] for ranked in lists)


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


def difference_bounds(coef: Mapping[str, float], bounds: Mapping[str, tuple[int, int]],
                      outside: Mapping[str, int], k: int) -> tuple[float, float, float]:
    """``(lower, point, upper)`` of nDCG@k(A) - nDCG@k(B) on one question (module docstring), from
    the pair's discount differences ``coef`` (:func:`_coefficients`); ``point`` takes every open
    grade at its lower end (unjudged = irrelevant)."""
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
    decided: bool  # for certain: by the bounds
    tied_with: list[str]  # methods the leader can no longer be told apart from
    confidence: dict[str, float] = field(default_factory=dict)  # other -> P(leader - other > 0)
    confident: bool = False  # decided with CONFIDENCE (or for certain)


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
        # the leader must beat each of the others: Bonferroni over those comparisons
        self.pair_confidence = 1.0 - (1.0 - CONFIDENCE) / max(len(self.methods) - 1, 1)
        self.qids = list(self.pools)
        self.margin_decided: set[str] = set()  # others the leader's comparison with is settled by the margin
        self._version, self._cached = 0, (-1, None)  # judgments recorded; _moments of that state
        self.row = {qid: i for i, qid in enumerate(self.qids)}
        self.grades: dict[str, dict[str, int]] = {qid: {} for qid in self.qids}
        self.settled: dict[str, set[str]] = {qid: set() for qid in self.qids}
        n, p = len(self.qids), len(self.pairs)
        self.lower, self.point, self.upper = np.zeros((n, p)), np.zeros((n, p)), np.zeros((n, p))
        self.values = np.zeros((n, len(self.methods)))  # per question and method: nDCG@k, unjudged = 0
        self.bounds: dict[str, dict[str, tuple[int, int]]] = {}
        self.coef = {qid: [_coefficients(pool.lists.get(a, []), pool.lists.get(b, []), k) for a, b in self.pairs]
                     for qid, pool in self.pools.items()}  # rankings are fixed: computed once
        self._build_model()
        for qid in self.qids:
            self._update(qid)

    def judge(self, qid: str, chunk: str, grade: int | None) -> None:
        """Record a grade (0..max_grade) or a "can't tell" (None) of a pooled or outside chunk."""
        position = self.chunk_position.get((qid, chunk))
        if position is not None:
            self.chunk_open[position] = False
        if grade is None:
            self.grades[qid].pop(chunk, None)
            self.settled[qid].add(chunk)
        else:
            self.grades[qid][chunk] = int(grade)
            self.settled[qid].discard(chunk)
        self._version += 1
        self._update(qid)

    def _build_model(self) -> None:
        """The arrays of the confidence model: every unit of every question, its best rank, and
        every nonzero coefficient as an entry (question x pair row, unit, coefficient)."""
        self.unit_index: dict[tuple[str, str], int] = {}
        unit_row, unit_col = [], []
        for qid in self.qids:
            pool = self.pools[qid]
            units = list(dict.fromkeys([*pool.chunk_unit.values(), *(u for r in pool.lists.values() for u in r[:self.k])]))
            for col, unit in enumerate(units):
                self.unit_index[(qid, unit)] = len(unit_row)
                unit_row.append(self.row[qid])
                unit_col.append(col)
        self.unit_row, self.unit_col = np.array(unit_row, dtype=int), np.array(unit_col, dtype=int)
        width = int(self.unit_col.max()) + 1 if len(unit_col) else 1
        self.width = max(width, 1)
        self.unit_lo = np.zeros(len(unit_row))
        self.unit_open = np.ones(len(unit_row), dtype=bool)
        entries = [(self.row[qid] * len(self.pairs) + j, self.unit_index[(qid, u)], c)
                   for qid in self.qids for j, coef in enumerate(self.coef[qid]) for u, c in coef.items() if c != 0.0]
        self.e_row = np.array([e[0] for e in entries], dtype=int)
        self.e_unit = np.array([e[1] for e in entries], dtype=int)
        self.e_coef = np.array([e[2] for e in entries], dtype=float)
        self.chunk_items = [(qid, chunk) for qid in self.qids for chunk in self.pools[qid].chunk_unit]
        self.chunk_position = {item: i for i, item in enumerate(self.chunk_items)}
        self.chunk_unit_index = np.array([self.unit_index[(q, self.pools[q].chunk_unit[c])] for q, c in self.chunk_items],
                                         dtype=int)
        self.chunk_open = np.ones(len(self.chunk_items), dtype=bool)
        self.outside_ideal = np.array([ideal_dcg(self.pools[q].outside.values(), self.k) for q in self.qids])
        self.discounts = np.array([discount(r) for r in range(1, self.width + 2)])

    def _rate_moments(self) -> tuple[np.ndarray, float]:
        """The smoothed grade distribution of the closed units, and the variance of its mean (a
        Dirichlet posterior's: ``Var(g) / (n + scale + 1)``)."""
        counts = 1.0 + np.bincount(self.unit_lo[~self.unit_open].astype(int), minlength=self.max_grade + 1)
        probs = counts / counts.sum()
        grades = np.arange(self.max_grade + 1, dtype=float)
        mean = probs @ grades
        return probs, float((probs @ grades ** 2 - mean ** 2) / (counts.sum() + 1.0))

    def grade_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Per unit: the expected grade and its variance (module docstring, "Confident"); a closed
        unit's grade is known (variance 0)."""
        probs, _ = self._rate_moments()
        closed = ~self.unit_open
        grades = np.arange(self.max_grade + 1, dtype=float)
        dist = probs[None, :]
        effective = np.maximum(grades[None, :], self.unit_lo[:, None])  # at least what its judged chunks give
        mean = (dist * effective).sum(axis=1)
        var = (dist * effective ** 2).sum(axis=1) - mean ** 2
        mean = np.where(closed, self.unit_lo, mean)
        var = np.where(closed, 0.0, np.maximum(var, 0.0))
        return mean, var

    def _normalizers(self, mean: np.ndarray) -> np.ndarray:
        """Per question: the ideal DCG@k of its expected grades (and outside grades), at least 1."""
        matrix = np.zeros((len(self.qids), self.width))
        matrix[self.unit_row, self.unit_col] = mean
        best = -np.sort(-matrix, axis=1)[:, :self.k]
        ideal = (best * self.discounts[:best.shape[1]]).sum(axis=1)
        return np.maximum(np.maximum(ideal, self.outside_ideal), 1.0)

    def _moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The model's moments of the current grades (per question and pair: expected difference and its
        variance; per unit: expected grade and variance; per question: the normaliser), computed once per
        judgment: the page's decision, its order and its estimate of the grades left all read them."""
        if self._cached[0] != self._version:
            self._cached = (self._version, self._compute_moments())
        return self._cached[1]

    def _compute_moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        mean, var = self.grade_moments()
        norm = self._normalizers(mean)
        rows = len(self.qids) * len(self.pairs)
        num = np.bincount(self.e_row, weights=self.e_coef * mean[self.e_unit], minlength=rows)
        spread = np.bincount(self.e_row, weights=self.e_coef ** 2 * var[self.e_unit], minlength=rows)
        q_norm = np.repeat(norm, len(self.pairs))
        return (num / q_norm).reshape(len(self.qids), -1), (spread / q_norm ** 2).reshape(len(self.qids), -1), \
            mean, var, norm

    def distribution(self) -> dict[tuple[str, str], tuple[float, float, int]]:
        """Per pair (a, b): the model's distribution of mean(a - b) over the set once every pooled chunk
        is judged (module docstring, "Confident"), as (mean, variance, degrees of freedom) of a Student t.
        Only the questions with a judgment are read: each gives its expected difference (its open units
        at the grade rate), and the questions nobody judged yet are taken as the judged ones' like (a
        sample of the set: the judged questions' spread over their count, with the finite-population
        correction), so that no verdict ever rests on the rate prior of questions nobody looked at.
        Empty with fewer judged questions than :data:`MIN_JUDGED_QUESTIONS` (or than the set has)."""
        mu, var, _, _, norm = self._moments()
        _, rate_var = self._rate_moments()
        pairs = len(self.pairs)
        judged = self.judged_questions()
        count, total = int(judged.sum()), len(self.qids)
        if count < min(MIN_JUDGED_QUESTIONS, total) or count == 0:
            return {}
        in_judged = judged[self.e_row // pairs] & self.unit_open[self.e_unit]
        weight = np.where(in_judged, self.e_coef / norm[self.e_row // pairs], 0.0)
        shared = np.bincount(self.e_row % pairs, weights=weight, minlength=pairs)  # per pair: sum of c_u / N_q
        out = {}
        for j, pair in enumerate(self.pairs):
            d = mu[judged, j]
            sampling = d.var(ddof=1) / count * (1.0 - count / total) if count > 1 else 0.0
            within = var[judged, j].sum() / count ** 2 + (shared[j] / count) ** 2 * rate_var
            out[pair] = (float(d.mean()), float(sampling + within), max(count - 1, 1))
        return out

    def confidence(self) -> dict[tuple[str, str], float]:
        """Per pair (a, b): P(a beats b on the whole set once every pooled chunk is judged) under the
        model (:meth:`distribution`); 0.5 before enough questions are judged."""
        model = self.distribution()
        return {pair: probability_between(model.get(pair), 0.0, math.inf) for pair in self.pairs}

    def sampling_spread(self, a: str, b: str) -> tuple[float, int, int]:
        """The judged questions' expected differences of (a, b): their variance (ddof 1), the judged
        count and the set's size (what more judged questions take off the model's variance)."""
        mu, _, _, _, _ = self._moments()
        judged = self.judged_questions()
        d = mu[judged, self._pair_index(a, b)]
        return (float(d.var(ddof=1)) if len(d) > 1 else math.nan), int(judged.sum()), len(self.qids)

    def fixed_questions(self) -> np.ndarray:
        """Per question: no grade can change any pair's difference (every method ranks the same units
        in the same places of its top k), so it counts with difference 0 whatever is judged."""
        return np.array([ranks_alike(self.pools[q], self.methods, self.k) for q in self.qids], dtype=bool)

    def _update(self, qid: str) -> None:
        pool, i = self.pools[qid], self.row[qid]
        bounds = unit_grade_bounds(pool, self.grades[qid], self.settled[qid], self.max_grade)
        self.bounds[qid] = bounds
        for unit, (lo, hi) in bounds.items():
            index = self.unit_index.get((qid, unit))
            if index is not None:
                self.unit_lo[index], self.unit_open[index] = lo, hi > lo
        for j, coef in enumerate(self.coef[qid]):
            self.lower[i, j], self.point[i, j], self.upper[i, j] = difference_bounds(coef, bounds, pool.outside, self.k)
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
        probability = self.confidence()
        confidence = {p.b: (1.0 if p.lower > 0 else probability[(leader, p.b)] if (leader, p.b) in probability
                            else 1.0 - probability[(p.b, leader)]) for p in pairs}
        confident = decided or all(p.lower == p.upper or confidence[p.b] >= self.pair_confidence for p in pairs)
        return Decision(leader, means, pairs, decided, tied, confidence, confident)

    def judged_questions(self) -> np.ndarray:
        """Per question: whether any of its chunks has a grade."""
        return np.array([bool(self.grades[q]) for q in self.qids], dtype=bool)

    def chunk_weights(self, decision: Decision | None = None) -> np.ndarray:
        """MTC's priority of every pooled chunk, in :attr:`chunk_items` order (module docstring,
        "Priority"): how much its grade is expected to shrink the variance of the undecided pairs'
        differences. In a question already judged, ``c_u^2 Var(g_u) / N_q^2``; in a question not yet
        judged, that plus what one more judged question takes off the sampling variance (the judged
        questions' spread ``s^2``) minus the uncertainty its other open units bring in. 0 for a
        chunk judged, or one that can move no undecided pair."""
        decision = decision or self.decision()
        undecided = [self._pair_index(p.a, p.b) for p in decision.pairs
                     if not (p.fixed or decision.confidence.get(p.b, 0.0) >= self.pair_confidence
                             or p.b in self.margin_decided)]
        if not undecided or not len(self.e_row):
            return np.zeros(len(self.chunk_items))
        mu, within, _, var, norm = self._moments()
        judged = self.judged_questions()
        pairs = len(self.pairs)
        q_of, pair_of = self.e_row // pairs, self.e_row % pairs
        chosen = np.isin(pair_of, undecided) & self.unit_open[self.e_unit]
        own = self.e_coef ** 2 * var[self.e_unit] / norm[q_of] ** 2
        spread = np.array([mu[judged, j].var(ddof=1) if judged.sum() >= MIN_JUDGED_QUESTIONS else 1.0
                           for j in range(pairs)])
        # a question joins with its LOOKAHEAD most telling open units judged: what it leaves open after that
        order = np.lexsort((-own, self.e_row))
        first = np.r_[True, self.e_row[order][1:] != self.e_row[order][:-1]]
        starts = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
        top = np.zeros(len(order), dtype=bool)
        top[order] = (np.arange(len(order)) - starts) < LOOKAHEAD
        ahead = np.bincount(self.e_row[top], weights=own[top], minlength=len(self.qids) * pairs).reshape(-1, pairs)
        left = np.maximum(within - ahead, 0.0)
        joining = np.where(judged[q_of], 0.0, spread[pair_of] - left[q_of, pair_of])
        gain = own + joining
        unit_gain = np.bincount(self.e_unit[chosen], weights=gain[chosen], minlength=len(self.unit_row))
        unit_gain = np.where(self.unit_open, np.maximum(unit_gain, 0.0), 0.0)
        return unit_gain[self.chunk_unit_index] * self.chunk_open

    def weight(self, qid: str, chunk: str, decision: Decision | None = None) -> float:
        """MTC's priority of one chunk (see :meth:`chunk_weights`)."""
        return float(self.chunk_weights(decision)[self.chunk_position[(qid, chunk)]])

    def is_open(self, qid: str, chunk: str) -> bool:
        """The chunk is neither judged nor settled."""
        return chunk not in self.grades[qid] and chunk not in self.settled[qid]

    def _pair_index(self, a: str, b: str) -> int:
        return self.pairs.index((a, b)) if (a, b) in self.pairs else self.pairs.index((b, a))

    def open_chunks(self) -> list[tuple[str, str]]:
        """Every open (question, pooled chunk)."""
        return [(qid, c) for qid in self.qids for c in self.pools[qid].chunk_unit if self.is_open(qid, c)]


def probability_between(distribution: tuple[float, float, int] | None, low: float, high: float) -> float:
    """P(low < D < high) for D ~ mean + sqrt(var) * Student t(df) (:meth:`PoolDecision.distribution`); a
    variance of 0 is a point mass (1 when inside, 0 outside, 0.5 on an end); None (no model yet): 0.5."""
    from scipy.stats import t as student

    if distribution is None:
        return 0.5
    mean, var, df = distribution
    if var <= 0:
        return 1.0 if low < mean < high else 0.5 if mean in (low, high) else 0.0
    scale = math.sqrt(var)
    return float(student.cdf((high - mean) / scale, df) - student.cdf((low - mean) / scale, df))


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

    ``"mtc"``: the highest :meth:`PoolDecision.chunk_weights` (ties: a seeded random key), falling
    back to depth order once no open chunk can move an undecided pair. ``"depth"``: question by
    question, each question's pool in the order given (``depth_orders``; default the pool's).
    ``"random"``: a seeded shuffle of every pooled chunk (for benchmarks)."""

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
        keys = rng.random(len(decision.chunk_items))
        self.key = {item: float(x) for item, x in zip(decision.chunk_items, keys)}
        self._keys = keys

    def next(self, skip: set[tuple[str, str]] = frozenset()) -> tuple[str, str] | None:
        """The next open item not in ``skip``; None when every pooled chunk is judged or skipped."""
        if self.order == "mtc" and self.state.chunk_items:
            weights = self.state.chunk_weights()
            if skip:
                weights = weights.copy()
                for item in skip:
                    if item in self.state.chunk_position:
                        weights[self.state.chunk_position[item]] = 0.0
            top = weights.max()
            if top > 0:
                candidates = np.flatnonzero(weights == top)
                return self.state.chunk_items[candidates[np.argmax(self._keys[candidates])]]
        return next((item for item in self.sequence if item not in skip and self.state.is_open(*item)), None)
