"""Validity of a question set: does it rank the methods as a third-party set on the same corpus does?

For two question sets of one run (a synthetic set and a third-party one) and one metric:

* each set's ranking of the methods is the order of their mean metric; the agreement of the two
  rankings is Kendall's tau-b over the methods (:func:`scipy.stats.kendalltau`; 1 = same order,
  -1 = reversed; ties in either ranking are handled by tau-b);
* each set's *significant verdicts* are the method pairs whose paired test is significant (the
  Holm-adjusted paired randomization test of :func:`evaluation.stats.compare_methods`, as the run's
  own verdicts): ``(better, worse)``, better being the method with the higher mean on the set;
* a *contradiction* is a pair that one set finds significantly better one way and the other set
  significantly better the other way. A pair significant in one set only is not a contradiction
  (the other set cannot tell).

In a run (:func:`run_validity`), every set made from the corpus (it has a provenance sidecar) is
compared with every set given from elsewhere; the rows go to the manifest (``question_validity``) and
one line of the run facts.

Goal (issue 27): no contradiction, and tau >= 0.67. With four methods and no ties tau is one of 1,
2/3, 1/3, ... (each of the six pairs ordered differently costs 1/3), so read literally the goal asks
for the same order; one pair swapped gives 0.667, just under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from scipy.stats import kendalltau

from evaluation.stats import compare_methods
from rag.results import schema
from rag.results.comparison import StatisticsSettings

TAU_GOAL = 0.67


@dataclass(frozen=True)
class Agreement:
    """How a synthetic set's method comparison agrees with a third-party set's, on one metric."""

    synthetic: str
    third_party: str
    metric: str
    means: dict[str, dict[str, float]]  # set -> method -> mean
    tau: float
    significant: dict[str, tuple[tuple[str, str], ...]]  # set -> (better, worse) pairs
    contradictions: tuple[tuple[str, str], ...]  # (better on the synthetic set, better on the third-party set)

    @property
    def meets_goal(self) -> bool:
        return not self.contradictions and self.tau >= TAU_GOAL


def significant_verdicts(per_query: pd.DataFrame, question_set: str, metric: str,
                         settings: StatisticsSettings) -> tuple[dict[str, float], tuple[tuple[str, str], ...]]:
    """The methods' means on ``question_set`` and its significant ``(better, worse)`` pairs."""
    frame = per_query[per_query[schema.QUESTION_SET] == question_set]
    scored = frame.groupby(schema.METHOD, sort=False)[metric].transform(lambda column: column.notna().any())
    frame = frame[scored.astype(bool)]  # answer-only baselines have no retrieval metric
    summary, pairwise = compare_methods(frame, metric, schema.METHOD, schema.QID, settings.confidence,
                                        settings.n_resamples, settings.seed, settings.alpha, settings.correction)
    means = {row.method: float(row.mean) for row in summary.itertuples()}
    verdicts = tuple((row.method_a, row.method_b) if row.mean_diff > 0 else (row.method_b, row.method_a)
                     for row in pairwise.itertuples() if row.significant)
    return means, verdicts


def agreement(per_query: pd.DataFrame, synthetic: str, third_party: str, metric: str,
              settings: StatisticsSettings = StatisticsSettings()) -> Agreement:
    """The :class:`Agreement` of ``synthetic`` with ``third_party`` (see the module docstring)."""
    means, significant = {}, {}
    for question_set in (synthetic, third_party):
        means[question_set], significant[question_set] = significant_verdicts(per_query, question_set, metric, settings)
    methods = [method for method in means[synthetic] if method in means[third_party]]
    tau = float(kendalltau([means[synthetic][m] for m in methods], [means[third_party][m] for m in methods]).statistic)
    reversed_pairs = {(worse, better) for better, worse in significant[third_party]}
    contradictions = tuple(pair for pair in significant[synthetic] if pair in reversed_pairs)
    return Agreement(synthetic, third_party, metric, means, tau, significant, contradictions)


def agreement_rows(agreements: Sequence[Agreement]) -> list[dict[str, object]]:
    """One printable row per agreement."""
    def order(means: dict[str, float]) -> str:
        return " > ".join(f"{m} {v:.3f}" for m, v in sorted(means.items(), key=lambda item: -item[1]))

    return [{"synthetic": a.synthetic, "third-party": a.third_party, "metric": a.metric, "tau": round(a.tau, 3),
             "contradictions": ", ".join(f"{x}>{y}" for x, y in a.contradictions) or "none",
             "significant (synthetic)": ", ".join(f"{x}>{y}" for x, y in a.significant[a.synthetic]) or "none",
             "significant (third-party)": ", ".join(f"{x}>{y}" for x, y in a.significant[a.third_party]) or "none",
             "ranking (synthetic)": order(a.means[a.synthetic]), "ranking (third-party)": order(a.means[a.third_party])}
            for a in agreements]


def run_validity(per_query: pd.DataFrame, made: Sequence[str], given: Sequence[str], metric: str,
                 settings: StatisticsSettings) -> list[Agreement]:
    """In a run: the agreement of every made set (one with a provenance sidecar) with every given set
    (questions from elsewhere: a labelled, third-party set), or none when either kind is missing."""
    return [agreement(per_query, synthetic, third_party, metric, settings) for synthetic in made for third_party in given]


def validity_fact(agreements: Sequence[Agreement]) -> str:
    """One line for the report's run facts."""
    return "validity of the made questions against the given ones: " + "; ".join(
        f"{a.synthetic} vs {a.third_party} on {a.metric}: Kendall tau {a.tau:.2f}, contradicting significant verdicts "
        + (", ".join(f"{x}>{y}" for x, y in a.contradictions) or "none") for a in agreements)
