"""The review round trip (issue 44, item 8): the hidden ``metadata`` cell never overrides a reviewed
column; a malformed cell is one line naming the file, row and column; tab- and CR-led cells are guarded
and a lone CR is quoted, so the tool's own CSV applies back unchanged."""

from __future__ import annotations

import csv
import io
import json

import pytest

from rag.cli import main
from rag.data.questions.review import COLUMNS, MAX_CELL, write_review
from rag.types import Question


def _write(path, rows):
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows({column: row.get(column, "") for column in COLUMNS} for row in rows)
    path.write_bytes(buffer.getvalue().encode("utf-8"))


def _apply(tmp_path, capsys):
    out = tmp_path / "reviewed.jsonl"
    code = main(["questions", "--apply-review", str(tmp_path / "q.review.csv"), "--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.err.strip(), out


def test_metadata_never_overrides_the_reviewed_columns(tmp_path, capsys):
    hidden = {"id": "q1", "question": "hidden?", "gold_urls": [["elsewhere.md"]], "answers": ["hidden"],
              "type": "hidden", "chunk_id": "other#0", "lexical_overlap": 0.0, "review": "rejected", "source": "kept"}
    _write(tmp_path / "q.review.csv", [
        {"id": "q1", "accept": "yes", "question": "What is first?", "answer": "one", "gold_url": "a.md", "type": "t"},
        {"id": "q2", "accept": "yes", "question": "What is second?", "answer": "two", "gold_url": "b.md", "type": "t",
         "chunk_id": "b#0", "metadata": json.dumps(hidden)},
    ])
    code, err, out = _apply(tmp_path, capsys)
    assert code == 0, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["q1", "q2"]
    second = records[1]
    assert (second["question"], second["gold_urls"], second["answers"], second["type"]) == \
        ("What is second?", [["b.md"]], ["two"], "t")
    assert second["chunk_id"] == "b#0" and second["review"] == "accepted" and second["source"] == "kept"


@pytest.mark.parametrize("row, column", [
    ({"metadata": "{not json"}, "metadata"),
    ({"metadata": "[1, 2]"}, "metadata"),
    ({"metadata": "1" * 5000}, "metadata"),
    ({"metadata": "[" * 100_000}, "metadata"),
    ({"question": "x" * (MAX_CELL + 1)}, "question"),
    ({"chunk_text": "x" * (MAX_CELL + 1)}, "chunk_text"),
    ({"id": "q1"}, "id"),  # the id of row 2 again
])
def test_a_malformed_cell_is_one_line_naming_file_row_and_column(tmp_path, capsys, row, column):
    base = {"accept": "yes", "question": "What?", "answer": "a", "gold_url": "a.md"}
    _write(tmp_path / "q.review.csv", [{**base, "id": "q1"}, {**base, "id": "q2", **row}])
    code, err, out = _apply(tmp_path, capsys)
    assert code == 2 and "\n" not in err and "Traceback" not in err
    assert "q.review.csv" in err and "row 3" in err and f"column {column}" in err and len(err) < 400
    assert not out.exists()


def test_the_tools_own_csv_with_tab_and_cr_cells_applies_back_unchanged(tmp_path, capsys):
    questions = [
        Question("q1", "What is\ra lone CR?", [["a.md"]], ["line one\r\nline two\nthree"], "\ttabbed",
                 metadata={"chunk_id": "\rc1", "lexical_overlap": 0.5, "note": "\t=cmd"}),
        Question("q2", "Which one?", [["b.md"]], ["=1+2"], "\r=HYPERLINK()", metadata={"chunk_id": "-c2"}),
    ]
    write_review(tmp_path / "q.jsonl", questions, {"\rc1": "\tchunk\rtext", "-c2": "+chunk"}, [], [])
    raw = (tmp_path / "q.review.csv").read_bytes()
    with io.StringIO(raw.decode("utf-8"), newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["type"] for row in rows] == ["'\ttabbed", "'\r=HYPERLINK()"]  # guarded for a spreadsheet
    assert rows[0]["chunk_id"] == "'\rc1" and rows[0]["question"] == "What is\ra lone CR?"
    for qid in (b"q1", b"q2"):  # accept both, touching nothing else of the tool's own file
        raw = raw.replace(b"\n" + qid + b",,", b"\n" + qid + b",yes,", 1)
    (tmp_path / "q.review.csv").write_bytes(raw)
    code, err, out = _apply(tmp_path, capsys)
    assert code == 0, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["question"], r["answers"], r["type"], r["chunk_id"]) for r in records] == [
        ("q1", "What is\ra lone CR?", ["line one\r\nline two\nthree"], "\ttabbed", "\rc1"),
        ("q2", "Which one?", ["=1+2"], "\r=HYPERLINK()", "-c2"),
    ]
    assert records[0]["note"] == "\t=cmd"
