"""Grades out to and in from the tools search teams already use.

* TREC qrels (``qid 0 docid grade``, whitespace-separated): ``qid`` is ``<set>/<question id>`` and
  ``docid`` the chunk id, both written with :func:`evaluation.encode_trec_id` as the run's own TREC
  files are (so ids with spaces, backslashes or any Unicode travel exactly); a page graded as a whole
  is ``url:<url>``.
* Quepid's basic judgment CSV (``query,docid,rating``): ``query`` is the question's text (Quepid
  keys judgments by query text), ``docid`` as above, ``rating`` the grade. Two questions of the run
  with one text cannot be told apart there: such a text is refused, out and in, with one line. A
  cell a spreadsheet would run as a formula is written with a leading ``'`` and read back without it
  (:func:`rag.io_utils.spreadsheet_cell`, as the review CSV does).

Export writes the combined grades (:mod:`rag.judging.combine`: one grade per item) to a file the
user names (:func:`rag.io_utils.write_output`: a device or pipe is written in place), never onto a
file of the run directory itself. Import appends every row to the grade file as one judge, each row
checked by the grade file's rules (:mod:`rag.judging.lines`; an unknown question or passage, or a
grade outside 0-3, is one error naming the file and line, and nothing is appended); the lines record
the file's SHA-256 (``source_sha256``), and the same file imported again is refused.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

from evaluation.trec_io import decode_trec_id, encode_trec_id
from rag.errors import ConfigError, DataError
from rag.io_utils import sha256_bytes, spreadsheet_cell, spreadsheet_value, write_output
from rag.judging.combine import PAGE_PREFIX, combine
from rag.judging.lines import LineRules, check_grade_file
from rag.judging.pool import Pool, read_pool
from rag.judging.store import JUDGMENTS_FILE, Judgment, JudgmentLog, judge_name_problem, now

QUEPID_HEADER = ["query", "docid", "rating"]


def export_grades(run_dir: Path, kind: str, out: Path, trust_llm: bool = False) -> int:
    """Write the run's combined grades as ``qrels`` or ``quepid``; returns how many."""
    check_output(run_dir, out)
    pool, read = check_grade_file(run_dir)
    grades = combine(read.judgments, trust_llm=trust_llm)
    rows = []
    for (question_set, qid), g in grades.items():
        items = [*((c, grade) for c, grade in g.chunks.items()), *((PAGE_PREFIX + u, grade) for u, grade in g.pages.items())]
        for docid, grade in items:
            rows.append((question_set, qid, docid, grade))
    if kind == "qrels":
        text = "".join(f"{encode_trec_id(f'{s}/{q}')} 0 {encode_trec_id(d)} {g}\n" for s, q, d, g in rows)
    else:
        shared = shared_texts(pool)
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(QUEPID_HEADER)
        for s, q, d, g in rows:
            if (s, q) in shared:
                others = ", ".join(f"{a}/{b}" for a, b in shared[(s, q)])
                raise DataError(run_dir / JUDGMENTS_FILE, f"question {s}/{q} has the same text as {others}: Quepid keys "
                                                          "grades by text, so they would mix; export qrels instead")
            writer.writerow([spreadsheet_cell(pool.questions[(s, q)].text), spreadsheet_cell(d), g])
        text = buffer.getvalue()
    write_output(out, text.encode("utf-8"))
    return len(rows)


def check_output(run_dir: Path, out: Path) -> None:
    """``out`` may be written: not a file the run directory already holds (its grade file, pool,
    manifest, results), where an export would destroy what it exports, and not a directory."""
    target = out.resolve()
    if target.exists() and target.is_relative_to(run_dir.resolve()):
        raise ConfigError("--out", f"{out} is a file of the run directory {run_dir}; an export would replace it: "
                                   "write to a new file or one outside the run directory")
    if target.is_dir():
        raise ConfigError("--out", f"{out} is a directory: name the file to write")


def questions_by_text(pool: Pool) -> dict[str, list[tuple[str, str]]]:
    """Each question text of the pool -> the questions that have it (Quepid's key)."""
    by_text: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key, question in pool.questions.items():
        by_text[question.text].append(key)
    return by_text


