"""The recommendation: which method to use, per question set and overall, from the paired comparisons on
one primary metric (``evaluation.primary``) and a *margin* (``evaluation.margin``, default
:data:`DEFAULT_MARGIN`: the smallest difference on the primary metric that matters; docs/evaluation.md,
"The margin"). The rule (docs/evaluation.md, "Recommendation") ends in one of four outcomes, each with
its confidence.

Per question set, among the methods with a defined primary metric (answer-only baselines have none):

1. the *best* is the method with the highest mean (config order on an exact tie);
2. its comparison with every other method X is read two ways: the Holm-adjusted paired test
   (``better``: p_adjusted < alpha, best ahead; ``tied``; ``underpowered``: not significant and never
   could be at this n), and the *interval* of mean(X - best): the inverted sign-flip test at alpha /
   (k - 1), simultaneous over the best's k - 1 comparisons (:func:`evaluation.randomization_interval`,
   the pairwise table's ``interval_low``/``interval_high``), clipped to [-1, 1];
3. the *top group* is the best and every method it does not beat significantly;
4. the outcome, the first that holds:

   - ``non-inferior``: a method other than the best whose interval's lower end lies above -margin (not
     worse than the best by more than the margin) and that is *cheaper beyond noise* than every other
     such method and the best: "use bm25: at most 0.02 below convex, cheaper". A cheaper choice is made
     only so, never by default;
   - ``winner``: the top group is the best alone ("use it");
   - ``equivalent``: every member of the top group has its interval inside (-margin, +margin): "rrf and
     convex are equivalent within ±0.02; pick on anything else" (``method``: the best mean);
   - ``undecided``: none of these. ``questions_needed`` says about how many questions would decide
     (:func:`questions_to_decide`), None when no practical number would (the difference may be real but
     smaller than any practical set can show).

   A set with fewer than :data:`MIN_QUESTIONS` questions is ``undecided`` whatever its data (and its
   ``questions_needed`` is still given).

Cheaper beyond noise: cost a is below cost b by more than ``noise(a) + noise(b)``, where a method's
noise (``retrieval_ms_noise``) is the spread (max - min) of its per-question time over the run's own
pass and repeated timing passes on a sample of the questions (:mod:`rag.runner.costs`). An unknown
noise (NaN: an LLM-backed method, an external run file, a table written before it was measured) or cost
separates nothing. The cost is ``retrieval_ms_per_query`` (the whole retrieval cost per question, a
fusion's inputs, a query transform's and a reranker's LLM calls included).

Overall, over the sets that can judge: a method is *eligible* when it is in the top group of every set.
The first that holds:

- ``non-inferior``: a method non-inferior (or best) in every set, cheaper beyond noise than every other
  method that is, and not the best of every set;
- ``winner``: among the eligible, the one that wins the most sets outright, then has the best mean in
  the most sets, then is cheaper beyond noise than the others so tied (else config order), wins at
  least one set;
- ``equivalent``: two or more eligible methods, each inside ±margin of the best in every set;
- ``per set``: no method is eligible, or every set is decided but not on one method (each set's own
  recommendation stands);
- ``undecided``: otherwise; ``questions_needed`` the largest of the undecided sets'.

Sets whose questions cannot judge (``unjudged``: every method at the ceiling, too few questions, leak
or lexical bias above the limits of :mod:`rag.results.headline`) keep their own line but are left out
of the overall rule; when every set is unjudged the outcome is ``cannot judge`` and no method is named.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import pandas as pd

from evaluation.stats import DEFAULT_MARGIN, questions_needed

WINNER, NON_INFERIOR, EQUIVALENT, UNDECIDED = "winner", "non-inferior", "equivalent", "undecided"
PER_SET, CANNOT_JUDGE = "per set", "cannot judge"
BETTER, TIED, UNDERPOWERED = "better", "tied", "underpowered"
#: The comparison table's column with each method's cost noise in ms per question (module docstring).
NOISE = "retrieval_ms_noise"
#: Fewer questions than this in a set: nothing is decided (docs/evaluation.md, "Small sets").
MIN_QUESTIONS = 10


@dataclass(frozen=True)
class Versus:
    """One other method against the best of a set on the primary metric."""

    method: str
    state: str  # BETTER (the best beats it significantly), TIED or UNDERPOWERED
    difference: float  # mean(method - best) on the shared questions (<= 0)
    p_adjusted: float
    n_pairs: int
    smallest_p_adjusted: float
    mdd: float
    mean: float
    ms_per_query: float
    ms_noise: float = math.nan  # the method's cost noise (module docstring); NaN: unknown
    interval: list[float] = field(default_factory=lambda: [math.nan, math.nan])  # of mean(method - best)
    sd: float = math.nan  # the paired differences' standard deviation

    def non_inferior(self, margin: float) -> bool:
        """Not worse than the best by more than ``margin``: the interval's lower end above -margin."""
        return self.interval[0] > -margin

    def equivalent(self, margin: float) -> bool:
        """Within ±``margin`` of the best: both ends of the interval inside."""
        return -margin < self.interval[0] and self.interval[1] < margin


