"""The measured value of every cell of a condition.

A ``run`` condition's command is run by the :data:`RunCommand` the caller injects (the CLI's
:func:`rag.cli.reproduce.run_command`: in this process, so the embedding model is loaded once for all
conditions, into a new run directory, with ``--quiet`` and the run's summary sent to ``summary.txt``
there); every stage goes through the run's caches (``cache_dir``), so a
second reproduction of an unchanged condition reads its chunks, embeddings, rankings, answers and
statistics back instead of computing them. A cell's value is then read from the run's
``comparison.json`` row of (question set, method), or for ``seed003_*`` metrics re-scored from its
``per_query.csv`` (:func:`rag.results.seed003.styled_means`).

A ``metric_cases`` condition scores each row's query with :func:`evaluation.retrieval_scores`.

A value that is missing (no such row or column, or NaN) is None: its cell fails as "not measured".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from evaluation import retrieval_scores
from rag.errors import ConfigError
from rag.reproduce.matrix import CasesCondition, RunCondition
from rag.results.seed003 import STYLED_METRICS, read_per_query, styled_means

Measured = dict[tuple[str, str], float | None]  # (row label, metric) -> value
RunCommand = Callable[[RunCondition, Path], None]  # runs a condition's command into a new run directory (rag.cli.reproduce)



def _number(value: object, where: str = "") -> float | None:
    """A measured number; None for none (or NaN). A value that is not a number (a text column such as
    ``method`` or ``mrr@10_beats``, a boolean) is a ConfigError naming the cell ``where``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(where or None, f"the measured value is not a number ({type(value).__name__} "
                                         f"{str(value)[:40]!r}); expected a metric column")
    return float(value)


def measure_run(spec: RunCondition, run_dir: Path) -> Measured:
    """Every cell of ``spec`` read from the finished run in ``run_dir``."""
    data = json.loads((run_dir / "comparison.json").read_text(encoding="utf-8"))
    table = {(row["question_set"], row["method"]): row for row in data["rows"]}
    per_query = read_per_query(run_dir) if any(m in STYLED_METRICS for r in spec.rows for m in r.expected) else None
    measured: Measured = {}
    for index, row in enumerate(spec.rows):
        found = table.get((row.set, row.method), {})
        styled = styled_means(per_query, row.set, row.method) if per_query is not None else {}
        for metric in row.expected:
            measured[(row.label, metric)] = _number(styled.get(metric) if metric in STYLED_METRICS else found.get(metric),
                                                    f"rows.{index}.expected.{metric}")
    return measured


def measure_cases(spec: CasesCondition) -> Measured:
    """Every cell of ``spec``: each row's query scored in its convention at its cut-off."""
    measured: Measured = {}
    for row in spec.rows:
        scores = retrieval_scores(row.ground_truth, row.retrieved, k=row.k, convention=row.convention)
        for metric in row.expected:
            measured[(row.label, metric)] = _number(scores.get(metric))
    return measured
