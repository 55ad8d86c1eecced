"""Human review of a made question set: a CSV to fill in, a page to read, and applying the verdicts.

``q.review.csv`` (beside ``q.jsonl``) has one row per question with the columns :data:`COLUMNS`; a
person writes ``yes`` or ``no`` in ``accept`` (also ``y``/``n``, ``1``/``0``, ``true``/``false``,
``x`` for yes; case-insensitive) and may correct ``question`` and ``answer``. ``q.review.html`` shows
the same rows with each chunk, in the report's style (one self-contained page, every text escaped).

``rag-bench questions --apply-review q.review.csv --out reviewed.jsonl`` turns the reviewed CSV into
an ordinary question file: the accepted rows only, with the corrected text, their lexical overlap
recomputed; a blank ``accept`` counts as unreviewed and is left out. The provenance of ``q.jsonl``
(if beside the CSV) is carried over with a ``review`` entry (accepted, rejected, unreviewed, edited)
and the lexical bias of the accepted questions.

Cells that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return), and cells starting with ``'`` itself, are written with a leading ``'``, which reading
removes again (:func:`rag.io_utils.spreadsheet_cell`); the file's lines end in
CRLF, so a cell holding a line break (CR, LF or both) is quoted and reads back unchanged.

The ``metadata`` cell (JSON, carried into each accepted record) never overrides a reviewed column: a key
that names one (``id``, ``question``, ``answers``, ``gold_urls``, ``type``, ...) is ignored. Metadata that
is not a JSON object, a cell over :data:`MAX_CELL` characters, an id used twice or a file the CSV reader
cannot parse is one line naming the file, the row (the header is row 1) and the column.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2

from rag.data.questions.filters import lexical_bias, lexical_overlap
from rag.data.questions.provenance import PROVENANCE_SUFFIX, read_provenance, sibling
from rag.data.records import write_jsonl
from rag.errors import DataError
from rag.io_utils import atomic_write_json, atomic_write_text, parse_json, spreadsheet_cell, spreadsheet_value
from rag.types import Question

COLUMNS = ("id", "accept", "question", "answer", "gold_url", "type", "lexical_overlap", "chunk_id", "chunk_text",
           "metadata")
YES, NO = frozenset({"yes", "y", "1", "true", "x"}), frozenset({"no", "n", "0", "false"})
MAX_CELL = 131_072  # characters in one cell (the csv module's default field limit)
RECORD_KEYS = frozenset({*COLUMNS, "gold_urls", "answers", "review", "relevance"})  # metadata never sets these
_PAGE = jinja2.Environment(autoescape=True).from_string("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0 auto;padding:1.5em;max-width:1200px;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-top:0} h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.num{text-align:right;white-space:nowrap}
.note{color:#555;font-size:13px} .chunk{font-size:12px;color:#444;min-width:420px;overflow-wrap:anywhere}
.gold{max-width:220px;overflow-wrap:anywhere}
</style></head><body>
<h1>{{ title }}</h1>
<p class="note">Write yes or no in the <code>accept</code> column of {{ csv_name }} (correct the question or answer
there if needed), then: <code>rag-bench questions --apply-review {{ csv_name }} --out reviewed.jsonl</code>.</p>
<h2>How they were made</h2>
<ul class="note">{% for item in facts %}<li>{{ item }}</li>{% endfor %}</ul>
{% if filters %}<table><tr><th>filter</th><th>keeps</th><th>in</th><th>removed</th></tr>
{% for f in filters %}<tr><td>{{ f.filter }}</td><td>{{ f.keeps }}</td><td class="num">{{ f["in"] }}</td>
<td class="num">{{ f.removed }}</td></tr>{% endfor %}
</table>{% endif %}
<h2>Questions ({{ rows|length }})</h2>
<table><tr><th>id</th><th>question</th><th>answer</th><th>overlap</th><th>gold</th><th>chunk</th></tr>
{% for r in rows %}<tr><td>{{ r.id }}</td><td>{{ r.question }}</td><td>{{ r.answer }}</td><td class="num">{{ r.lexical_overlap }}</td>
<td class="gold">{{ r.gold_url }}<br><span class="note">{{ r.chunk_id }}</span></td>
<td class="chunk">{{ r.chunk_text }}</td></tr>{% endfor %}
</table></body></html>
""")


def review_rows(questions: Sequence[Question], chunk_text: Mapping[str, str]) -> list[dict[str, str]]:
    """One review row per question (``accept`` blank)."""
    rows = []
    for q in questions:
        chunk_id = str(q.metadata.get("chunk_id", ""))
        extra = {k: v for k, v in q.metadata.items() if k not in ("chunk_id", "lexical_overlap")}
        rows.append({
            "id": q.qid, "accept": "", "question": q.text, "answer": q.answers[0] if q.answers else "",
            "gold_url": q.gold_urls[0][0], "type": q.qtype, "lexical_overlap": f"{q.metadata.get('lexical_overlap', '')}",
            "chunk_id": chunk_id, "chunk_text": chunk_text.get(chunk_id, ""), "metadata": json.dumps(extra, ensure_ascii=False),
        })
    return rows


def write_review(question_file: Path, questions: Sequence[Question], chunk_text: Mapping[str, str],
                 facts: Sequence[str], filters: Sequence[Mapping[str, Any]]) -> tuple[Path, Path]:
    """``q.review.csv`` and ``q.review.html`` beside ``question_file``."""
    rows = review_rows(questions, chunk_text)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\r\n")  # CRLF: a lone CR is quoted
    writer.writeheader()
    writer.writerows({key: spreadsheet_cell(value) for key, value in row.items()} for row in rows)
    csv_path, html_path = sibling(question_file, ".review.csv"), sibling(question_file, ".review.html")
    atomic_write_text(csv_path, buffer.getvalue())
    atomic_write_text(html_path, _PAGE.render(title=f"Review: {question_file.name}", csv_name=csv_path.name,
                                              facts=list(facts), filters=list(filters), rows=rows))
    return csv_path, html_path


