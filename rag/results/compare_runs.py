"""The comparison of several finished runs (two chunk
sizes, two embedding models, two configs) as if their methods had run together.

Each run's methods become ``<run label>:<method>`` (the label is the run directory's name, or its
parent's for the timestamped directories the runner makes, made unique with a number). The runs are
paired on the questions they share — same question set, id and text — and only on those; metrics
are the columns every run has (each left out is named in a warning, as is a run whose manifest does
not say ``complete`` or ``partial``). A run with failed answers or failed stages is named on the first lines of the
output (:func:`failed_answer_lines`), and a question set with a failed answer in any run has its
answer results withheld, as in a run (:mod:`rag.results.headline`). The output is the same comparison as a run's: means with CIs, paired
tests, each method's difference from the first, and the verdict, printed and written to
``--output-dir`` by ``rag-bench compare`` (:mod:`rag.cli.compare`): comparison.{csv,md,json}, pairwise.csv.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from rag.errors import BenchError
from rag.results import schema
from rag.results.comparison import Comparison, StatisticsSettings, compare
from rag.results.csv_files import read_csv
from rag.results.headline import AnswerFailures, StageFailures

log = logging.getLogger(__name__)
NON_METRIC_COLUMNS = {*schema.STATISTICS_INPUTS, schema.ATTEMPTS, schema.CHUNKS_USED, schema.RETRIEVAL_MS_NOISE}


def read_run(run_dir: Path) -> tuple[pd.DataFrame, dict]:
    """The per-query table and manifest of a finished run directory (one line on any problem)."""
    per_query_path, manifest_path = run_dir / "per_query.csv", run_dir / "manifest.json"
    if not per_query_path.is_file():
        raise BenchError(f"{run_dir}: not a finished run directory (no per_query.csv)")
    try:
        per_query = read_csv(per_query_path, keep_default_na=False, na_values=[""])
        manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    except (ValueError, OSError) as exc:
        raise BenchError(f"{per_query_path}: cannot read it ({exc})") from None
    missing = [c for c in (schema.QUESTION_SET, schema.METHOD, schema.QID, schema.QUESTION) if c not in per_query]
    if missing:
        raise BenchError(f"{per_query_path}: missing column(s) {missing}; expected a per_query.csv of rag-bench")
    return per_query, manifest


def run_labels(run_dirs: Sequence[Path]) -> list[str]:
    """Short unique labels: the directory name, or its parent's for a timestamped run directory."""
    labels = []
    for path in run_dirs:
        name = path.resolve().name
        label = path.resolve().parent.name if name[:4].isdigit() and "T" in name else name
        candidate, number = label, 2
        while candidate in labels:
            candidate, number = f"{label}{number}", number + 1
        labels.append(candidate)
    return labels


def metric_columns(per_query: pd.DataFrame) -> list[str]:
    """The metric columns of a per-query table: numeric columns with a value that are not identity or cost columns."""
    return [c for c in per_query.columns if c not in NON_METRIC_COLUMNS and c != schema.QID
            and pd.api.types.is_numeric_dtype(per_query[c]) and per_query[c].notna().any()]


def warn_unfinished(run_dir: Path, manifest: dict) -> None:
    """A warning for a run whose manifest does not say ``complete`` (failed, interrupted, or none)."""
    status = manifest.get("status") if isinstance(manifest, dict) else None
    if status not in ("complete", "partial"):
        log.warning("%s: the run did not complete (manifest status %s); its per_query.csv may hold partial or "
                    "stale results", run_dir, repr(status) if status else "missing")


def shared_metrics(tables: Sequence[pd.DataFrame], labels: Sequence[str]) -> list[str]:
    """The metric columns every run has, in the first run's order; each metric some run lacks is
    named in a warning, with the runs that have it."""
    per_run = [metric_columns(table) for table in tables]
    shared = [m for m in per_run[0] if all(m in columns for columns in per_run[1:])]
    dropped = [m for m in dict.fromkeys(m for columns in per_run for m in columns) if m not in shared]
    for metric in dropped:
        having = [label for label, columns in zip(labels, per_run) if metric in columns]
        log.warning("metric %s is left out: only %s of the runs have it", metric, ", ".join(having))
    return shared


def combine(run_dirs: Sequence[Path]) -> tuple[pd.DataFrame, list[str], list[str]]:
    """One per-query table over the shared questions, methods renamed ``<label>:<method>``, its
    metrics, and a line per run with failed answers (:func:`failed_answer_lines`); a run that did not
    finish and a metric not every run has are warned about (:func:`warn_unfinished`,
    :func:`shared_metrics`)."""
    runs = [read_run(path) for path in run_dirs]
    for path, (_, manifest) in zip(run_dirs, runs):
        warn_unfinished(path, manifest)
    tables = [table for table, _ in runs]
    keys = [schema.QUESTION_SET, schema.QID, schema.QUESTION]
    shared = set.intersection(*(set(map(tuple, table[keys].astype(str).to_numpy())) for table in tables))
    if not shared:
        raise BenchError("the runs share no question (same question set, id and text); nothing can be paired: "
                         + ", ".join(str(p) for p in run_dirs))
    metrics = shared_metrics(tables, run_labels(run_dirs))
    frames = []
    for label, table in zip(run_labels(run_dirs), tables):
        keep = [tuple(row) in shared for row in table[keys].astype(str).to_numpy()]
        frames.append(table[keep].assign(**{schema.METHOD: label + ":" + table.loc[keep, schema.METHOD].astype(str)}))
    return pd.concat(frames, ignore_index=True), metrics, failed_answer_lines(run_dirs, tables)


def failed_answer_lines(run_dirs: Sequence[Path], tables: Sequence[pd.DataFrame]) -> list[str]:
    """``WARNING run <label> (<dir>): answers: 168 of 168 failed - ...`` for each run with failed answers,
    and ``WARNING run <label> (<dir>): stages: bm25_mq failed on ...`` for each run with failed stages
    (whose methods' results on those sets the comparison withholds, as the run did)."""
    lines = []
    for label, path, table in zip(run_labels(run_dirs), run_dirs, tables):
        if schema.GENERATION_STATUS in table and (line := AnswerFailures.of(table).line()):
            lines.append(f"WARNING run {label} ({path}): {line}")
        if line := StageFailures.of(table).line():
            lines.append(f"WARNING run {label} ({path}): {line}")
    return lines


def compare_runs(run_dirs: Sequence[Path], settings: StatisticsSettings) -> tuple[Comparison, int, list[str]]:
    """The comparison over the shared questions, the number of shared questions, and the headline:
    one line per run with failed answers (:func:`failed_answer_lines`)."""
    if len(run_dirs) < 2:
        raise BenchError("compare: give at least two run directories")
    combined, metrics, warnings = combine(run_dirs)
    n_shared = combined.groupby(schema.METHOD).size().iloc[0]
    return compare(combined, metrics, settings), int(n_shared), warnings
