"""The `reference` question set: the reference system's own questions whose gold pages are all bundled."""

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from rag.data import bundled_wiki_dir, load_dataset
from rag.data.records import question_record, write_jsonl
from rag.data.wiki_build import reference_questions

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "data/seed_repo/questions_100.json"


@pytest.fixture(scope="module")
def corpus_urls():
    with gzip.open(bundled_wiki_dir() / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        return {json.loads(line)["url"] for line in handle}


@pytest.fixture(scope="module")
def source():
    return {item["question_id"]: item for item in json.loads(SOURCE.read_text("utf-8"))["questions"]}


def pages(item):
    return [item["source_url"]] if isinstance(item["source_url"], str) else item["source_url"]


def test_reference_set_loads_by_name(corpus_urls, source):
    dataset = load_dataset({"format": "wiki", "question_sets": ["reference"]})
    questions = dataset.question_sets["reference"]
    assert len(questions) == 48 and dataset.skipped == {}
    assert len({q.qid for q in questions}) == 48
    assert all(url in corpus_urls for q in questions for group in q.gold_urls for url in group)
    for q in questions:  # each question is the source's, with every page required
        item = source[q.qid.removeprefix("reference-")]
        assert q.text == item["question"] and q.qtype == item["question_type"] and q.question_set == "reference"
        assert q.gold_urls == [[url] for url in pages(item)]  # the source URLs are already canonical
        assert q.answers == ([] if item["ground_truth"].startswith(("Comparison of", "Information from"))
                             else [item["ground_truth"]])
    assert Counter(q.qtype for q in questions) == {"factual": 40, "inferential": 4, "comparative": 2, "multi_hop": 2}
    kept = {q.qid.removeprefix("reference-") for q in questions}
    assert all(any(url not in corpus_urls for url in pages(item)) for qid, item in source.items() if qid not in kept)


def test_manifest_says_what_was_left_out(source):
    entry = json.loads((bundled_wiki_dir() / "MANIFEST.json").read_text())["reference"]
    assert (entry["questions"], entry["kept"], entry["left_out"]) == (100, 48, 52)
    assert len(source) == 100 and len(entry["missing_pages"]) == 52
    assert sum(entry["left_out_by_type"].values()) == 52
    assert entry["missing_pages"]["Q022"] == ["https://en.wikipedia.org/wiki/Acid-base_reaction"]  # a redirect


def test_rebuild_is_byte_identical(tmp_path, corpus_urls):
    kept, _ = reference_questions(json.loads(SOURCE.read_text("utf-8")), corpus_urls)
    rebuilt = write_jsonl(tmp_path / "reference.jsonl", (question_record(q) for q in kept))
    assert rebuilt.read_bytes() == (bundled_wiki_dir() / "questions" / "reference.jsonl").read_bytes()