def shared_texts(pool: Pool) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Each question whose text another question of the pool has too -> those others."""
    return {key: [other for other in keys if other != key] for keys in questions_by_text(pool).values()
            if len(keys) > 1 for key in keys}


def _grade(text: str, path: Path, line: int) -> int:
    try:
        grade = int(text)
    except ValueError:
        grade = -1
    if grade not in (0, 1, 2, 3) or text.strip() != str(grade):
        raise DataError(path, f"grade {text!r}: expected 0, 1, 2 or 3", line)
    return grade


def _trec_id(text: str, path: Path, line: int) -> str:
    """An id as the qrels file writes it, decoded (:func:`evaluation.decode_trec_id`)."""
    try:
        return decode_trec_id(text)
    except ValueError as exc:
        raise DataError(path, str(exc), line) from None


def _row(rules: LineRules, path: Path, line: int, key: tuple[str, str], docid: str, grade: int, **fields) -> dict:
    """One row as Judgment fields, checked by the grade file's rules (:mod:`rag.judging.lines`)."""
    page = docid.startswith(PAGE_PREFIX)
    chunk_id, url = (None, docid.removeprefix(PAGE_PREFIX)) if page else (docid, (rules.chunk_url or {}).get(docid))
    if problem := rules.item_problem(*key, chunk_id, url):
        raise DataError(path, problem, line)
    return {"question_set": key[0], "question_id": key[1], "chunk_id": chunk_id, "url": url, "grade": grade, **fields}


def _quepid_rows(rules: LineRules, pool: Pool, path: Path, text: str) -> list[dict]:
    by_text = questions_by_text(pool)
    rows = []
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if number == 1 or not any(cell.strip() for cell in row):
            continue
        if len(row) != 3:
            raise DataError(path, f"expected 3 columns (query, docid, rating), got {len(row)}", number)
        query, docid = spreadsheet_value(row[0]), spreadsheet_value(row[1])
        keys = by_text.get(query, [])
        if not keys:
            raise DataError(path, f"query {query[:80]!r} is not a question of this run", number)
        if len(keys) > 1:
            raise DataError(path, f"query {query[:80]!r} is the text of {len(keys)} questions of this run "
                                  f"({', '.join(f'{s}/{q}' for s, q in keys)}): import qrels instead", number)
        rows.append(_row(rules, path, number, keys[0], docid, _grade(row[2], path, number), question=query))
    return rows


def _qrels_rows(rules: LineRules, path: Path, lines: list[str]) -> list[dict]:
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 4:
            raise DataError(path, f"expected 4 fields (qid 0 docid grade) or a Quepid CSV header, got {len(fields)}", number)
        question = _trec_id(fields[0], path, number)
        key = question.partition("/")[::2]
        if key not in rules.questions:
            raise DataError(path, f"question {question!r} is not in this run's pool (expected <set>/<question id>)", number)
        rows.append(_row(rules, path, number, key, _trec_id(fields[2], path, number), _grade(fields[3], path, number)))
    return rows


def read_exchange_file(run_dir: Path, path: Path, judge: str) -> list[Judgment]:
    """The rows of a qrels file or a Quepid CSV (a first line ``query,docid,rating``) as judgments of
    ``judge``, each recording the file (``source``, ``source_sha256``)."""
    pool = read_pool(run_dir)
    if not path.is_file():
        raise DataError(path, "file not found")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not UTF-8 text: {exc.reason}") from None
    rules = LineRules.of_pool(pool)
    lines = text.splitlines()
    quepid = lines and [c.strip().lower() for c in next(csv.reader([lines[0]]), [])] == QUEPID_HEADER
    rows = _quepid_rows(rules, pool, path, text) if quepid else _qrels_rows(rules, path, lines)
    stamp, digest = now(), sha256_bytes(data)
    return [Judgment(**row, judge=judge, time=stamp, source=path.name, source_sha256=digest) for row in rows]


def import_grades(run_dir: Path, path: Path, judge: str | None = None) -> tuple[int, str]:
    """Append every row of ``path`` to the run's grade file as ``judge`` (default: the file's stem);
    the grade file is checked first, and a file imported before is refused (its grades would count
    twice as re-judged)."""
    judge = judge or path.stem
    if problem := judge_name_problem(judge):
        raise ConfigError("--judge", f"{problem} (the default is the file's name)")
    _, read = check_grade_file(run_dir)
    judgments = read_exchange_file(run_dir, path, judge)
    digest = judgments[0].model_extra.get("source_sha256") if judgments else None
    earlier = [j for j in read.judgments if digest and (j.model_extra or {}).get("source_sha256") == digest]
    if earlier:
        raise DataError(path, f"already imported (its grades are in {run_dir / JUDGMENTS_FILE} as judge "
                              f"{earlier[0].judge!r}, {earlier[0].time}): nothing appended")
    JudgmentLog(run_dir / JUDGMENTS_FILE).append(judgments)
    return len(judgments), judge
