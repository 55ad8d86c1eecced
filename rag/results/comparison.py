"""The comparison of a run: per question set x method the mean of every metric with its bootstrap CI,
paired tests between every pair of methods, each method's paired difference from a baseline, and the
verdict per question set and headline metric.

Answer metrics are averaged over answered questions only (failed generations are counted in
``failures`` and never averaged in as zeros). A question set with any failed answer has every answer
result withheld (:func:`withhold_failed_answers`; the rule: :mod:`rag.results.headline`): its answer
columns count as undefined, so it has no answer mean, test, verdict or lift. Markers in the ranx style: a method's cell carries the
letters of the methods it beats with p < alpha under the named paired test on the same questions.

The verdict of a question set and metric: the method with the highest mean (the first in config order
on an exact tie), its difference over the runner-up with a paired bootstrap CI of the difference (the
questions both define), and whether the runner-up is beaten significantly (the Holm-adjusted paired
randomization test of :func:`evaluation.compare_metrics`), or that the test is *underpowered*: at
its n no p-value after the correction can fall below alpha (the smallest attainable one is kept).

Answer lift (``lifts``): each method's answer metrics minus the no-context baseline's (``control``,
closed_book) on the same questions, per question set and pooled over the run's own sets (not the
derived ``@sample`` sets, whose answers their base sets hold already; every answered question weighs the same; the
sign-flip test flips each question's difference on its own, so pooling
and stratifying by set give the same test), with a paired bootstrap CI and the Holm-adjusted
many-to-one tests (k - 1 comparisons per set and metric, not k (k - 1) / 2).

The recommendation (:mod:`rag.results.recommendation`) reads the tests of the primary metric.

Costs per set x method (:func:`_costs`): questions, answered and failed answers, ``retrieval_ms_per_query``
(the method's whole retrieval time per question, its inputs' and its LLM calls' included: the cost
the recommendation's cheapest rule reads, with ``retrieval_ms_noise``, its timing noise),
``llm_calls_per_query`` and ``llm_tokens_per_query`` (the LLM or endpoint requests inside that time,
and their tokens, shown beside it: a method that calls a remote endpoint pays in money what its
milliseconds may not show), generation seconds and tokens.
"""

from __future__ import annotations

import math
import string
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from evaluation import bootstrap_ci
from evaluation.stats import compare_metrics
from rag.results import schema
from rag.results.headline import AnswerFailures, StageFailures
from rag.results.recommendation import DEFAULT_MARGIN, Recommendation, default_primary, recommend

#: The ``question_set`` label of the lifts pooled over every answered set.
POOLED = "all sets"


@dataclass(frozen=True)
class StatisticsSettings:
    """Bootstrap CIs and paired tests as :func:`evaluation.compare_methods` computes them."""

    confidence: float = 0.95
    n_resamples: int = 10000
    alpha: float = 0.05
    correction: str | None = "holm"
    seed: int = 0
    margin: float = DEFAULT_MARGIN  # the recommendation's margin on the primary metric


@dataclass
class Comparison:
    """``table`` (one row per set x method), ``pairwise`` tests, ``differences`` from the baseline
    method and ``verdicts`` (one row per set x headline metric)."""

    table: pd.DataFrame
    pairwise: pd.DataFrame
    metrics: list[str]
    settings: StatisticsSettings
    letters: dict[str, str] = field(default_factory=dict)
    differences: pd.DataFrame = field(default_factory=pd.DataFrame)
    verdicts: pd.DataFrame = field(default_factory=pd.DataFrame)
    lifts: pd.DataFrame = field(default_factory=pd.DataFrame)
    recommendation: Recommendation | None = None
    control: str | None = None
    answers_withheld: dict[str, int] = field(default_factory=dict)  # set -> failed answers (results withheld)

    @property
    def test_name(self) -> str:
        return str(self.pairwise["test"].iloc[0]) if not self.pairwise.empty else "none (one method)"

    @property
    def methods(self) -> list[str]:
        return list(self.letters)


