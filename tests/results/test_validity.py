"""Agreement of two question sets' method comparisons (rag.results.validity), on hand-built tables."""

from __future__ import annotations

import pandas as pd

from rag.results.comparison import StatisticsSettings
from rag.results.validity import agreement

SETTINGS = StatisticsSettings(n_resamples=2000)


def _table(scores: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    """One row per (set, method, question) from ``{set: {method: [score per question]}}``."""
    return pd.DataFrame([{"question_set": name, "method": method, "qid": f"{name}-{i}", "ndcg@10": value}
                         for name, methods in scores.items() for method, values in methods.items()
                         for i, value in enumerate(values)])


def test_reversed_rankings_contradict_on_every_significant_pair():
    # synthetic: x (1.0) > z (0.5) > y (0.0) on every one of 30 questions; third-party: the reverse
    n = 30
    table = _table({"synthetic": {"x": [1.0] * n, "y": [0.0] * n, "z": [0.5] * n},
                    "third": {"x": [0.0] * n, "y": [1.0] * n, "z": [0.5] * n}})
    result = agreement(table, "synthetic", "third", "ndcg@10", SETTINGS)
    assert result.tau == -1.0  # all three pairs discordant: (0 - 3) / 3
    assert set(result.significant["synthetic"]) == {("x", "y"), ("x", "z"), ("z", "y")}
    assert set(result.contradictions) == {("x", "y"), ("x", "z"), ("z", "y")} and not result.meets_goal


def test_a_pair_significant_in_one_set_only_is_no_contradiction():
    # third-party: x and y tie on every question (no significant verdict), z lowest;
    # synthetic: x > y > z, all significant. Rankings by mean: synthetic x, y, z; third-party x = y, z
    n = 30
    table = _table({"synthetic": {"x": [1.0] * n, "y": [0.6] * n, "z": [0.2] * n},
                    "third": {"x": [0.8] * n, "y": [0.8] * n, "z": [0.1] * n}})
    result = agreement(table, "synthetic", "third", "ndcg@10", SETTINGS)
    assert ("x", "y") not in result.significant["third"] and result.contradictions == ()
    # tau-b: concordant (x,z), (y,z); (x,y) tied in the third-party ranking:
    # (2 - 0) / sqrt((3 - 0) * (3 - 1)) = 2 / sqrt(6)
    assert abs(result.tau - 2 / 6 ** 0.5) < 1e-12 and result.meets_goal
