"""TREC file reading and writing, checked against pytrec_eval's own parsers."""

from __future__ import annotations

import pytest
import pytrec_eval

from evaluation import read_qrels, read_run, write_qrels, write_run
from rag.errors import DataError


def test_read_matches_pytrec_eval_parsers(tmp_path):
    qrels_file, run_file = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_file.write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 é 1\n", encoding="utf-8")
    run_file.write_text("q1 Q0 d1 1 3.5 tag\nq1 Q0 d3 2 -1.25 tag\nq2 Q0 é 1 1e-3 tag\n", encoding="utf-8")
    with open(qrels_file, encoding="utf-8") as handle:
        assert read_qrels(qrels_file) == pytrec_eval.parse_qrel(handle)
    with open(run_file, encoding="utf-8") as handle:
        assert read_run(run_file) == pytrec_eval.parse_run(handle)


def test_round_trip_in_rank_order(tmp_path):
    run = {"q1": {"a": 1.0, "b": 1.0, "c": 0.1 + 0.2}, "q2": {"日本": -3.0}}
    path = write_run(run, tmp_path / "out" / "run.txt", tag="bm25")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[:3] == ["q1 Q0 b 1 1.0 bm25", "q1 Q0 a 2 1.0 bm25", "q1 Q0 c 3 0.30000000000000004 bm25"]
    assert read_run(path) == run
    qrels = {"q1": {"a": 1, "z": 0}}
    assert read_qrels(write_qrels(qrels, tmp_path / "qrels.txt")) == qrels


@pytest.mark.parametrize("text, line, message", [
    ("q1 Q0 d1 1 0.5 tag\nq1 Q0 d1 2\n", 2, "expected 6 fields"),
    ("q1 Q0 d1 1 high tag\n", 1, "score must be a number"),
    ("q1 Q0 d1 x 0.5 tag\n", 1, "rank must be an integer"),
    ("q1 Q0 d1 1 0.5 t\n\nq1 Q0 d1 2 0.4 t\n", 3, "appears twice"),
    ("q1 Q0 d1 1 nan t\n", 1, "finite"),
])
def test_bad_run_file_names_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "run.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message) as error:
        read_run(path)
    assert error.value.line == line and error.value.path == str(path)


def test_bad_qrels_and_unwritable_values(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1.5\n", encoding="utf-8")
    with pytest.raises(DataError, match="grade must be an integer"):
        read_qrels(path)
    with pytest.raises(ValueError, match="white space"):
        write_run({"q 1": {"a": 1.0}}, tmp_path / "r.txt")
    with pytest.raises(ValueError, match="integer grades"):
        write_qrels({"q": {"a": 0.5}}, tmp_path / "q.txt")
