"""TREC file reading and writing, checked against pytrec_eval's own parsers."""

from __future__ import annotations

import unicodedata

import pytest
import pytrec_eval
from hypothesis import given, settings, strategies as st

from evaluation import decode_trec_id, encode_trec_id, read_qrels, read_run, write_qrels, write_run
from evaluation.files import FileFormatError


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
    with pytest.raises(FileFormatError, match=message) as error:
        read_run(path)
    assert error.value.line == line and error.value.path == str(path)


def test_bad_qrels_and_unwritable_values(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1.5\n", encoding="utf-8")
    with pytest.raises(FileFormatError, match="grade must be an integer"):
        read_qrels(path)
    with pytest.raises(ValueError, match="white space"):
        write_run({"q 1": {"a": 1.0}}, tmp_path / "r.txt")
    with pytest.raises(ValueError, match="integer grades"):
        write_qrels({"q": {"a": 0.5}}, tmp_path / "q.txt")


AWKWARD_IDS = ["q 1", "q%201", "q\t1", "https://en.wikipedia.org/wiki/Caf%C3%A9", "Café#0", "a#b", "100%",
               "\\", "\\x20", "a\\b", "東京\u3000駅", "nul\x00", "line\nbreak", "nbsp\xa0", "%", "\ud800"]


def test_encoding_keeps_safe_ids_and_separates_the_colliding_pairs():
    assert encode_trec_id("https://en.wikipedia.org/wiki/Caf%C3%A9") == "https://en.wikipedia.org/wiki/Caf%C3%A9"
    assert encode_trec_id("Café#0") == "Café#0"
    assert encode_trec_id("q 1") == "q\\x201" != encode_trec_id("q%201") == "q%201"
    base = "https://en.wikipedia.org/wiki/"
    assert encode_trec_id(base + "a b") != encode_trec_id(base + "a%20b") == base + "a%20b"
    assert len({encode_trec_id(i) for i in AWKWARD_IDS}) == len(AWKWARD_IDS)
    with pytest.raises(ValueError, match="empty"):
        encode_trec_id("")
    with pytest.raises(ValueError, match="backslash"):
        decode_trec_id("a\\b")


def _needs_escape(character):
    """Independent definition: what str.split separates on, control characters, surrogates, backslash."""
    return character.isspace() or unicodedata.category(character) in ("Cc", "Cs") or character == "\\"


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(exclude_categories=()), min_size=1))  # surrogates included
def test_encoding_is_injective_safe_and_minimal(identifier):
    encoded = encode_trec_id(identifier)
    assert decode_trec_id(encoded) == identifier  # a left inverse: the encoding is injective
    assert encoded.split() == [encoded] and "\x00" not in encoded
    encoded.encode("utf-8")
    if not any(_needs_escape(c) for c in identifier):
        assert encoded == identifier


def test_colliding_ids_stay_two_queries_in_the_files(tmp_path):
    qrels = {encode_trec_id(qid): {encode_trec_id(url): 1} for qid, url in [("q 1", "x/a b"), ("q%201", "x/a%20b")]}
    written = read_qrels(write_qrels(qrels, tmp_path / "qrels.txt"))
    assert len(written) == 2 and written == qrels


def test_awkward_ids_round_trip_through_the_files(tmp_path):
    run = {qid: {doc: float(i * 100 + j) for j, doc in enumerate(AWKWARD_IDS)} for i, qid in enumerate(AWKWARD_IDS)}
    encoded = {encode_trec_id(q): {encode_trec_id(d): s for d, s in docs.items()} for q, docs in run.items()}
    read = read_run(write_run(encoded, tmp_path / "run.txt"))
    assert {decode_trec_id(q): {decode_trec_id(d): s for d, s in docs.items()} for q, docs in read.items()} == run
    qrels = {qid: {doc: 1 for doc in AWKWARD_IDS} for qid in AWKWARD_IDS}
    read_back = read_qrels(write_qrels({encode_trec_id(q): {encode_trec_id(d): g for d, g in docs.items()}
                                        for q, docs in qrels.items()}, tmp_path / "qrels.txt"))
    assert {decode_trec_id(q): {decode_trec_id(d): g for d, g in docs.items()} for q, docs in read_back.items()} == qrels


@pytest.mark.parametrize("bad", ["q 1", "", "a\tb", "a\\b", "a\\x41", "a\\u0020", "nul\x00"])
def test_writers_refuse_ids_not_in_encoded_form(tmp_path, bad):
    with pytest.raises(ValueError, match="not a TREC id"):
        write_run({bad: {"d": 1.0}}, tmp_path / "run.txt")
    with pytest.raises(ValueError, match="not a TREC id"):
        write_run({"q": {bad: 1.0}}, tmp_path / "run.txt")
    with pytest.raises(ValueError, match="not a TREC id"):
        write_qrels({"q": {bad: 1}}, tmp_path / "qrels.txt")