def headline_metrics(metrics: Sequence[str]) -> list[str]:
    """The metrics a verdict is given for: the URL-level retrieval metrics and answer F1."""
    return [m for m in metrics if not m.startswith(schema.CHUNK_PREFIX) and m != "em"]


def compare(per_query: pd.DataFrame, metrics: Sequence[str], settings: StatisticsSettings,
            baseline: str | None = None, primary: str | None = None, control: str | None = None) -> Comparison:
    """Build the comparison from the per-query table (columns of :mod:`rag.results.schema` plus every
    name in ``metrics``; NaN = undefined or not answered, left out of means and tests). ``baseline``:
    the method differences are taken from (default: the first method); ``primary``: the metric the
    recommendation reads (default :func:`default_primary`); ``control``: the method answer lifts are
    measured from (closed_book; none: no lifts)."""
    metrics = list(metrics)
    stages = StageFailures.of(per_query)
    if stages.by_method_set:  # a failed stage withholds the method's every result on the set
        per_query = per_query[~stages.withheld(per_query)]
    withheld = AnswerFailures.of(per_query).by_set
    per_query = withhold_failed_answers(per_query, metrics, withheld)
    methods = list(dict.fromkeys(per_query[schema.METHOD]))
    letters = {method: string.ascii_lowercase[i % 26] for i, method in enumerate(methods)}
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    pairwise_frames = []
    for question_set, frame in per_query.groupby(schema.QUESTION_SET, sort=False):
        for method, scores in frame.groupby(schema.METHOD, sort=False):
            rows[(question_set, method)] = _costs(question_set, method, scores)
        compared = compare_metrics(
            frame, metrics, confidence=settings.confidence, n_resamples=settings.n_resamples,
            seed=settings.seed, alpha=settings.alpha, correction=settings.correction,
        )
        for metric in metrics:
            summary, pairwise = compared[metric]
            for item in summary.itertuples():
                row = rows[(question_set, item.method)]
                row[metric], row[f"{metric}_ci_low"], row[f"{metric}_ci_high"] = item.mean, item.ci_low, item.ci_high
                if metric not in schema.ANSWER_COLUMNS:
                    row[f"{metric}_undefined"] = int(item.n_undefined)
            pairwise_frames.append(pairwise.assign(question_set=question_set, metric=metric))
    table = pd.DataFrame(list(rows.values()))
    pairwise = pd.concat(pairwise_frames, ignore_index=True) if pairwise_frames else pd.DataFrame()
    if not pairwise.empty:
        pairwise = pairwise[["question_set", "metric", *[c for c in pairwise.columns if c not in ("question_set", "metric")]]]
    for metric in metrics:
        table[f"{metric}_beats"] = [_beaten(pairwise, row.question_set, metric, row.method, letters)
                                    for row in table.itertuples()]
    comparison = Comparison(table, pairwise, metrics, settings, letters, answers_withheld=withheld)
    comparison.differences = paired_differences(per_query, metrics, baseline or methods[0], settings)
    comparison.verdicts = verdicts(per_query, comparison)
    comparison.control = control
    if control is not None and control in methods:
        comparison.lifts = answer_lifts(per_query[~per_query[schema.QUESTION_SET].isin(withheld)],
                                        [m for m in metrics if m in schema.ANSWER_COLUMNS], control, settings)
    primary = primary or default_primary(metrics)
    if primary is not None:
        comparison.recommendation = recommend(table, pairwise, primary, settings.alpha, margin=settings.margin)
    return comparison


def withhold_failed_answers(per_query: pd.DataFrame, metrics: Sequence[str], sets: Collection[str]) -> pd.DataFrame:
    """``per_query`` with the answer metrics of the question sets ``sets`` (those holding a failed
    answer: :attr:`AnswerFailures.withheld_sets`) set to NaN, all their rows, every method."""
    answer_columns = [m for m in metrics if m in schema.ANSWER_COLUMNS and m in per_query]
    if not sets or not answer_columns:
        return per_query
    blanked = per_query.copy()
    blanked.loc[blanked[schema.QUESTION_SET].isin(list(sets)), answer_columns] = math.nan
    return blanked


