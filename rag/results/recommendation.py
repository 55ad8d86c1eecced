"""The recommendation: which method to use, per question set and overall, from the paired tests on
one primary metric (``evaluation.primary``). The rule (docs/evaluation.md, "Recommendation"):

Per question set, among the methods with a defined primary metric (answer-only baselines have none):

1. the *best* is the method with the highest mean (config order on an exact tie);
2. its comparison with every other method is read from the set's Holm-adjusted paired tests:
   ``better`` (p_adjusted < alpha, best ahead), ``tied`` (not significant) or ``underpowered``
   (not significant and never could be at this n: smallest attainable adjusted p >= alpha);
3. the *top group* is the best and every method it does not beat significantly;
4. outcome ``winner`` when the top group is the best alone ("use it"); otherwise ``no winner``:
   the data cannot separate the top group, and the cheapest of it (``retrieval_ms_per_query``: the
   whole retrieval cost per question, a fusion's inputs, a query transform's and a reranker's LLM
   calls included) is named, since nothing measured speaks for paying more. The LLM calls and tokens
   inside that time are shown beside it (``llm_calls_per_query``), not added to it a second time.

Overall: a method is *eligible* when it is in the top group of every set (never significantly worse
than the best). Among the eligible, the recommended one wins the most sets outright, then has the
best mean in the most sets, then is the cheapest. Outcomes: ``winner`` when it wins at least one
set; ``no winner`` when no eligible method wins any set (the cheapest eligible one is named);
``per set`` when no method is eligible (each set's own recommendation stands).

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


@dataclass(frozen=True)
class SetRecommendation:
    question_set: str
    questions: int
    outcome: str  # WINNER or NO_WINNER
    method: str  # the method to use (the winner, or the cheapest of the top group)
    method_ms_per_query: float
    best: str
    best_mean: float
    top_group: list[str]
    versus: list[Versus]


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
        sets = [SetRecommendation(**{**_nan(s, ("method_ms_per_query", "best_mean")),
                                     "versus": [Versus(**_nan(v, ("margin", "p_adjusted", "smallest_p_adjusted", "mdd",
                                                                  "mean", "ms_per_query"))) for v in s["versus"]]})
                for s in data["sets"]]
        return cls(**{**data, "sets": sets, "ms_per_query": {k: math.nan if v is None else v
                                                             for k, v in data["ms_per_query"].items()}})


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
                  float(other[primary]), float(other["retrieval_ms_per_query"]))


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
    cost = dict(zip(part["method"], part["retrieval_ms_per_query"]))
    if len(top) == 1:
        outcome, method = WINNER, top[0]
    else:
        outcome, method = NO_WINNER, min(top, key=lambda m: (_cost(cost[m]), top.index(m)))
    return SetRecommendation(question_set, int(best["questions"]), outcome, method, float(cost[method]), str(best["method"]),
                             float(best[primary]), top, versus)


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
    if not sets:
        return Recommendation(primary, alpha, CANNOT_JUDGE, None, all_sets, ms_per_query=ms, unjudged=left_out)
    wins = {m: sum(r.outcome == WINNER and r.method == m for r in sets) for m in candidates}
    best_in = {m: sum(r.best == m for r in sets) for m in candidates}
    eligible = [m for m in candidates if all(m in r.top_group for r in sets)]
    if not eligible:
        outcome, method = PER_SET, None
    else:
        method = min(eligible, key=lambda m: (-wins[m], -best_in[m], _cost(ms[m]), candidates.index(m)))
        if wins[method] == 0:
            method = min(eligible, key=lambda m: (_cost(ms[m]), candidates.index(m)))
            outcome = NO_WINNER
        else:
            outcome = WINNER
    return Recommendation(primary, alpha, outcome, method, all_sets, wins, best_in, eligible, ms, left_out)


def default_primary(metrics: Sequence[str], top_k: int | None = None) -> str | None:
    """``ndcg@top_k`` (or any URL-level nDCG) when measured, else the first URL-level retrieval metric."""
    retrieval = [m for m in metrics if not m.startswith("chunk:") and m not in ("em", "f1", "match")
                 and not m.startswith("answer_in_context")]
    for wanted in ([f"ndcg@{top_k}"] if top_k else []) + [m for m in retrieval if m.startswith("ndcg")]:
        if wanted in retrieval:
            return wanted
    return retrieval[0] if retrieval else None