def _verdict(value: str, path: Path, line: int) -> bool | None:
    value = value.strip().lower()
    if not value:
        return None
    if value in YES or value in NO:
        return value in YES
    raise DataError(path, f"accept is {value!r}; expected yes or no (or blank: not reviewed)", line)


def _cell_error(path: Path, row: int, column: str, problem: str) -> DataError:
    return DataError(path, f"row {row}, column {column}: {problem}")


def _metadata(value: str, path: Path, row: int) -> dict[str, Any]:
    """The extra fields of the ``metadata`` cell, less any key that names a reviewed column."""
    if not value.strip():
        return {}
    try:
        metadata = parse_json(value)
    except ValueError as exc:  # JSONDecodeError (nested too deeply included), and the int parser's digit limit
        raise _cell_error(path, row, "metadata", f"not valid JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(metadata, dict):
        raise _cell_error(path, row, "metadata", f"expected a JSON object, got {type(metadata).__name__}")
    return {key: item for key, item in metadata.items() if key not in RECORD_KEYS}


@contextlib.contextmanager
def _field_limit(limit: int) -> Iterator[None]:
    """The csv module's (process-wide) field limit raised for one read, so a long cell is named by its column."""
    old = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _read_rows(csv_path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows of a review CSV, each cell un-guarded; one line per problem."""
    try:
        text = csv_path.read_bytes().decode("utf-8-sig")  # no newline translation: a quoted CR stays a CR
    except FileNotFoundError:
        raise DataError(csv_path, "file not found") from None
    except UnicodeDecodeError as exc:
        raise DataError(csv_path, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows: list[dict[str, str]] = []
    with _field_limit(max(len(text), MAX_CELL) + 1):
        try:
            fieldnames = list(reader.fieldnames or [])
            for row in reader:
                rows.append({key: value or "" for key, value in row.items() if key is not None})
        except csv.Error as exc:
            raise DataError(csv_path, f"row {len(rows) + 2}: not readable as CSV ({exc})") from None
    for number, row in enumerate(rows, start=2):
        for column, value in row.items():
            if len(value) > MAX_CELL:
                raise _cell_error(csv_path, number, column, f"{len(value):,} characters; at most {MAX_CELL:,}")
    return fieldnames, [{key: spreadsheet_value(value) for key, value in row.items()} for row in rows]


def apply_review(csv_path: Path, out: Path) -> dict[str, Any]:
    """Write the accepted rows of ``csv_path`` as the question file ``out`` (see the module docstring);
    returns the review counts. A missing column or an unreadable ``accept`` is a :class:`DataError`."""
    fieldnames, rows = _read_rows(csv_path)
    required = ("id", "accept", "question", "answer", "gold_url")
    missing = [column for column in required if column not in fieldnames]
    if missing:
        raise DataError(csv_path, f"missing column(s) {', '.join(missing)}; expected the columns of a review file: "
                        f"{', '.join(COLUMNS)}", 1)
    counts = {"accepted": 0, "rejected": 0, "unreviewed": 0, "edited": 0}
    records, overlaps = [], []
    original = _original_questions(csv_path)
    seen: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):
        verdict = _verdict(row["accept"], csv_path, line)
        counts["unreviewed" if verdict is None else "accepted" if verdict else "rejected"] += 1
        if not verdict:
            continue
        question, answer = row["question"].strip(), row["answer"].strip()
        if not question or not row["gold_url"].strip():
            raise DataError(csv_path, "an accepted row needs a question and a gold_url", line)
        if row["id"] in seen:
            raise _cell_error(csv_path, line, "id", f"{row['id']!r} is also the id of row {seen[row['id']]}")
        seen[row["id"]] = line
        if original.get(row["id"]) not in (None, (question, answer)):
            counts["edited"] += 1
        overlap = round(lexical_overlap(question, row.get("chunk_text", "")), 4)
        overlaps.append(overlap)
        records.append({**_metadata(row.get("metadata", ""), csv_path, line),
                        "id": row["id"], "question": question, "gold_urls": [[row["gold_url"].strip()]],
                        "answers": [answer] if answer else [], "type": row.get("type") or "reviewed",
                        "chunk_id": row.get("chunk_id", ""), "lexical_overlap": overlap, "review": "accepted"})
    if not records:
        raise DataError(csv_path, f"no accepted row ({counts['rejected']} rejected, {counts['unreviewed']} unreviewed); "
                        "expected yes in the accept column of at least one")
    write_jsonl(out, records)
    provenance = read_provenance(csv_path) or {}
    provenance.update(review={**counts, "file": csv_path.name}, written=len(records), lexical_bias=lexical_bias(overlaps))
    provenance.pop("leak", None)  # it needs the documents' titles; a run computes it for every set (data summary)
    atomic_write_json(sibling(out, PROVENANCE_SUFFIX), provenance)
    return counts


def _original_questions(csv_path: Path) -> dict[str, tuple[str, str]]:
    """(question, answer) per id of the question file the review CSV was made from, when it is beside it."""
    source = sibling(csv_path, ".jsonl")
    if not source.is_file():
        return {}
    originals = {}
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            originals[record["id"]] = (record["question"], (record.get("answers") or [""])[0])
    return originals