def answer_lifts(per_query: pd.DataFrame, metrics: Sequence[str], control: str,
                 settings: StatisticsSettings) -> pd.DataFrame:
    """Per question set and pooled (``POOLED``) x answer metric x method: mean(method - control) on the
    questions both answered, its bootstrap CI, the Holm-adjusted many-to-one test and its power."""
    answered = per_query[per_query[schema.GENERATION_STATUS] == schema.ANSWERED]
    sets = [s for s in dict.fromkeys(answered[schema.QUESTION_SET])
            if control in set(answered.loc[answered[schema.QUESTION_SET] == s, schema.METHOD])]
    if not metrics or not sets:
        return pd.DataFrame()
    frames = [(s, answered[answered[schema.QUESTION_SET] == s]) for s in sets]
    own = [s for s in sets if schema.base_set(s) == s]  # a derived sample set repeats its base set's answers
    if len(own) > 1:
        pooled = answered[answered[schema.QUESTION_SET].isin(own)]
        frames.append((POOLED, pooled.assign(**{schema.QID: pooled[schema.QUESTION_SET] + "/" + pooled[schema.QID]})))
    rows = []
    for question_set, frame in frames:
        compared = compare_metrics(frame, metrics, confidence=settings.confidence, n_resamples=settings.n_resamples,
                                   seed=settings.seed, alpha=settings.alpha, correction=settings.correction,
                                   control=control)
        for metric in metrics:
            for test in compared[metric][1].to_dict("records"):
                difference = frame_difference(frame, metric, test["method_a"], control, settings)
                rows.append({"question_set": question_set, "metric": metric, "method": test["method_a"],
                             "control": control, "lift": test["mean_diff"], "ci_low": difference["ci_low"],
                             "ci_high": difference["ci_high"],
                             **{k: test[k] for k in ("n_pairs", "p_adjusted", "significant", "smallest_p_adjusted",
                                                     "underpowered", "mdd")}})
    return pd.DataFrame(rows)


def _costs(question_set: str, method: str, scores: pd.DataFrame) -> dict[str, Any]:
    status = scores[schema.GENERATION_STATUS]
    generated = scores[status != schema.NOT_REQUESTED]
    return {
        "question_set": question_set,
        "method": method,
        "questions": len(scores),
        "answered": int((status == schema.ANSWERED).sum()),
        "failures": int((status == schema.FAILED).sum()),
        "retrieval_ms_per_query": float(scores[schema.RETRIEVAL_MS].mean()),
        "retrieval_ms_noise": float(scores[schema.RETRIEVAL_MS_NOISE].mean()) if schema.RETRIEVAL_MS_NOISE in scores
        else math.nan,
        "llm_calls_per_query": _mean_or_zero(scores, schema.LLM_CALLS),
        "llm_tokens_per_query": _mean_or_zero(scores, schema.LLM_TOKENS),
        "generation_s_per_question": float(generated[schema.GENERATION_S].mean()) if len(generated) else math.nan,
        "prompt_tokens": int(generated[schema.PROMPT_TOKENS].sum()),
        "completion_tokens": int(generated[schema.COMPLETION_TOKENS].sum()),
        "chunks_used": float(generated[schema.CHUNKS_USED].mean()) if schema.CHUNKS_USED in generated and len(generated)
        else math.nan,
    }


def _mean_or_zero(scores: pd.DataFrame, column: str) -> float:
    """The mean of a cost column; 0 for a per-query table written before the column existed (no LLM calls then)."""
    return float(scores[column].mean()) if column in scores else 0.0


def _beaten(pairwise: pd.DataFrame, question_set: str, metric: str, method: str, letters: dict[str, str]) -> str:
    """Letters of the methods that ``method`` beats significantly on ``metric`` in ``question_set``."""
    if pairwise.empty:
        return ""
    rows = pairwise[(pairwise["question_set"] == question_set) & (pairwise["metric"] == metric) & pairwise["significant"]]
    beaten = [r.method_b for r in rows.itertuples() if r.method_a == method and r.mean_diff > 0]
    beaten += [r.method_a for r in rows.itertuples() if r.method_b == method and r.mean_diff < 0]
    return "".join(sorted(letters[m] for m in beaten))


