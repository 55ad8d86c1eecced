"""Our JSONL format: loading, and every malformed-input case named by file and line."""

import json

import pytest

from rag.data import DatasetConfig, load_dataset
from rag.errors import DataError

DOCS = [
    {"doc_id": "A", "url": "https://x.org/A", "title": "Alpha", "text": "Alpha is first.", "topic": "T"},
    {"doc_id": "B", "url": "https://x.org/B", "title": "Beta", "text": "Beta is second."},
    {"doc_id": "C", "text": "C has no url, so its url is its id."},
]
QUESTIONS = [
    {"id": "q1", "question": "What is first?", "gold_urls": ["https://x.org/A"], "answers": ["Alpha"], "type": "known_item"},
    {"id": "q2", "question": "Both?", "gold_urls": [["https://x.org/A", "C"], ["https://x.org/B"]], "difficulty": "hard"},
]


def write_lines(path, lines):
    path.write_bytes(b"".join((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines))
    return path


def load(tmp_path, docs=DOCS, questions=QUESTIONS, skip_invalid=False):
    write_lines(tmp_path / "corpus.jsonl", docs)
    write_lines(tmp_path / "dev.jsonl", questions)
    config = DatasetConfig(format="jsonl", corpus="corpus.jsonl", questions={"dev": "dev.jsonl"})
    return load_dataset(config, skip_invalid=skip_invalid, base_dir=tmp_path)


def test_loads_documents_and_questions(tmp_path):
    dataset = load(tmp_path)
    assert [d.doc_id for d in dataset.documents] == ["A", "B", "C"]
    assert dataset.documents[0].metadata == {"topic": "T"}
    assert dataset.documents[2].url == "C" and dataset.documents[2].title == ""
    q1, q2 = dataset.question_sets["dev"]
    assert q1.gold_urls == [["https://x.org/A"]] and q1.qtype == "known_item" and q1.question_set == "dev"
    assert q2.gold_urls == [["https://x.org/A", "C"], ["https://x.org/B"]]
    assert q2.qtype == "dev" and q2.answers == [] and q2.metadata == {"difficulty": "hard"}
    assert dataset.skipped == {} and dataset.skipped_examples == []
    assert dataset.source_files == [tmp_path / "corpus.jsonl", tmp_path / "dev.jsonl"]
    assert dataset.name == "corpus"


def test_flat_gold_list_means_each_required_and_single_file_set_name(tmp_path):
    write_lines(tmp_path / "corpus.jsonl", DOCS)
    write_lines(tmp_path / "my_questions.jsonl", [{"id": "q", "question": "?", "gold_urls": ["https://x.org/A", "C"]}])
    dataset = load_dataset({"format": "jsonl", "corpus": str(tmp_path / "corpus.jsonl"),
                            "questions": str(tmp_path / "my_questions.jsonl")})
    assert dataset.question_sets["my_questions"][0].gold_urls == [["https://x.org/A"], ["C"]]


BAD_CORPUS = [
    (b'{"doc_id": "X", "text": ', "invalid_json", "invalid JSON"),
    (b'["a list"]', "wrong_type", "expected a JSON object"),
    ({"doc_id": "X"}, "missing_field", "'text': missing required field"),
    ({"doc_id": 7, "text": "t"}, "wrong_type", "'doc_id'"),
    ({"doc_id": "X", "text": "   "}, "empty_text", "'text'"),
    ({"doc_id": "", "text": "t"}, "missing_field", "'doc_id'"),
    ({"doc_id": "A", "text": "again"}, "duplicate_id", "duplicate doc_id 'A'"),
    ({"doc_id": "Z", "url": "https://x.org/B", "text": "t"}, "duplicate_id", "duplicate url"),
    (b'{"doc_id": "X", "text": "caf\xe9"}', "non_utf8", "not valid UTF-8"),
]


@pytest.mark.parametrize("bad, kind, message", BAD_CORPUS)
def test_bad_corpus_record(tmp_path, bad, kind, message):
    docs = [DOCS[0], DOCS[1], bad, DOCS[2]]  # the bad record is on line 3
    with pytest.raises(DataError) as raised:
        load(tmp_path, docs=docs)
    error = raised.value
    assert error.path == str(tmp_path / "corpus.jsonl") and error.line == 3
    assert str(error).startswith(f"{tmp_path / 'corpus.jsonl'}:3: ") and message in str(error)
    dataset = load(tmp_path, docs=docs, skip_invalid=True)
    assert dataset.skipped == {kind: 1}
    assert len(dataset.documents) == 3
    assert dataset.skipped_examples[0].startswith(f"{tmp_path / 'corpus.jsonl'}:3: ")


BAD_QUESTIONS = [
    ({"id": "q3", "gold_urls": ["C"]}, "missing_field", "'question': missing required field"),
    ({"id": "q3", "question": " ", "gold_urls": ["C"]}, "empty_text", "'question'"),
    ({"id": "q3", "question": "?", "gold_urls": []}, "no_ground_truth", "no ground-truth URL"),
    ({"id": "q3", "question": "?", "gold_urls": [[]]}, "no_ground_truth", "no ground-truth URL"),
    ({"id": "q3", "question": "?", "gold_urls": "C"}, "wrong_type", "'gold_urls'"),
    ({"id": "q3", "question": "?", "gold_urls": [3]}, "wrong_type", "'gold_urls"),
    ({"id": "q3", "question": "?", "gold_urls": ["https://x.org/nope"]}, "unknown_url", "'https://x.org/nope' is not in the corpus"),
    ({"id": "q1", "question": "?", "gold_urls": ["C"]}, "duplicate_id", "duplicate id 'q1'"),
    ({"id": "q3", "question": "?", "gold_urls": ["C"], "answers": "C"}, "wrong_type", "'answers'"),
    (b"not json", "invalid_json", "invalid JSON"),
]


@pytest.mark.parametrize("bad, kind, message", BAD_QUESTIONS)
def test_bad_question_record(tmp_path, bad, kind, message):
    questions = [QUESTIONS[0], bad, QUESTIONS[1]]  # line 2
    with pytest.raises(DataError) as raised:
        load(tmp_path, questions=questions)
    assert raised.value.path == str(tmp_path / "dev.jsonl") and raised.value.line == 2
    assert message in str(raised.value)
    dataset = load(tmp_path, questions=questions, skip_invalid=True)
    assert dataset.skipped == {kind: 1}
    assert [q.qid for q in dataset.question_sets["dev"]] == ["q1", "q2"]


def test_skip_counts_several_kinds(tmp_path):
    docs = [*DOCS, b"{oops", {"doc_id": "A", "text": "dup"}, b"{oops"]
    questions = [*QUESTIONS, {"id": "q9", "question": "?", "gold_urls": ["missing"]}]
    dataset = load(tmp_path, docs=docs, questions=questions, skip_invalid=True)
    assert dataset.skipped == {"invalid_json": 2, "duplicate_id": 1, "unknown_url": 1}
    assert len(dataset.skipped_examples) == 4


def test_missing_file_and_blank_lines(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        load_dataset({"format": "jsonl", "corpus": "nope.jsonl", "questions": "q.jsonl"}, base_dir=tmp_path)
    write_lines(tmp_path / "corpus.jsonl", [DOCS[0], b"   ", DOCS[1]])
    write_lines(tmp_path / "q.jsonl", [QUESTIONS[0]])
    dataset = load_dataset({"format": "jsonl", "corpus": "corpus.jsonl", "questions": "q.jsonl"}, base_dir=tmp_path)
    assert len(dataset.documents) == 2


def test_empty_corpus_is_an_error(tmp_path):
    with pytest.raises(DataError, match="no valid document"):
        load(tmp_path, docs=[b"{bad"], skip_invalid=True)


def test_config_rejects_unknown_keys_and_formats():
    with pytest.raises(ValueError, match="extra"):
        DatasetConfig.model_validate({"format": "jsonl", "corpus": "c", "questions": "q", "split": "x"})
    with pytest.raises(ValueError):
        DatasetConfig.model_validate({"format": "csv"})
    assert DatasetConfig(format="wiki").question_sets == ["seed_style", "known_item", "multi_doc"]
