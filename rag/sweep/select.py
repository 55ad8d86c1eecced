"""Held-out selection: per method and question set, the grid point with the best ``dev`` mean of
the selection metric, reported on ``test`` beside the config's own setting.

- The chosen point is the dev argmax over the grid points (the config's own setting counts only
  when it is a grid point). Ties: the config's own setting if it is among the best, else the first
  best point in grid order.
- Its dev mean is reported as *optimistic* (it is the maximum of several noisy means, the winner's
  curse); its test mean with a percentile-bootstrap CI (:func:`evaluation.stats.bootstrap_ci`) is the
  honest estimate.
- Chosen vs the config's setting on test: the mean paired difference with a bootstrap CI of the
  per-question differences, and the two-sided sign-flip randomization p-value
  (:func:`evaluation.stats.paired_randomization_test`), Holm-adjusted across all the sweep's
  comparisons when the config's ``evaluation.correction`` is ``holm``; significant when the
  (adjusted) p < ``evaluation.alpha``.
- A method whose identity (:mod:`rag.sweep.evaluate`) is the same at every point is not touched by
  the grid and gets no selection. A grid key touches a method when changing that key alone changes
  the method's identity somewhere in the grid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evaluation.stats import bootstrap_ci, holm_adjust, paired_randomization_test
from rag.sweep.grid import CONFIG_POINT, GridAxis, GridPoint, label
from rag.sweep.split import DEV, TEST

KEYS = ["point", "method", "question_set", "split"]


@dataclass(frozen=True)
class Statistics:
    metric: str
    confidence: float
    n_resamples: int
    seed: int
    alpha: float
    holm: bool


def touching_keys(per_query: pd.DataFrame, points: Sequence[GridPoint], axes: Sequence[GridAxis]) -> dict[str, list[str]]:
    """{method: the grid keys that change its identity}, for every method."""
    identity = per_query.drop_duplicates(["point", "method"]).set_index(["point", "method"])["identity"]
    grid = [p for p in points if p.id != CONFIG_POINT]
    touched: dict[str, list[str]] = {}
    for method in per_query["method"].unique():
        keys = []
        for axis in axes:
            others = {}
            for point in grid:
                rest = tuple(repr(v) for k, v in point.values.items() if k != axis.key)
                others.setdefault(rest, set()).add(identity[(point.id, method)])
            if any(len(ids) > 1 for ids in others.values()):
                keys.append(axis.key)
        touched[str(method)] = keys
    return touched


def point_table(per_query: pd.DataFrame, points: Sequence[GridPoint], axes: Sequence[GridAxis], metrics: Sequence[str],
                stats: Statistics) -> pd.DataFrame:
    """One row per point x method x question set x split: the grid values, the number of questions,
    the mean of every metric, and the bootstrap CI of the selection metric."""
    grouped = per_query.groupby(KEYS, sort=False)
    table = pd.concat([grouped.size().rename("questions"), grouped[list(metrics)].mean()], axis=1)
    identities = grouped["identity"].first()
    by_identity: dict[tuple, tuple[float, float]] = {}  # a method untouched by a key has one CI, not one per point
    for keys, values in grouped[stats.metric]:
        cache_key = (identities[keys], keys[2], keys[3])
        if cache_key not in by_identity:
            by_identity[cache_key] = bootstrap_ci(values.to_numpy(float), stats.confidence, stats.n_resamples, stats.seed)
    cis = [by_identity[(identities[keys], keys[2], keys[3])] for keys in table.index]
    table[f"{stats.metric}_ci_low"] = [low for low, _ in cis]
    table[f"{stats.metric}_ci_high"] = [high for _, high in cis]
    table = table.reset_index()
    values = pd.DataFrame([{"point": p.id, **{a.key: _cell(p.values[a.key]) for a in axes}} for p in points])
    return values.merge(table, on="point", how="right")[["point", *(a.key for a in axes), *table.columns[1:]]]


def _cell(value: object) -> object:
    """A grid value as a CSV cell: scalars as they are, lists and mappings as JSON-like text."""
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def select(per_query: pd.DataFrame, points: Sequence[GridPoint], touched: Mapping[str, Sequence[str]],
           stats: Statistics) -> pd.DataFrame:
    """One row per touched method x question set: the chosen point, its optimistic dev mean, its
    test mean [CI], the config's test mean [CI], the paired difference [CI], p and the verdict."""
    metric = stats.metric
    by_point = {p.id: p for p in points}
    grid_ids = [p.id for p in points if p.id != CONFIG_POINT]
    scores = per_query.set_index(["method", "question_set", "split", "point", "qid"])[metric].sort_index()
    identity = per_query.drop_duplicates(["point", "method"]).set_index(["point", "method"])["identity"]
    rows = []
    for method, keys in touched.items():
        if not keys:
            continue
        for question_set in per_query["question_set"].unique():
            dev_means = {pid: scores.loc[(method, question_set, DEV, pid)].mean() for pid in grid_ids}
            best = max(dev_means.values())
            tied = [pid for pid in grid_ids if dev_means[pid] == best]
            baseline = identity[(CONFIG_POINT, method)]
            chosen = next((pid for pid in tied if identity[(pid, method)] == baseline), tied[0])
            chosen_test = scores.loc[(method, question_set, TEST, chosen)]
            config_test = scores.loc[(method, question_set, TEST, CONFIG_POINT)].reindex(chosen_test.index)
            same = identity[(chosen, method)] == baseline
            diffs = (chosen_test - config_test).to_numpy(float)
            rows.append({
                "method": method,
                "question_set": question_set,
                "chosen_point": chosen,
                "chosen": label(by_point[chosen].values, keys),
                "config_setting": label(by_point[CONFIG_POINT].values, keys),
                "chosen_is_config": same,
                "dev_questions": len(scores.loc[(method, question_set, DEV, chosen)]),
                "test_questions": len(chosen_test),
                "dev_chosen_optimistic": best,
                "test_chosen": chosen_test.mean(),
                **_ci("test_chosen", chosen_test, stats),
                "test_config": config_test.mean(),
                **_ci("test_config", config_test, stats),
                "test_diff": float(np.nanmean(diffs)) if not np.isnan(diffs).all() else np.nan,
                **_ci("test_diff", diffs, stats),
                "p_value": 1.0 if same else paired_randomization_test(chosen_test.to_numpy(float), config_test.to_numpy(float),
                                                                      stats.n_resamples, stats.seed),
            })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    compared = ~table["chosen_is_config"]
    table["p_adjusted"] = table["p_value"]
    if stats.holm and compared.any():
        table.loc[compared, "p_adjusted"] = holm_adjust(table.loc[compared, "p_value"].tolist())
    table["significant"] = compared & (table["p_adjusted"] < stats.alpha)
    table["verdict"] = [verdict(row, stats) for row in table.to_dict("records")]
    return table


