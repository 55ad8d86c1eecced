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

Cells that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``) are written
with a leading ``'``, which reading removes again.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2

from rag.data.questions.filters import lexical_bias, lexical_overlap
from rag.data.questions.provenance import PROVENANCE_SUFFIX, read_provenance, sibling
from rag.data.records import write_jsonl
from rag.errors import DataError
from rag.io_utils import atomic_write_json, atomic_write_text
from rag.types import Question

COLUMNS = ("id", "accept", "question", "answer", "gold_url", "type", "lexical_overlap", "chunk_id", "chunk_text",
           "metadata")
YES, NO = frozenset({"yes", "y", "1", "true", "x"}), frozenset({"no", "n", "0", "false"})
_FORMULA_START = ("=", "+", "-", "@")
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


def _cell(value: str) -> str:
    return f"'{value}" if value.startswith(_FORMULA_START) else value


def _uncell(value: str) -> str:
    return value[1:] if value.startswith("'") and value[1:].startswith(_FORMULA_START) else value


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
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({key: _cell(value) for key, value in row.items()} for row in rows)
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


def apply_review(csv_path: Path, out: Path) -> dict[str, Any]:
    """Write the accepted rows of ``csv_path`` as the question file ``out`` (see the module docstring);
    returns the review counts. A missing column or an unreadable ``accept`` is a :class:`DataError`."""
    try:
        text = csv_path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError(csv_path, "file not found") from None
    except UnicodeDecodeError as exc:
        raise DataError(csv_path, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    reader = csv.DictReader(io.StringIO(text))
    required = ("id", "accept", "question", "answer", "gold_url")
    missing = [column for column in required if column not in (reader.fieldnames or [])]
    if missing:
        raise DataError(csv_path, f"missing column(s) {', '.join(missing)}; expected the columns of a review file: "
                        f"{', '.join(COLUMNS)}", 1)
    counts = {"accepted": 0, "rejected": 0, "unreviewed": 0, "edited": 0}
    records, overlaps = [], []
    original = _original_questions(csv_path)
    for line, row in enumerate(reader, start=2):
        row = {key: _uncell(value or "") for key, value in row.items() if key is not None}
        verdict = _verdict(row["accept"], csv_path, line)
        counts["unreviewed" if verdict is None else "accepted" if verdict else "rejected"] += 1
        if not verdict:
            continue
        question, answer = row["question"].strip(), row["answer"].strip()
        if not question or not row["gold_url"].strip():
            raise DataError(csv_path, "an accepted row needs a question and a gold_url", line)
        if original.get(row["id"]) not in (None, (question, answer)):
            counts["edited"] += 1
        overlap = round(lexical_overlap(question, row.get("chunk_text", "")), 4)
        overlaps.append(overlap)
        metadata = json.loads(row["metadata"]) if row.get("metadata", "").strip() else {}
        records.append({"id": row["id"], "question": question, "gold_urls": [[row["gold_url"].strip()]],
                        "answers": [answer] if answer else [], "type": row.get("type") or "reviewed",
                        **metadata, "chunk_id": row.get("chunk_id", ""), "lexical_overlap": overlap,
                        "review": "accepted"})
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