def paired_difference(per_query: pd.DataFrame, question_set: str, metric: str, a: str, b: str,
                      settings: StatisticsSettings) -> dict[str, float]:
    """mean(a - b) over the questions of ``question_set`` where both are defined, with the
    percentile-bootstrap CI of that mean (seeded) and the number of pairs."""
    return frame_difference(per_query[per_query[schema.QUESTION_SET] == question_set], metric, a, b, settings)


def frame_difference(frame: pd.DataFrame, metric: str, a: str, b: str, settings: StatisticsSettings) -> dict[str, float]:
    """:func:`paired_difference` over every question of ``frame`` (one row per qid and method)."""
    wide = frame.pivot_table(index=schema.QID, columns=schema.METHOD, values=metric, aggfunc="first", dropna=False)
    diffs = (wide[a] - wide[b]).dropna().to_numpy() if a in wide and b in wide else []
    if len(diffs) == 0:
        return {"mean_diff": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_pairs": 0}
    low, high = bootstrap_ci(diffs, settings.confidence, settings.n_resamples, settings.seed)
    return {"mean_diff": float(diffs.mean()), "ci_low": low, "ci_high": high, "n_pairs": len(diffs)}


def paired_differences(per_query: pd.DataFrame, metrics: Sequence[str], baseline: str,
                       settings: StatisticsSettings) -> pd.DataFrame:
    """Each method's paired difference from ``baseline`` per question set and metric, with its CI."""
    rows = []
    for question_set in dict.fromkeys(per_query[schema.QUESTION_SET]):
        methods = list(dict.fromkeys(per_query.loc[per_query[schema.QUESTION_SET] == question_set, schema.METHOD]))
        for metric in metrics:
            for method in methods:
                if method != baseline:
                    rows.append({"question_set": question_set, "metric": metric, "method": method, "baseline": baseline,
                                 **paired_difference(per_query, question_set, metric, method, baseline, settings)})
    return pd.DataFrame(rows)


def verdicts(per_query: pd.DataFrame, comparison: Comparison) -> pd.DataFrame:
    """One row per question set x headline metric: best, runner-up, difference [CI], p, significant."""
    rows = []
    table, pairwise = comparison.table, comparison.pairwise
    for question_set in dict.fromkeys(table["question_set"]):
        part = table[table["question_set"] == question_set]
        for metric in headline_metrics(comparison.metrics):
            ranked = part[part[metric].notna()].sort_values(metric, ascending=False, kind="stable")
            if len(ranked) < 2:
                continue
            best, runner_up = ranked.iloc[0], ranked.iloc[1]
            difference = paired_difference(per_query, question_set, metric, best["method"], runner_up["method"],
                                           comparison.settings)
            test = pairwise[(pairwise["question_set"] == question_set) & (pairwise["metric"] == metric)
                            & pairwise["method_a"].isin([best["method"], runner_up["method"]])
                            & pairwise["method_b"].isin([best["method"], runner_up["method"]])]
            p_adjusted = float(test["p_adjusted"].iloc[0]) if len(test) else math.nan
            rows.append({
                "question_set": question_set, "metric": metric, "best": best["method"], "best_mean": float(best[metric]),
                "runner_up": runner_up["method"], "runner_up_mean": float(runner_up[metric]),
                "difference": difference["mean_diff"], "difference_ci_low": difference["ci_low"],
                "difference_ci_high": difference["ci_high"], "n_pairs": difference["n_pairs"], "p_adjusted": p_adjusted,
                "significant": bool(len(test) and test["significant"].iloc[0] and difference["mean_diff"] > 0),
                "smallest_p_adjusted": float(test["smallest_p_adjusted"].iloc[0]) if len(test) else math.nan,
                "underpowered": bool(len(test) and test["underpowered"].iloc[0]),
                "mdd": float(test["mdd"].iloc[0]) if len(test) else math.nan,
            })
    return pd.DataFrame(rows)