def _ci(prefix: str, values: object, stats: Statistics) -> dict[str, float]:
    low, high = bootstrap_ci(np.asarray(values, dtype=float), stats.confidence, stats.n_resamples, stats.seed)
    return {f"{prefix}_ci_low": low, f"{prefix}_ci_high": high}


def verdict(row: Mapping, stats: Statistics) -> str:
    """One line, e.g. ``convex / known_item: alpha 0.3 beats the config's alpha 0.5 by +0.012 mrr@10 on
    test [-0.004, +0.028], not significant (p = 0.14)``."""
    head = f"{row['method']} / {row['question_set']}: "
    if row["chosen_is_config"]:
        return (head + f"the config's own {row['config_setting']} is also the best on dev; {stats.metric} on test "
                f"{row['test_config']:.3f} [{row['test_config_ci_low']:.3f}, {row['test_config_ci_high']:.3f}]")
    diff = row["test_diff"]
    adjusted = "Holm-adjusted p" if stats.holm else "p"
    significance = ("significant" if row["significant"] else "not significant") + f" ({adjusted} = {row['p_adjusted']:.3g})"
    if diff == 0:
        return (head + f"{row['chosen']} (best on dev) ties with the config's {row['config_setting']} on test "
                f"({stats.metric} {row['test_config']:.3f} both)")
    word = "beats" if diff > 0 else "trails"
    return (head + f"{row['chosen']} (best on dev) {word} the config's {row['config_setting']} by {diff:+.3f} "
            f"{stats.metric} on test [{row['test_diff_ci_low']:+.3f}, {row['test_diff_ci_high']:+.3f}], {significance}")