@dataclass(frozen=True)
class SetRecommendation:
    question_set: str
    questions: int
    outcome: str  # WINNER, NON_INFERIOR, EQUIVALENT or UNDECIDED
    method: str  # the winner, the non-inferior cheaper method, else the best
    method_ms_per_query: float
    best: str
    best_mean: float
    top_group: list[str]
    versus: list[Versus]
    method_ms_noise: float = math.nan
    margin: float = DEFAULT_MARGIN
    questions_needed: int | None = None  # undecided: about how many questions would decide (None: no practical number)
    interval_level: float = math.nan  # each interval's two-sided level (alpha / (k - 1))
    best_ms_per_query: float = math.nan

    def against(self, method: str) -> Versus | None:
        return next((v for v in self.versus if v.method == method), None)


@dataclass(frozen=True)
class Recommendation:
    primary: str
    alpha: float
    outcome: str  # WINNER, NON_INFERIOR, EQUIVALENT, UNDECIDED, PER_SET or CANNOT_JUDGE
    method: str | None
    sets: list[SetRecommendation]
    wins: dict[str, int] = field(default_factory=dict)  # sets won outright
    best_in: dict[str, int] = field(default_factory=dict)  # sets with the highest mean
    eligible: list[str] = field(default_factory=list)  # in the top group of every set
    ms_per_query: dict[str, float] = field(default_factory=dict)  # mean over sets
    unjudged: list[str] = field(default_factory=list)  # sets left out of the overall rule
    ms_noise: dict[str, float] = field(default_factory=dict)  # mean over sets; NaN: unknown
    margin: float = DEFAULT_MARGIN
    equivalent: list[str] = field(default_factory=list)  # EQUIVALENT: the methods within ±margin
    questions_needed: int | None = None  # UNDECIDED: the largest of the undecided sets'

    @property
    def judged_sets(self) -> list[SetRecommendation]:
        """The sets the overall rule reads."""
        return [s for s in self.sets if s.question_set not in self.unjudged]

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe (NaN and inf -> None): the recommendation and every input of the rule."""
        return _json_safe(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Recommendation":
        """The inverse of :meth:`as_dict` (None -> NaN), e.g. from a run's comparison.json; a run
        written before the margin (``no winner``, each versus's ``margin`` = best - method, no
        interval) reads as undecided with unknown intervals."""
        sets = [SetRecommendation(**{**_nan(_known(s, SetRecommendation), ("method_ms_per_query", "best_mean",
                                                                             "method_ms_noise", "interval_level",
                                                                             "best_ms_per_query")),
                                     "outcome": _outcome(s["outcome"]),
                                     "versus": [_versus_from(v) for v in s["versus"]]})
                for s in data["sets"]]
        floats = {key: {k: math.nan if v is None else v for k, v in data.get(key, {}).items()}
                  for key in ("ms_per_query", "ms_noise")}
        return cls(**{**_known(data, cls), "outcome": _outcome(data["outcome"]), "sets": sets, **floats})


#: The one outcome of runs written before the margin that no longer exists.
_EARLIER_OUTCOMES = {"no winner": UNDECIDED}


def _outcome(outcome: str) -> str:
    return _EARLIER_OUTCOMES.get(outcome, outcome)


def _known(data: dict[str, Any], kind: type) -> dict[str, Any]:
    """The keys of ``data`` that are fields of the dataclass ``kind`` (an earlier run's ``by_cost`` is not)."""
    names = {f.name for f in fields(kind)}
    return {k: v for k, v in data.items() if k in names}


def _versus_from(data: dict[str, Any]) -> Versus:
    values = _nan(_known(data, Versus), ("difference", "p_adjusted", "smallest_p_adjusted", "mdd", "mean",
                                         "ms_per_query", "ms_noise", "sd"))
    if "difference" not in data and data.get("margin") is not None:  # written before the margin: best - method
        values["difference"] = -float(data["margin"])
    values["interval"] = [math.nan if x is None else x for x in data.get("interval", [None, None])]
    return Versus(**values)


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
    sign = 1.0 if row["method_a"] == other["method"] else -1.0  # the table's a - b, turned into other - best
    difference = sign * float(row["mean_diff"])
    if bool(row["significant"]) and difference < 0:
        state = BETTER
    else:
        state = UNDERPOWERED if bool(row.get("underpowered", False)) else TIED
    low, high = (float(row.get("interval_low", math.nan)), float(row.get("interval_high", math.nan)))
    low, high = (low, high) if sign > 0 else (-high, -low)
    bounded = [max(low, -1.0), min(high, 1.0)]  # the primary metrics lie in [0, 1]
    return Versus(str(other["method"]), state, difference, float(row["p_adjusted"]), int(row["n_pairs"]),
                  float(row.get("smallest_p_adjusted", math.nan)), float(row.get("mdd", math.nan)),
                  float(other[primary]), float(other["retrieval_ms_per_query"]), _noise_of(other), bounded,
                  float(row.get("sd_diff", math.nan)))


def _noise_of(row: pd.Series) -> float:
    return float(row.get(NOISE, math.nan))


def cheaper_beyond_noise(method: str, others: Collection[str], ms: dict[str, float], noise: dict[str, float]) -> bool:
    """True when ``method``'s cost is below every other's by more than the two costs' noise summed
    (the module docstring); a NaN cost or noise separates nothing."""
    return all(all(math.isfinite(x) for x in (ms[method], noise[method], ms[o], noise[o]))
               and ms[o] - ms[method] > noise[method] + noise[o] for o in others if o != method)


def questions_to_decide(v: Versus, margin: float, level: float, cheaper: bool = False) -> int | None:
    """About how many questions would decide the comparison of ``v.method`` with the best (topic set
    size design, :func:`evaluation.questions_needed`, from the observed difference and spread at the
    interval's level and 80% power): the fewest of showing the best better (its difference's distance
    from 0), showing the two equivalent (its distance from ±margin) and, for a method ``cheaper``
    beyond noise, showing it non-inferior (its distance from -margin). None: no practical number."""
    d = v.difference
    options = [questions_needed(v.sd, -d, level), questions_needed(v.sd, margin - abs(d), level)]
    if cheaper:
        options.append(questions_needed(v.sd, d + margin, level))
    found = [n for n in options if n is not None]
    return min(found) if found else None


def recommend_set(table: pd.DataFrame, pairwise: pd.DataFrame, question_set: str, primary: str,
                  margin: float = DEFAULT_MARGIN) -> SetRecommendation | None:
    """The recommendation for one question set (None with fewer than two methods defining ``primary``)."""
    part = table[(table["question_set"] == question_set) & table[primary].notna()]
    if len(part) < 2:
        return None
    ranked = part.sort_values(primary, ascending=False, kind="stable")
    best = ranked.iloc[0]
    name = str(best["method"])
    tests = pairwise[(pairwise["question_set"] == question_set) & (pairwise["metric"] == primary)]
    versus = [_versus(best, other, tests, primary) for _, other in ranked.iloc[1:].iterrows()]
    top = [name] + [v.method for v in versus if v.state != BETTER]
    cost = {str(m): float(v) for m, v in zip(part["method"], part["retrieval_ms_per_query"])}
    noise = (dict(zip(map(str, part["method"]), part[NOISE].astype(float))) if NOISE in part
             else {str(m): math.nan for m in part["method"]})
    level = float(tests["interval_level"].iloc[0]) if "interval_level" in tests and len(tests) else math.nan
    questions = int(best["questions"])
    non_inferior = [name] + [v.method for v in versus if v.non_inferior(margin)]
    cheapest = min(non_inferior, key=lambda m: (_cost(cost[m]), non_inferior.index(m)))
    needed = None
    if questions < MIN_QUESTIONS:
        outcome, method = UNDECIDED, name
    elif cheapest != name and cheaper_beyond_noise(cheapest, non_inferior, cost, noise):
        outcome, method = NON_INFERIOR, cheapest
    elif len(top) == 1:
        outcome, method = WINNER, name
    elif all(v.equivalent(margin) for v in versus if v.method in top):
        outcome, method = EQUIVALENT, name
    else:
        outcome, method = UNDECIDED, name
    if outcome == UNDECIDED:
        open_ = [v for v in versus if v.method in top and not v.equivalent(margin)] or versus
        each = [questions_to_decide(v, margin, level, cheaper_beyond_noise(v.method, [name], cost, noise)) for v in open_]
        needed = None if None in each else max(each + [MIN_QUESTIONS])
    return SetRecommendation(question_set, questions, outcome, method, float(cost[method]), name,
                             float(best[primary]), top, versus, noise[method], margin, needed, level, cost[name])


def _cost(ms: float) -> float:
    return math.inf if math.isnan(ms) else ms


def recommend(table: pd.DataFrame, pairwise: pd.DataFrame, primary: str, alpha: float,
              unjudged: Collection[str] = (), margin: float = DEFAULT_MARGIN) -> Recommendation | None:
    """The recommendation per set and overall by the rule in this module's docstring (None when no set
    has two methods with a defined ``primary``); ``unjudged`` sets are left out of the overall rule."""
    if pairwise.empty or primary not in table:
        return None
    all_sets = [r for s in dict.fromkeys(table["question_set"])
                if (r := recommend_set(table, pairwise, s, primary, margin))]
    if not all_sets:
        return None
    left_out = [r.question_set for r in all_sets if r.question_set in unjudged]
    sets = [r for r in all_sets if r.question_set not in left_out]
    candidates = list(dict.fromkeys(m for r in all_sets for m in [r.best, *(v.method for v in r.versus)]))
    rows = table[table["method"].isin(candidates)]
    ms = {m: float(rows.loc[rows["method"] == m, "retrieval_ms_per_query"].mean()) for m in candidates}
    noise = {m: float(rows.loc[rows["method"] == m, NOISE].mean()) if NOISE in rows else math.nan for m in candidates}
    common = dict(primary=primary, alpha=alpha, sets=all_sets, ms_per_query=ms, unjudged=left_out, ms_noise=noise,
                  margin=margin)
    if not sets:
        return Recommendation(outcome=CANNOT_JUDGE, method=None, **common)
    wins = {m: sum(r.outcome == WINNER and r.method == m for r in sets) for m in candidates}
    best_in = {m: sum(r.best == m for r in sets) for m in candidates}
    eligible = [m for m in candidates if all(m in r.top_group for r in sets)]
    common.update(wins=wins, best_in=best_in, eligible=eligible)
    fine = [m for m in candidates if all(m == r.best or ((v := r.against(m)) is not None and v.non_inferior(margin))
                                         for r in sets)]
    if fine:
        cheapest = min(fine, key=lambda m: (_cost(ms[m]), candidates.index(m)))
        if best_in[cheapest] < len(sets) and cheaper_beyond_noise(cheapest, fine, ms, noise):
            return Recommendation(outcome=NON_INFERIOR, method=cheapest, **common)
    if not eligible:
        return Recommendation(outcome=PER_SET, method=None, **common)
    leading = min((-wins[m], -best_in[m]) for m in eligible)
    tied = [m for m in eligible if (-wins[m], -best_in[m]) == leading]
    if wins[tied[0]] > 0:
        cheapest = min(tied, key=lambda m: (_cost(ms[m]), candidates.index(m)))
        method = cheapest if len(tied) > 1 and cheaper_beyond_noise(cheapest, tied, ms, noise) else tied[0]
        return Recommendation(outcome=WINNER, method=method, **common)
    if len(eligible) > 1 and all(m == r.best or r.against(m).equivalent(margin) for r in sets for m in eligible):
        return Recommendation(outcome=EQUIVALENT, method=tied[0], equivalent=eligible, **common)
    open_ = [r for r in sets if r.outcome == UNDECIDED]
    if not open_:  # every set decided, on different methods: each set's own line stands
        return Recommendation(outcome=PER_SET, method=None, **common)
    each = [r.questions_needed for r in open_]
    return Recommendation(outcome=UNDECIDED, method=tied[0], questions_needed=None if None in each else max(each),
                          **common)


def default_primary(metrics: Sequence[str], top_k: int | None = None) -> str | None:
    """``ndcg@top_k`` (or any URL-level nDCG) when measured, else the first URL-level retrieval metric."""
    retrieval = [m for m in metrics if not m.startswith("chunk:") and m not in ("em", "f1", "match")
                 and not m.startswith("answer_in_context")]
    for wanted in ([f"ndcg@{top_k}"] if top_k else []) + [m for m in retrieval if m.startswith("ndcg")]:
        if wanted in retrieval:
            return wanted
    return retrieval[0] if retrieval else None
