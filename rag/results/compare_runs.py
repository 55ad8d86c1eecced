"""The comparison of several finished runs (two chunk
sizes, two embedding models, two configs) as if their methods had run together.

Each run's methods become ``<run label>:<method>`` (the label is the run directory's name, or its
parent's for the timestamped directories the runner makes, made unique with a number). The runs are
paired on the questions they share — same question set, id and text — and only on those; metrics
are the columns every run has. The output is the same comparison as a run's: means with CIs, paired
tests, each method's difference from the first, and the verdict, printed and written to
``--output-dir`` by ``rag-bench compare`` (:mod:`rag.cli.compare`): comparison.{csv,md,json}, pairwise.csv.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from rag.errors import BenchError
from rag.results import schema
from rag.results.comparison import Comparison, StatisticsSettings, compare

NON_METRIC_COLUMNS = {*schema.STATISTICS_INPUTS, schema.ATTEMPTS, schema.CHUNKS_USED}


def read_run(run_dir: Path) -> tuple[pd.DataFrame, dict]:
    """The per-query table and manifest of a finished run directory (one line on any problem)."""
    per_query_path, manifest_path = run_dir / "per_query.csv", run_dir / "manifest.json"
    if not per_query_path.is_file():
        raise BenchError(f"{run_dir}: not a finished run directory (no per_query.csv)")
    try:
        per_query = pd.read_csv(per_query_path, keep_default_na=False, na_values=[""])
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


def combine(run_dirs: Sequence[Path]) -> tuple[pd.DataFrame, list[str]]:
    """One per-query table over the shared questions, methods renamed ``<label>:<method>``."""
    tables = [read_run(path)[0] for path in run_dirs]
    keys = [schema.QUESTION_SET, schema.QID, schema.QUESTION]
    shared = set.intersection(*(set(map(tuple, table[keys].astype(str).to_numpy())) for table in tables))
    if not shared:
        raise BenchError("the runs share no question (same question set, id and text); nothing can be paired: "
                         + ", ".join(str(p) for p in run_dirs))
    metrics = [m for m in metric_columns(tables[0]) if all(m in t.columns for t in tables[1:])]
    frames = []
    for label, table in zip(run_labels(run_dirs), tables):
        keep = [tuple(row) in shared for row in table[keys].astype(str).to_numpy()]
        frames.append(table[keep].assign(**{schema.METHOD: label + ":" + table.loc[keep, schema.METHOD].astype(str)}))
    return pd.concat(frames, ignore_index=True), metrics


def compare_runs(run_dirs: Sequence[Path], settings: StatisticsSettings) -> tuple[Comparison, int]:
    """The comparison over the shared questions and the number of shared questions."""
    if len(run_dirs) < 2:
        raise BenchError("compare: give at least two run directories")
    combined, metrics = combine(run_dirs)
    n_shared = combined.groupby(schema.METHOD).size().iloc[0]
    return compare(combined, metrics, settings), int(n_shared)
