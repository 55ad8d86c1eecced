"""scripts/question_designs.py: the offline designs measured for validity (docs/data.md, "Validity"),
on the bundled Wikipedia smoke corpus (real article summaries); expected questions written by hand
from the articles' sentences."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "question_designs.py"


@pytest.fixture(scope="module")
def designs():
    return runpy.run_path(str(SCRIPT))


@pytest.fixture(scope="module")
def smoke_sets(tmp_path_factory):
    out = tmp_path_factory.mktemp("designs")
    argv = sys.argv
    sys.argv = [str(SCRIPT), "smoke", str(out)]
    try:
        with pytest.raises(SystemExit) as exit_:
            runpy.run_path(str(SCRIPT), run_name="__main__")
    finally:
        sys.argv = argv
    assert exit_.value.code == 0
    return {path.stem: [json.loads(line) for line in path.read_text().splitlines()] for path in out.glob("*.jsonl")}


def test_lead_questions_ask_for_the_document_by_its_first_sentence(smoke_sets):
    lead = {r["gold_urls"][0][0].rsplit("/", 1)[1]: r for r in smoke_sets["lead"]}
    # "The Brooklyn Bridge is a cable-stayed suspension bridge in New York City, spanning the East River ..."
    assert lead["Brooklyn_Bridge"]["question"] == "What is the name of the cable-stayed suspension bridge in New York City?"
    assert lead["Brooklyn_Bridge"]["answers"] == ["Brooklyn Bridge"]
    for record in smoke_sets["lead"]:  # the title is the answer, never in the question
        assert record["answers"][0].casefold() not in record["question"].casefold()


def test_a_mention_in_another_article_asks_for_the_named_article(smoke_sets):
    # Tencent's summary: "It is also the world's largest company in the video game industry based on its
    # equity investments." -> gold Video_game, made from Tencent
    (record,) = [r for r in smoke_sets["gmention"] if r["gold_urls"] == [["https://en.wikipedia.org/wiki/Video_game"]]]
    assert record["question"] == ("It is also the world's largest company in the what industry based on its "
                                  "equity investments?")
    assert record["source_url"] == "https://en.wikipedia.org/wiki/Tencent"


def test_truncated_cuts_after_k_content_words_at_a_function_word(designs):
    truncated = designs["truncated"]
    assert truncated("What annotates each line in the given file with information from the revision?", 4) == \
        "What annotates each line in the given file?"
    # "What is the name of" does not count; a participle is not left dangling
    assert truncated("What is the name of the 1958 debut novel by Nigerian author Chinua?", 3) == \
        "What is the name of the 1958 debut novel?"
    # after the 4th ("using", a participle) the next function word comes only at the end: nothing is cut
    assert truncated("What command updates the index using the current content found?", 4) == \
        "What command updates the index using the current content found?"


def test_description_is_what_another_author_calls_the_title(designs):
    description = designs["_description"]
    assert description("He admired the Bohemian-Austrian poet Rainer Maria Rilke.", "Rainer Maria Rilke") == \
        "Bohemian-Austrian poet"
    assert description("It was written by Aristotle, a Greek philosopher, in Athens.", "Aristotle") == "Greek philosopher"
    # part of a longer name ("the Greek Aristotle University"), or one content word: no description
    assert description("She studied at the ancient Greek Aristotle University.", "Aristotle") is None
    assert description("It was seen by the poet Homer.", "Homer") is None
