"""Grades out to and in from the tools search teams already use.

* TREC qrels (``qid 0 docid grade``, whitespace-separated): ``qid`` is ``<set>/<question id>`` and
  ``docid`` the chunk id, both written with :func:`evaluation.encode_trec_id` as the run's own TREC
  files are; a page graded as a whole is ``url:<url>``.
* Quepid's basic judgment CSV (``query,docid,rating``): ``query`` is the question's text (Quepid
  keys judgments by query text), ``docid`` as above, ``rating`` the grade.

Export writes the combined grades (:mod:`rag.judging.combine`: one grade per item); import appends
every row to the grade file as one judge, each row checked against the run's pool (an unknown
question or passage, or a grade outside 0-3, is one error naming the file and line, and nothing is
appended).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from evaluation.trec_io import decode_trec_id, encode_trec_id
from rag.errors import DataError
from rag.io_utils import atomic_write_bytes
from rag.judging.combine import PAGE_PREFIX, combine
from rag.judging.pool import Pool, read_pool
from rag.judging.store import JUDGMENTS_FILE, Judgment, JudgmentLog, now, read_judgments

QUEPID_HEADER = ["query", "docid", "rating"]


def export_grades(run_dir: Path, kind: str, out: Path, trust_llm: bool = False) -> int:
    """Write the run's combined grades as ``qrels`` or ``quepid``; returns how many."""
    from rag.judging.session import check_against_pool

    pool = read_pool(run_dir)
    read = read_judgments(run_dir / JUDGMENTS_FILE)
    check_against_pool(run_dir / JUDGMENTS_FILE, read, pool)
    grades = combine(read.judgments, trust_llm=trust_llm)
    rows = []
    for (question_set, qid), g in grades.items():
        items = [*((c, grade) for c, grade in g.chunks.items()), *((PAGE_PREFIX + u, grade) for u, grade in g.pages.items())]
        for docid, grade in items:
            rows.append((question_set, qid, docid, grade))
    if kind == "qrels":
        text = "".join(f"{encode_trec_id(f'{s}/{q}')} 0 {encode_trec_id(d)} {g}\n" for s, q, d, g in rows)
    else:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(QUEPID_HEADER)
        for s, q, d, g in rows:
            writer.writerow([pool.questions[(s, q)].text, d, g])
        text = buffer.getvalue()
    atomic_write_bytes(out, text.encode("utf-8"))
    return len(rows)


def _item(pool: Pool, question_set: str, qid: str, docid: str, path: Path, line: int) -> dict:
    """The chunk or page a row names, as Judgment fields."""
    if docid.startswith(PAGE_PREFIX):
        url = docid.removeprefix(PAGE_PREFIX)
        if not any(c.url == url for c in pool.chunks.values()):
            raise DataError(path, f"page {url!r} is not in this run's pool", line)
        return {"chunk_id": None, "url": url}
    if docid not in pool.chunks:
        raise DataError(path, f"passage {docid!r} is not in this run's pool", line)
    return {"chunk_id": docid, "url": pool.chunks[docid].url}


def _grade(text: str, path: Path, line: int) -> int:
    try:
        grade = int(text)
    except ValueError:
        grade = -1
    if grade not in (0, 1, 2, 3) or text.strip() != str(grade):
        raise DataError(path, f"grade {text!r}: expected 0, 1, 2 or 3", line)
    return grade


def read_exchange_file(run_dir: Path, path: Path, judge: str) -> list[Judgment]:
    """The rows of a qrels file or a Quepid CSV (a first line ``query,docid,rating``) as judgments."""
    pool = read_pool(run_dir)
    if not path.is_file():
        raise DataError(path, "file not found")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not UTF-8 text: {exc.reason}") from None
    stamp = now()
    by_text = {q.text: key for key, q in pool.questions.items()}
    judgments: list[Judgment] = []
    lines = text.splitlines()
    if lines and [c.strip().lower() for c in next(csv.reader([lines[0]]))] == QUEPID_HEADER:
        for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
            if number == 1 or not any(cell.strip() for cell in row):
                continue
            if len(row) != 3:
                raise DataError(path, f"expected 3 columns (query, docid, rating), got {len(row)}", number)
            key = by_text.get(row[0])
            if key is None:
                raise DataError(path, f"query {row[0][:80]!r} is not a question of this run", number)
            judgments.append(Judgment(question_set=key[0], question_id=key[1], question=row[0], grade=_grade(row[2], path, number),
                                      judge=judge, time=stamp, **_item(pool, *key, row[1], path, number)))
        return judgments
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 4:
            raise DataError(path, f"expected 4 fields (qid 0 docid grade) or a Quepid CSV header, got {len(fields)}", number)
        question = decode_trec_id(fields[0])
        question_set, _, qid = question.partition("/")
        if (question_set, qid) not in pool.questions:
            raise DataError(path, f"question {question!r} is not in this run's pool (expected <set>/<question id>)", number)
        judgments.append(Judgment(question_set=question_set, question_id=qid, grade=_grade(fields[3], path, number),
                                  judge=judge, time=stamp,
                                  **_item(pool, question_set, qid, decode_trec_id(fields[2]), path, number)))
    return judgments


def import_grades(run_dir: Path, path: Path, judge: str | None = None) -> tuple[int, str]:
    """Append every row of ``path`` to the run's grade file as ``judge`` (default: the file's stem)."""
    judge = judge or path.stem
    judgments = read_exchange_file(run_dir, path, judge)
    JudgmentLog(run_dir / JUDGMENTS_FILE).append(judgments)
    return len(judgments), judge
