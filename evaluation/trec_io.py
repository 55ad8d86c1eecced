"""TREC run and qrels files.

- qrels: ``qid iteration doc_id grade`` per line (iteration ignored, usually 0).
- run:   ``qid Q0 doc_id rank score tag`` per line; the score decides the order (as trec_eval),
  the rank column is informational.

Fields are separated by white space; blank lines are skipped. A malformed line or a repeated
(qid, doc_id) pair raises :class:`evaluation.files.FileFormatError` naming the file and line. Writers write
atomically; runs are written in rank order (score descending, doc id descending) with 1-based ranks.

Ids: a file can hold only ids without white space, so ids are written in an escaped form
(:func:`encode_trec_id`): each white-space, control or surrogate character and each backslash
becomes a Python-style escape (``\\xHH`` or ``\\uHHHH``, lower-case hex); every other character,
``%`` included, stays as it is. Ids that need no escaping (canonical Wikipedia URLs such as
``https://en.wikipedia.org/wiki/Caf%C3%A9``, chunk ids such as ``Café#0``) are written unchanged.
Because the escape character is itself escaped, :func:`decode_trec_id` inverts the encoding, so two
different ids never share a written id (``q 1`` -> ``q\\x201``, ``q%201`` -> ``q%201``). The
writers refuse an id that is not in this encoded form, so nothing reaches a file that could merge
with another id or split a line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from evaluation.ground_truth import check_grade
from evaluation.runs import Run, ranked_ids, ranking_score
from evaluation.files import FileFormatError, atomic_write_text


def _records(path: str | Path, n_fields: int, layout: str) -> Iterator[tuple[int, list[str]]]:
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != n_fields:
                raise FileFormatError(path, f"expected {n_fields} fields ({layout}), got {len(fields)}", line_number)
            yield line_number, fields


def _number(text: str, path: str | Path, line: int, what: str, kind: type) -> float:
    try:
        return kind(text)
    except ValueError:
        raise FileFormatError(path, f"{what} must be {'an integer' if kind is int else 'a number'}, got {text!r}", line) from None


def _store(table: dict[str, dict[str, float]], qid: str, doc_id: str, value: float, path: str | Path, line: int) -> None:
    scores = table.setdefault(qid, {})
    if doc_id in scores:
        raise FileFormatError(path, f"document {doc_id!r} appears twice for query {qid!r}", line)
    scores[doc_id] = value


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """``{qid: {doc_id: grade}}`` from a TREC qrels file (integer grades).

    Args:
        path: the qrels file.

    Returns:
        ``{qid: {doc_id: grade}}``.
    """
    qrels: dict[str, dict[str, int]] = {}
    for line, (qid, _iteration, doc_id, grade) in _records(path, 4, "qid iteration doc_id grade"):
        _store(qrels, qid, doc_id, _number(grade, path, line, "grade", int), path, line)
    return qrels


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """``{qid: {doc_id: score}}`` from a TREC run file.

    Args:
        path: the run file.

    Returns:
        ``{qid: {doc_id: score}}``.
    """
    run: dict[str, dict[str, float]] = {}
    for line, (qid, _q0, doc_id, rank, score, _tag) in _records(path, 6, "qid Q0 doc_id rank score tag"):
        _number(rank, path, line, "rank", int)
        value = _number(score, path, line, "score", float)
        if value != value or value in (float("inf"), float("-inf")):
            raise FileFormatError(path, f"score must be finite, got {score!r}", line)
        _store(run, qid, doc_id, value, path, line)
    return run


# What must be escaped: white space (\s is exactly what str.split splits on), control characters
# (category Cc; NUL would end a C string in trec_eval), lone surrogates (not encodable in UTF-8) and
# the escape character itself.
_UNSAFE = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff\\]")
_ESCAPE = re.compile(r"\\(?:x([0-9a-f]{2})|u([0-9a-f]{4}))?")  # an escape, or a bare backslash


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"  # every such character is below U+10000


def encode_trec_id(identifier: str) -> str:
    """The id as written in a TREC file: white space, control characters and ``\\`` escaped.

    Injective (see the module docstring): ``decode_trec_id(encode_trec_id(i)) == i`` for every
    non-empty string, and an id without such characters is returned unchanged. An empty id has no
    TREC form and raises ``ValueError``.

    Args:
        identifier: a non-empty id.

    Returns:
        The id as written in a TREC file.
    """
    if not identifier:
        raise ValueError("an empty id cannot be written to a TREC file")
    return _UNSAFE.sub(_escape, identifier)


def decode_trec_id(text: str) -> str:
    """The original id of an id written by :func:`encode_trec_id` (its inverse).

    A backslash that does not start a ``\\xHH`` / ``\\uHHHH`` escape raises ``ValueError``: the text
    was not produced by the encoder.

    Args:
        text: an id as written in a TREC file.

    Returns:
        The original id.
    """
    def unescape(match: re.Match[str]) -> str:
        code = match.group(1) or match.group(2)
        if code is None:
            raise ValueError(f"{text!r} is not an encoded TREC id: a backslash must start \\xHH or \\uHHHH")
        return chr(int(code, 16))

    return _ESCAPE.sub(unescape, text)


def _check_field(text: str, what: str) -> str:
    """``text`` if it is an encoded id (the encoder's output for some id), else ``ValueError``."""
    if text and _UNSAFE.search(text) is None:
        return text
    try:
        canonical = bool(text) and encode_trec_id(decode_trec_id(text)) == text
    except ValueError:
        canonical = False
    if not canonical:
        raise ValueError(f"{what} {text!r} is not a TREC id: TREC files need non-empty ids without white "
                         "space, control characters or bare backslashes; write evaluation.encode_trec_id(id)")
    return text


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | Path) -> Path:
    """Write ``{qid: {doc_id: grade}}`` as a TREC qrels file (grades must be integers).

    Args:
        qrels: ``{qid: {doc_id: grade}}``, integer grades.
        path: the file to write.

    Returns:
        ``path``.
    """
    lines = []
    for qid, grades in qrels.items():
        for doc_id, grade in grades.items():
            value = check_grade(grade, f"qrels[{qid!r}][{doc_id!r}]")
            if value != int(value):
                raise ValueError(f"qrels[{qid!r}][{doc_id!r}]: TREC qrels need integer grades, got {grade!r}")
            lines.append(f"{_check_field(qid, 'query id')} 0 {_check_field(doc_id, 'doc id')} {int(value)}\n")
    return atomic_write_text(path, "".join(lines))


def write_run(run: Run, path: str | Path, tag: str = "rag-bench", keep_order: bool = False) -> Path:
    """Write ``{qid: {doc_id: score}}`` as a TREC run file, scores with full precision, in rank
    order: trec_eval's (:func:`ranked_ids`), or with ``keep_order`` each mapping's own order (a
    ranking whose ties were broken by another rule; its scores must not increase, compared as float32).

    Args:
        run: ``{qid: {doc_id: score}}``.
        path: the file to write.
        tag: the run tag (last column).
        keep_order: write each mapping's own order instead of trec_eval's.

    Returns:
        ``path``.
    """
    _check_field(tag, "run tag")
    lines = []
    for qid, scores in run.items():
        _check_field(qid, "query id")
        order = list(scores) if keep_order else ranked_ids(scores)
        if keep_order and any(ranking_score(scores[a]) < ranking_score(scores[b]) for a, b in zip(order, order[1:])):
            raise ValueError(f"run[{qid!r}]: keep_order needs scores that do not increase down the list")
        for rank, doc_id in enumerate(order, start=1):
            lines.append(f"{qid} Q0 {_check_field(doc_id, 'doc id')} {rank} {float(scores[doc_id])!r} {tag}\n")
    return atomic_write_text(path, "".join(lines))
