"""TREC run and qrels files.

- qrels: ``qid iteration doc_id grade`` per line (iteration ignored, usually 0).
- run:   ``qid Q0 doc_id rank score tag`` per line; the score decides the order (as trec_eval),
  the rank column is informational.

Fields are separated by white space; blank lines are skipped. A malformed line or a repeated
(qid, doc_id) pair raises :class:`rag.errors.DataError` naming the file and line. Writers write
atomically; runs are written in rank order (score descending, doc id descending) with 1-based ranks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from evaluation.ground_truth import check_grade
from evaluation.runs import Run, ranked_ids
from rag.errors import DataError
from rag.io_utils import atomic_write_text


def _records(path: str | Path, n_fields: int, layout: str) -> Iterator[tuple[int, list[str]]]:
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != n_fields:
                raise DataError(path, f"expected {n_fields} fields ({layout}), got {len(fields)}", line_number)
            yield line_number, fields


def _number(text: str, path: str | Path, line: int, what: str, kind: type) -> float:
    try:
        return kind(text)
    except ValueError:
        raise DataError(path, f"{what} must be {'an integer' if kind is int else 'a number'}, got {text!r}", line) from None


def _store(table: dict[str, dict[str, float]], qid: str, doc_id: str, value: float, path: str | Path, line: int) -> None:
    scores = table.setdefault(qid, {})
    if doc_id in scores:
        raise DataError(path, f"document {doc_id!r} appears twice for query {qid!r}", line)
    scores[doc_id] = value


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """``{qid: {doc_id: grade}}`` from a TREC qrels file (integer grades)."""
    qrels: dict[str, dict[str, int]] = {}
    for line, (qid, _iteration, doc_id, grade) in _records(path, 4, "qid iteration doc_id grade"):
        _store(qrels, qid, doc_id, _number(grade, path, line, "grade", int), path, line)
    return qrels


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """``{qid: {doc_id: score}}`` from a TREC run file."""
    run: dict[str, dict[str, float]] = {}
    for line, (qid, _q0, doc_id, rank, score, _tag) in _records(path, 6, "qid Q0 doc_id rank score tag"):
        _number(rank, path, line, "rank", int)
        value = _number(score, path, line, "score", float)
        if value != value or value in (float("inf"), float("-inf")):
            raise DataError(path, f"score must be finite, got {score!r}", line)
        _store(run, qid, doc_id, value, path, line)
    return run


def _check_field(text: str, what: str) -> str:
    if not text or any(character.isspace() for character in text):
        raise ValueError(f"{what} {text!r}: TREC files need non-empty ids without white space")
    return text


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | Path) -> Path:
    """Write ``{qid: {doc_id: grade}}`` as a TREC qrels file (grades must be integers)."""
    lines = []
    for qid, grades in qrels.items():
        for doc_id, grade in grades.items():
            value = check_grade(grade, f"qrels[{qid!r}][{doc_id!r}]")
            if value != int(value):
                raise ValueError(f"qrels[{qid!r}][{doc_id!r}]: TREC qrels need integer grades, got {grade!r}")
            lines.append(f"{_check_field(qid, 'query id')} 0 {_check_field(doc_id, 'doc id')} {int(value)}\n")
    return atomic_write_text(path, "".join(lines))


def write_run(run: Run, path: str | Path, tag: str = "rag-bench") -> Path:
    """Write ``{qid: {doc_id: score}}`` as a TREC run file, in rank order, scores with full precision."""
    _check_field(tag, "run tag")
    lines = []
    for qid, scores in run.items():
        _check_field(qid, "query id")
        for rank, doc_id in enumerate(ranked_ids(scores), start=1):
            lines.append(f"{qid} Q0 {_check_field(doc_id, 'doc id')} {rank} {float(scores[doc_id])!r} {tag}\n")
    return atomic_write_text(path, "".join(lines))
