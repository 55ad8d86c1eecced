"""The committed data set (data/wiki, data/smoke) and the seeded question generators."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from rag.data import bundled_wiki_dir, load_dataset, wiki_url
from rag.data.questions.wiki import QUESTION_GENERATORS, allocate, description_phrase
from rag.text.sentences import split_sentences
from rag.data.wiki_build import smoke_subset

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wiki():
    return load_dataset({"format": "wiki"})


def test_bundled_corpus(wiki):
    assert len(wiki.documents) == 10033 and wiki.skipped == {}
    for document in wiki.documents:
        assert document.url == wiki_url(document.title) and document.doc_id == document.title.replace(" ", "_")
        assert document.text.strip() and document.metadata["topic"]
    assert len(Counter(d.metadata["topic"] for d in wiki.documents)) == 12
    license_text = (bundled_wiki_dir() / "LICENSE.md").read_text()
    assert "CC BY-SA 4.0" in license_text and "creativecommons.org/licenses/by-sa/4.0" in license_text


def test_question_sets(wiki):
    sets = wiki.question_sets
    assert len(sets["seed_style"]) >= 500 and len(sets["known_item"]) >= 500 and len(sets["multi_doc"]) >= 300
    by_url = {d.url: d for d in wiki.documents}
    for name, questions in sets.items():
        assert len({q.qid for q in questions}) == len(questions) == len({q.text for q in questions})
        assert all(q.qtype == name and q.question_set == name and q.answers for q in questions)
    for q in sets["known_item"]:
        (url,), = q.gold_urls
        document = by_url[url]
        assert q.answers == [document.title]
        assert document.title.casefold() not in q.text.casefold()
        assert len(document.metadata["description"].split()) >= 4
    descriptions = Counter(d.metadata["description"].casefold() for d in wiki.documents)
    assert all(descriptions[by_url[q.gold_urls[0][0]].metadata["description"].casefold()] == 1 for q in sets["known_item"])
    for q in sets["multi_doc"]:
        (a,), (b,) = q.gold_urls
        assert a != b and by_url[a].metadata["topic"] == by_url[b].metadata["topic"]


def test_seed_style_mimics_reference(wiki):
    questions = wiki.question_sets["seed_style"]
    by_url = {d.url: d for d in wiki.documents}
    kinds = Counter(q.metadata["seed_type"] for q in questions)
    assert kinds == {"factual": 354, "inferential": 66, "comparative": 90, "multi_hop": 90}  # 59/11/15/15 per 100
    sentence_questions = [q for q in questions if q.metadata["template"] == "What is {words}?"]
    assert len(sentence_questions) == 240
    for q in sentence_questions:
        (sentence,) = q.answers
        assert q.text == f"What is {' '.join(sentence.split()[:3])}?"
        assert sentence in split_sentences(by_url[q.gold_urls[0][0]].text)
    assert all(len(q.gold_urls) == 2 for q in questions if q.metadata["seed_type"] in ("comparative", "multi_hop"))


def test_smoke_files_load_and_cover_all_types():
    dataset = load_dataset({"format": "jsonl", "corpus": "data/smoke/corpus.jsonl",
                            "questions": {"smoke": "data/smoke/questions.jsonl"}}, base_dir=REPO)
    assert 35 <= len(dataset.documents) <= 50
    assert Counter(q.qtype for q in dataset.question_sets["smoke"]) == {"seed_style": 10, "known_item": 10, "multi_doc": 10}


@pytest.fixture(scope="module")
def small_corpus(wiki):
    return wiki.documents[::25]  # 402 documents across all topics


@pytest.mark.parametrize("name, count", [("seed_style", 40), ("known_item", 40), ("multi_doc", 15)])
def test_generators_are_deterministic_and_seeded(small_corpus, name, count):
    generate = QUESTION_GENERATORS[name]
    first, again = generate(small_corpus, count, 7), generate(list(reversed(small_corpus)), count, 7)
    assert [(q.qid, q.text, q.gold_urls, q.answers) for q in first] == [(q.qid, q.text, q.gold_urls, q.answers) for q in again]
    other = generate(small_corpus, count, 8)
    assert [q.text for q in first] != [q.text for q in other]
    assert len(first) == count


def _fingerprint_in_subprocess(hash_seed: str) -> str:
    code = ("import hashlib; from rag.data import load_dataset; from rag.data.questions.wiki import QUESTION_GENERATORS as G;"
            "docs = load_dataset({'format': 'wiki', 'question_sets': ['known_item']}).documents[::50];"
            "print(hashlib.sha256(repr([(q.text, q.gold_urls) for n in G for q in G[n](docs, 10, 1)]).encode()).hexdigest())")
    env = {"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=REPO).stdout


def test_generators_do_not_depend_on_hash_randomization():
    assert _fingerprint_in_subprocess("1") == _fingerprint_in_subprocess("2")


def test_smoke_subset_is_deterministic(small_corpus):
    sets = {name: QUESTION_GENERATORS[name](small_corpus, 12, 3) for name in ("seed_style", "known_item", "multi_doc")}
    docs_a, questions_a = smoke_subset(small_corpus, sets, seed=3, per_set=4, n_documents=20)
    docs_b, questions_b = smoke_subset(small_corpus, sets, seed=3, per_set=4, n_documents=20)
    assert docs_a == docs_b and questions_a == questions_b and len(questions_a) == 12
    urls = {d.url for d in docs_a}
    assert all(url in urls for q in questions_a for group in q.gold_urls for url in group)


def test_allocate_and_description_phrase():
    assert allocate(600, [40, 19, 11, 15, 15]) == [240, 114, 66, 90, 90]
    assert allocate(7, [1, 1, 1]) == [3, 2, 2] and sum(allocate(101, [40, 19, 11, 15, 15])) == 101
    votes = Counter({"painting": 5, "american": -9})
    assert description_phrase("Painting by Georges Seurat.", votes) == "painting by Georges Seurat"
    assert description_phrase("American singer (1935–1977)", votes) == "American singer (1935–1977)"
    assert description_phrase("A 1968 film by Stanley Kubrick", votes) == "1968 film by Stanley Kubrick"


def test_manifest_records_seed_and_source():
    manifest = json.loads((bundled_wiki_dir() / "MANIFEST.json").read_text())
    assert manifest["seed"] == 3 and manifest["documents"] == 10033
    assert len(json.loads((REPO / "data/seed_repo/fixed_urls.json").read_text())["urls"]) == 200
