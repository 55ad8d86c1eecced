"""BEIR format on a small BEIR-shaped fixture written by the test."""

import json

import pytest

from rag.data import load_dataset
from rag.errors import DataError

CORPUS = [
    {"_id": "d1", "title": "Aspirin", "text": "Aspirin reduces fever.", "metadata": {}},
    {"_id": "d2", "title": "", "text": "Ibuprofen is an NSAID."},
    {"_id": "d3", "title": "Paracetamol", "text": "Paracetamol treats pain."},
]
QUERIES = [
    {"_id": "q1", "text": "What reduces fever?", "metadata": {"src": "x"}},
    {"_id": "q2", "text": "Which drugs treat pain?"},
    {"_id": "q3", "text": "Only judged in train"},
    {"_id": "q4", "text": "Only judged non-relevant"},
]
QRELS = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td3\t2", "q2\td2\t1", "q4\td1\t0"]


def write_beir(root, corpus=CORPUS, queries=QUERIES, qrels=QRELS):
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td2\t1\n")
    return root


def test_loads_beir(tmp_path):
    root = write_beir(tmp_path / "tiny")
    dataset = load_dataset({"format": "beir", "path": str(root)})
    assert dataset.name == "tiny"
    assert [(d.doc_id, d.url, d.text) for d in dataset.documents] == [
        ("d1", "d1", "Aspirin Aspirin reduces fever."), ("d2", "d2", "Ibuprofen is an NSAID."),
        ("d3", "d3", "Paracetamol Paracetamol treats pain.")]
    questions = dataset.question_sets["test"]
    assert [q.qid for q in questions] == ["q1", "q2"]  # q3: other split; q4: no relevant document
    assert questions[0].gold_urls == [["d1"]] and questions[0].metadata == {"src": "x"}
    assert questions[0].relevance == {"d1": 1}
    assert questions[1].gold_urls == [["d3"], ["d2"]] and questions[1].relevance == {"d3": 2, "d2": 1}
    assert {q.qtype for q in questions} == {"beir"} and {q.question_set for q in questions} == {"test"}
    assert dataset.source_files == [root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / "test.tsv"]
    train = load_dataset({"format": "beir", "path": "tiny", "split": "train", "title_in_text": False}, base_dir=tmp_path)
    assert [q.qid for q in train.question_sets["train"]] == ["q3"]
    assert train.documents[0].text == "Aspirin reduces fever."


@pytest.mark.parametrize("qrels, line, kind, message", [
    ([*QRELS, "q1\td9\t1"], 6, "unknown_url", "corpus-id 'd9' is not in corpus.jsonl"),
    ([*QRELS, "q1 d1 1"], 6, "malformed_line", "expected 'query-id<TAB>corpus-id<TAB>score'"),
    ([*QRELS, "q1\td2\thigh"], 6, "malformed_line", "score 'high' is not an integer"),
    ([*QRELS, "q7\td2\t1"], 6, "unknown_query", "query-id 'q7' is not in queries.jsonl"),
])
def test_bad_qrels(tmp_path, qrels, line, kind, message):
    root = write_beir(tmp_path / "b", qrels=qrels)
    with pytest.raises(DataError) as raised:
        load_dataset({"format": "beir", "path": str(root)})
    assert raised.value.path == str(root / "qrels" / "test.tsv") and raised.value.line == line
    assert message in str(raised.value)
    dataset = load_dataset({"format": "beir", "path": str(root)}, skip_invalid=True)
    assert dataset.skipped == {kind: 1}


def test_bad_corpus_and_queries(tmp_path):
    root = write_beir(tmp_path / "c", corpus=[*CORPUS, {"_id": "d4", "title": "", "text": " "}, {"title": "x", "text": "y"}],
                      queries=[*QUERIES, {"_id": "q1", "text": "dup"}])
    with pytest.raises(DataError) as raised:
        load_dataset({"format": "beir", "path": str(root)})
    assert raised.value.line == 4 and "no text" in str(raised.value)
    dataset = load_dataset({"format": "beir", "path": str(root)}, skip_invalid=True)
    assert dataset.skipped == {"empty_text": 1, "missing_field": 1, "duplicate_id": 1}
    with pytest.raises(DataError, match="directory not found"):
        load_dataset({"format": "beir", "path": str(tmp_path / "absent")})
