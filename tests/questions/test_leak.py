"""Leak (questions naming their gold document), against hand-written cases and the bundled sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.data.questions.leak import document_names, leak, leak_share, normalize, url_name
from rag.types import Document, Question

REPO = Path(__file__).resolve().parents[2]


def _question(qid: str, text: str, *gold: str) -> Question:
    return Question(qid, text, [[url] for url in gold], [], "t")


@pytest.mark.parametrize("url, name", [
    ("https://en.wikipedia.org/wiki/Bing_Crosby", "Bing Crosby"),
    ("https://en.wikipedia.org/wiki/Caf%C3%A9_society", "Café society"),
    ("howto/git-stash.html", "git-stash"),
    ("docs/.profile", ".profile"),
    ("topics/", "topics"),
])
def test_url_name(url, name):
    assert url_name(url) == name


def test_names_are_normalized_and_qualifiers_dropped():
    assert normalize("Git-Cat-File(1) Manual") == "git cat file 1 manual"
    assert normalize("ﬁle_name") == "file name"  # NFKC folds the ligature; _ separates words
    assert document_names("git-cat-file.html", "git-cat-file(1)") == {"git cat file 1", "git cat file"}
    assert document_names("https://en.wikipedia.org/wiki/Mercury_(planet)", "Mercury (planet)") == {
        "mercury planet", "mercury"}
    assert document_names("1234", "") == frozenset()  # digits only: no name


def test_leak_by_hand():
    documents = [Document("a", "git-stash.html", "git-stash(1)", ""), Document("b", "gitglossary.html", "gitglossary(7)", ""),
                 Document("c", "https://en.wikipedia.org/wiki/Seabird", "Seabird", "")]
    questions = [
        _question("1", "What does git stash do?", "git-stash.html"),                         # page name, other punctuation
        _question("2", "Stash the changes in a dirty working directory away", "git-stash.html"),  # no name
        _question("3", "What does GIT-STASH(1) say about OPTIONS?", "git-stash.html"),        # title with section
        _question("4", "What is a seabirds' colony?", "https://en.wikipedia.org/wiki/Seabird"),  # not at a word boundary
        _question("5", "What do Seabird and git stash share?", "gitglossary.html", "https://en.wikipedia.org/wiki/Seabird"),
        _question("6", "Which glossary defines a ref?", "gitglossary.html"),
        _question("7", "What is in other.html?", "unknown/other.html"),  # gold outside the corpus: its URL name
    ]
    result = leak(questions, documents)
    assert result.leaked_ids == ("1", "3", "5", "7")
    assert result.summary() == {"questions": 7, "leaked": 4, "share": round(4 / 7, 4)}
    assert leak_share([], documents) == 0.0


def _read_set(name: str) -> list[Question]:
    questions = []
    for line in (REPO / "data/wiki/questions" / f"{name}.jsonl").read_text().splitlines():
        record = json.loads(line)
        gold = [[g] if isinstance(g, str) else g for g in record["gold_urls"]]
        questions.append(Question(record["id"], record["question"], gold, [], name))
    return questions


def test_bundled_reference_set_leak_matches_a_count_by_hand():
    # The 48 reference questions, read by hand: 15 name a gold page ("Who discovered Game theory?",
    # "How does Symphony work?", "Compare Antarctica and World War I." ...); the other 33 are
    # "What is <sentence start>?" questions about Antarctica, Photosynthesis, Olympic Games and the EU.
    questions = _read_set("reference")
    titles = {url: url.rsplit("/", 1)[-1].replace("_", " ") for q in questions for g in q.gold_urls for url in g}
    documents = [Document(url, url, title, "") for url, title in titles.items()]
    assert leak(questions, documents).leaked == 15 and len(questions) == 48
