"""The recommendation: which method to use, per question set and overall, from the paired tests on
one primary metric (``evaluation.primary``). The rule (docs/evaluation.md, "Recommendation"):

Per question set, among the methods with a defined primary metric (answer-only baselines have none):

1. the *best* is the method with the highest mean (config order on an exact tie);
2. its comparison with every other method is read from the set's Holm-adjusted paired tests:
   ``better`` (p_adjusted < alpha, best ahead), ``tied`` (not significant) or ``underpowered``
   (not significant and never could be at this n: smallest attainable adjusted p >= alpha);
3. the *top group* is the best and every method it does not beat significantly;
4. outcome ``winner`` when the top group is the best alone ("use it"); otherwise ``no winner``:
   the data cannot separate the top group, and its cheapest member is named when it is *cheaper
   beyond noise* than every other member (since nothing measured speaks for paying more); when it is
   not, no member is chosen on cost: the group is named with its best mean (``by_cost`` False,
   ``method`` the best). The cost is ``retrieval_ms_per_query`` (the whole retrieval cost per
   question, a fusion's inputs, a query transform's and a reranker's LLM calls included; the LLM
   calls and tokens inside that time are shown beside it, ``llm_calls_per_query``, not added to it
   a second time).

Cheaper beyond noise: cost a is below cost b by more than ``noise(a) + noise(b)``, where a method's
noise (``retrieval_ms_noise``) is the spread (max - min) of its per-question time over the run's own
pass and repeated timing passes on a sample of the questions (:mod:`rag.runner.costs`). An unknown
noise (NaN: an LLM-backed method, a table written before it was measured) or cost separates nothing.

Overall: a method is *eligible* when it is in the top group of every set (never significantly worse
than the best). Among the eligible, the recommended one wins the most sets outright, then has the
best mean in the most sets, then is cheaper beyond noise than every other one so tied (else config
order). Outcomes: ``winner`` when it wins at least one set; ``no winner`` when no eligible method
wins any set (the eligible method cheaper beyond noise than every other eligible one is named, else
the one with the best mean in the most sets, ``by_cost`` False); ``per set`` when no method is
eligible (each set's own recommendation stands).

Sets whose questions cannot judge (``unjudged``: every method at the ceiling, too few questions, leak
or lexical bias above the limits of :mod:`rag.results.headline`) keep their own line but are left out
of the overall rule; when every set is unjudged the outcome is ``cannot judge`` and no method is named.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

WINNER, NO_WINNER, PER_SET, CANNOT_JUDGE = "winner", "no winner", "per set", "cannot judge"
BETTER, TIED, UNDERPOWERED = "better", "tied", "underpowered"
#: The comparison table's column with each method's cost noise in ms per question (module docstring).
NOISE = "retrieval_ms_noise"


@dataclass(frozen=True)
class Versus:
    """The best method of a set against one other method on the primary metric."""

    method: str
    state: str  # BETTER, TIED or UNDERPOWERED
    margin: float  # mean(best - method) on the shared questions
    p_adjusted: float
    n_pairs: int
    smallest_p_adjusted: float
    mdd: float
    mean: float
    ms_per_query: float
    ms_noise: float = math.nan  # the method's cost noise (module docstring); NaN: unknown


@dataclass(frozen=True)
class SetRecommendation:
    question_set: str
    questions: int
    outcome: str  # WINNER or NO_WINNER
    method: str  # the winner; with no winner the top group's cheapest beyond noise, else its best
    method_ms_per_query: float
    best: str
    best_mean: float
    top_group: list[str]
    versus: list[Versus]
    by_cost: bool = False  # no winner, and ``method`` is cheaper beyond noise than the rest of the group
    method_ms_noise: float = math.nan


@dataclass(frozen=True)
class Recommendation:
    primary: str
    alpha: float
    outcome: str  # WINNER, NO_WINNER or PER_SET
    method: str | None
    sets: list[SetRecommendation]
    wins: dict[str, int] = field(default_factory=dict)  # sets won outright
    best_in: dict[str, int] = field(default_factory=dict)  # sets with the highest mean
    eligible: list[str] = field(default_factory=list)  # in the top group of every set
    ms_per_query: dict[str, float] = field(default_factory=dict)  # mean over sets
    unjudged: list[str] = field(default_factory=list)  # sets left out of the overall rule
    ms_noise: dict[str, float] = field(default_factory=dict)  # mean over sets; NaN: unknown
    by_cost: bool = False  # cost decided ``method`` (beyond noise) among otherwise tied eligible methods

    @property
    def judged_sets(self) -> list[SetRecommendation]:
        """The sets the overall rule reads."""
        return [s for s in self.sets if s.question_set not in self.unjudged]

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe (NaN and inf -> None): the recommendation and every input of the rule."""
        return _json_safe(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Recommendation":
        """The inverse of :meth:`as_dict` (None -> NaN), e.g. from a run's comparison.json."""
        sets = [SetRecommendation(**{"by_cost": s["outcome"] == NO_WINNER,  # before noise: always by cost
                                     **_nan(s, ("method_ms_per_query", "best_mean", "method_ms_noise")),
                                     "versus": [Versus(**_nan(v, ("margin", "p_adjusted", "smallest_p_adjusted", "mdd",
                                                                  "mean", "ms_per_query", "ms_noise")))
                                                for v in s["versus"]]})
                for s in data["sets"]]
        floats = {key: {k: math.nan if v is None else v for k, v in data.get(key, {}).items()}
                  for key in ("ms_per_query", "ms_noise")}
        return cls(**{"by_cost": data["outcome"] == NO_WINNER, **data, "sets": sets, **floats})


def _nan(data: dict[str, Any], floats: Sequence[str]) -> dict[str, Any]:
    return {k: (math.nan if k in floats and v is None else v) for k, v in data.items()}


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _versus(best: pd.Series, other: pd.Series, tests: pd.DataFrame, primary: str) -> Versus:
    row = tests[((tests["method_a"] == best["method"]) & (tests["method_b"] == other["method"]))
                | ((tests["method_a"] == other["method"]) & (tests["method_b"] == best["method"]))].iloc[0]
    sign = 1.0 if row["method_a"] == best["method"] else -1.0
    margin = sign * float(row["mean_diff"])
    if bool(row["significant"]) and margin > 0:
        state = BETTER
    else:
        state = UNDERPOWERED if bool(row.get("underpowered", False)) else TIED
    return Versus(str(other["method"]), state, margin, float(row["p_adjusted"]), int(row["n_pairs"]),
                  float(row.get("smallest_p_adjusted", math.nan)), float(row.get("mdd", math.nan)),
                  float(other[primary]), float(other["retrieval_ms_per_query"]), _noise_of(other))


def _noise_of(row: pd.Series) -> float:
    return float(row.get(NOISE, math.nan))


def cheaper_beyond_noise(method: str, others: Collection[str], ms: dict[str, float], noise: dict[str, float]) -> bool:
    """True when ``method``'s cost is below every other's by more than the two costs' noise summed
    (the module docstring); a NaN cost or noise separates nothing."""
    return all(all(math.isfinite(x) for x in (ms[method], noise[method], ms[o], noise[o]))
               and ms[o] - ms[method] > noise[method] + noise[o] for o in others if o != method)


def recommend_set(table: pd.DataFrame, pairwise: pd.DataFrame, question_set: str, primary: str) -> SetRecommendation | None:
    """The recommendation for one question set (None with fewer than two methods defining ``primary``)."""
    part = table[(table["question_set"] == question_set) & table[primary].notna()]
    if len(part) < 2:
        return None
    ranked = part.sort_values(primary, ascending=False, kind="stable")
    best = ranked.iloc[0]
    tests = pairwise[(pairwise["question_set"] == question_set) & (pairwise["metric"] == primary)]
    versus = [_versus(best, other, tests, primary) for _, other in ranked.iloc[1:].iterrows()]
    top = [str(best["method"])] + [v.method for v in versus if v.state != BETTER]
    cost = {str(m): float(v) for m, v in zip(part["method"], part["retrieval_ms_per_query"])}
    noise = (dict(zip(map(str, part["method"]), part[NOISE].astype(float))) if NOISE in part
             else {str(m): math.nan for m in part["method"]})
    by_cost = False
    if len(top) == 1:
        outcome, method = WINNER, top[0]
    else:
        outcome, method = NO_WINNER, min(top, key=lambda m: (_cost(cost[m]), top.index(m)))
        by_cost = cheaper_beyond_noise(method, top, cost, noise)
        method = method if by_cost else top[0]
    return SetRecommendation(question_set, int(best["questions"]), outcome, method, float(cost[method]), str(best["method"]),
                             float(best[primary]), top, versus, by_cost, noise[method])


def _cost(ms: float) -> float:
    return math.inf if math.isnan(ms) else ms


def recommend(table: pd.DataFrame, pairwise: pd.DataFrame, primary: str, alpha: float,
              unjudged: Collection[str] = ()) -> Recommendation | None:
    """The recommendation per set and overall by the rule in this module's docstring (None when no set
    has two methods with a defined ``primary``); ``unjudged`` sets are left out of the overall rule."""
    if pairwise.empty or primary not in table:
        return None
    all_sets = [r for s in dict.fromkeys(table["question_set"]) if (r := recommend_set(table, pairwise, s, primary))]
    if not all_sets:
        return None
    left_out = [r.question_set for r in all_sets if r.question_set in unjudged]
    sets = [r for r in all_sets if r.question_set not in left_out]
    candidates = list(dict.fromkeys(m for r in all_sets for m in [r.best, *(v.method for v in r.versus)]))
    rows = table[table["method"].isin(candidates)]
    ms = {m: float(rows.loc[rows["method"] == m, "retrieval_ms_per_query"].mean()) for m in candidates}
    noise = {m: float(rows.loc[rows["method"] == m, NOISE].mean()) if NOISE in rows else math.nan for m in candidates}
    if not sets:
        return Recommendation(primary, alpha, CANNOT_JUDGE, None, all_sets, ms_per_query=ms, unjudged=left_out,
                              ms_noise=noise)
    wins = {m: sum(r.outcome == WINNER and r.method == m for r in sets) for m in candidates}
    best_in = {m: sum(r.best == m for r in sets) for m in candidates}
    eligible = [m for m in candidates if all(m in r.top_group for r in sets)]
    by_cost = False
    if not eligible:
        outcome, method = PER_SET, None
    else:
        leading = min((-wins[m], -best_in[m]) for m in eligible)
        tied = [m for m in eligible if (-wins[m], -best_in[m]) == leading]
        outcome = WINNER if wins[tied[0]] > 0 else NO_WINNER
        pool = tied if outcome == WINNER else eligible  # no winner: cost first, then the most best means
        cheapest = min(pool, key=lambda m: (_cost(ms[m]), candidates.index(m)))
        by_cost = len(pool) > 1 and cheaper_beyond_noise(cheapest, pool, ms, noise)
        method = cheapest if by_cost else tied[0]
    return Recommendation(primary, alpha, outcome, method, all_sets, wins, best_in, eligible, ms, left_out, noise,
                          by_cost)


def default_primary(metrics: Sequence[str], top_k: int | None = None) -> str | None:
    """``ndcg@top_k`` (or any URL-level nDCG) when measured, else the first URL-level retrieval metric."""
    retrieval = [m for m in metrics if not m.startswith("chunk:") and m not in ("em", "f1", "match")
                 and not m.startswith("answer_in_context")]
    for wanted in ([f"ndcg@{top_k}"] if top_k else []) + [m for m in retrieval if m.startswith("ndcg")]:
        if wanted in retrieval:
            return wanted
    return retrieval[0] if retrieval else None
