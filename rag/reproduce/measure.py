"""The measured value of every cell of a condition.

A ``run`` condition runs its command in this process (``rag.cli.run``, so the embedding model is
loaded once for all conditions) into a new run directory, with ``--quiet`` and the run's summary
sent to ``summary.txt`` there; every stage goes through the run's caches (``cache_dir``), so a
second reproduction of an unchanged condition reads its chunks, embeddings, rankings, answers and
statistics back instead of computing them. A cell's value is then read from the run's
``comparison.json`` row of (question set, method), or for ``seed003_*`` metrics re-scored from its
``per_query.csv`` (:func:`rag.results.seed003.styled_means`).

A ``metric_cases`` condition scores each row's query with :func:`evaluation.retrieval_scores`.

A value that is missing (no such row or column, or NaN) is None: its cell fails as "not measured".
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path

from evaluation import retrieval_scores
from rag.cli.common import EXIT_OK
from rag.errors import BenchError
from rag.io_utils import atomic_write_text
from rag.reproduce.matrix import CasesCondition, RunCondition
from rag.secrets import Redactor
from rag.results.seed003 import STYLED_METRICS, read_per_query, styled_means

Measured = dict[tuple[str, str], float | None]  # (row label, metric) -> value
SUMMARY_FILE = "summary.txt"  # what the run printed (its terminal summary), kept in its run directory
UseRedactor = Callable[[Redactor], Redactor]  # installs a run's redactor for every printed line (rag.cli)


def run_command(spec: RunCondition, run_dir: Path, use_redactor: UseRedactor) -> None:
    """Run the condition's ``rag-bench run`` command into ``run_dir`` (a new directory), as
    ``rag-bench run`` would (``use_redactor`` from :func:`rag.cli.main`)."""
    from rag.cli.run import main as run_main

    argv = spec.argv + ["--output-dir", str(run_dir)] + ([] if "--quiet" in spec.argv else ["--quiet"])
    summary = io.StringIO()
    try:
        with redirect_stdout(summary):
            code = run_main(argv, use_redactor)
    finally:
        if run_dir.is_dir():
            atomic_write_text(run_dir / SUMMARY_FILE, summary.getvalue())
    if code != EXIT_OK:
        raise BenchError(f"'{spec.command}' exited with {code}; see {run_dir / SUMMARY_FILE}")


def _number(value: object) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def measure_run(spec: RunCondition, run_dir: Path) -> Measured:
    """Every cell of ``spec`` read from the finished run in ``run_dir``."""
    data = json.loads((run_dir / "comparison.json").read_text(encoding="utf-8"))
    table = {(row["question_set"], row["method"]): row for row in data["rows"]}
    per_query = read_per_query(run_dir) if any(m in STYLED_METRICS for r in spec.rows for m in r.expected) else None
    measured: Measured = {}
    for row in spec.rows:
        found = table.get((row.set, row.method), {})
        styled = styled_means(per_query, row.set, row.method) if per_query is not None else {}
        for metric in row.expected:
            measured[(row.label, metric)] = _number(styled.get(metric) if metric in STYLED_METRICS else found.get(metric))
    return measured


def measure_cases(spec: CasesCondition) -> Measured:
    """Every cell of ``spec``: each row's query scored in its convention at its cut-off."""
    measured: Measured = {}
    for row in spec.rows:
        scores = retrieval_scores(row.ground_truth, row.retrieved, k=row.k, convention=row.convention)
        for metric in row.expected:
            measured[(row.label, metric)] = _number(scores.get(metric))
    return measured
