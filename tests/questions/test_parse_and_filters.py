"""Reply parsing, the filters and the lexical-bias formula, against hand-computed cases."""

from __future__ import annotations

import pytest

from rag.data.questions.filters import (
    Candidate, QuestionFilter, answer_supported, jaccard, lexical_bias, lexical_overlap, rejection,
)
from rag.data.questions.leak import document_names
from rag.data.questions.llm import matches
from rag.data.questions.parse import ParsedQuestion, ParseFailure, parse_reply


@pytest.mark.parametrize("reply, question, answer", [
    ("Question: Who built it?\nAnswer: John Roebling", "Who built it?", "John Roebling"),
    ("**Question:** Who built it?\n**Answer:** John Roebling", "Who built it?", "John Roebling"),
    ("Q: Who built it?\nA: \"John Roebling\"", "Who built it?", "John Roebling"),
    ("1. Question: Who built it?\n2. Answer: John Roebling.\nExtra prose.", "Who built it?", "John Roebling."),
    ("Question:\nWho built it?\nAnswer:\nJohn Roebling", "Who built it?", "John Roebling"),
    ('{"question": "Who built it?", "answer": "John Roebling"}', "Who built it?", "John Roebling"),
    ('Sure!\n```json\n{"Question": "When did it open?", "Answer": 1883}\n```', "When did it open?", "1883"),
    ('Here it is: {"q": "Who built it?", "a": "Roebling"} hope it helps', "Who built it?", "Roebling"),
    ("Who built it?\nJohn Roebling", "Who built it?", "John Roebling"),
    ("Answer: John Roebling\nQuestion: Who built it?", "Who built it?", "John Roebling"),  # answer first
    # a name in a code span is a name, not emphasis (the delimiters of **bold** go)
    ("**Question:** When is `__init__()` called?\n**Answer:** when a `Dog` is *created*",
     "When is __init__() called?", "when a Dog is created"),
])
def test_replies_in_every_accepted_shape_are_read(reply, question, answer):
    parsed = parse_reply(reply)
    assert isinstance(parsed, ParsedQuestion)
    assert (parsed.question, parsed.answer) == (question, answer)


@pytest.mark.parametrize("reply, reason", [
    (None, "empty"), ("   \n ", "empty"),
    ("I'm sorry, but I cannot write questions about this.", "refusal"),
    ("As an AI language model, I can't do that.", "refusal"),
    ("Question: Who built it?", "no_answer"),
    ("Question: Who built it?\nAnswer:", "no_answer"),
    ("Who built it?", "no_answer"),
    ("The bridge is very long.", "no_question"),
    ('{"question": "Who built it?"}', "no_answer"),
    ("Question:\nAnswer: x", "no_question"),
])
def test_unreadable_replies_fail_with_their_reason(reply, reason):
    assert parse_reply(reply) == ParseFailure(reason)


def _candidate(question: str, answer: str, chunk: str = "The Brooklyn Bridge was designed by John Roebling in 1867.") -> Candidate:
    return Candidate(question, answer, "d#0", "u", chunk, "llm")


@pytest.mark.parametrize("question, answer, reason", [
    ("Who designed the Brooklyn Bridge", "John Roebling", "not_a_question"),
    ("Who designed?", "John Roebling", "question_length"),
    (" ".join(["word"] * 40) + " now?", "John Roebling", "question_length"),
    ("Who designed the Brooklyn Bridge?", " ".join(["John"] * 13), "answer_length"),
    ("Who designed the bridge in the text?", "John Roebling", "refers_to_source"),
    ("According to the passage, who designed it?", "John Roebling", "refers_to_source"),
    ("Was John Roebling the designer of it?", "john roebling", "answer_in_question"),
    ("Who painted the Brooklyn Bridge?", "Pablo Picasso", "answer_unsupported"),
    ("Who designed the Brooklyn Bridge?", "John Roebling", None),
    ("When was the Brooklyn Bridge designed?", "in 1867", None),
])
def test_each_filter_removes_its_case(question, answer, reason):
    assert rejection(_candidate(question, answer)) == reason


def test_a_question_naming_its_gold_document_is_removed():
    names = document_names("https://en.wikipedia.org/wiki/Brooklyn_Bridge", "Brooklyn Bridge")
    named = Candidate("Who designed the brooklyn-bridge?", "John Roebling", "d#0", "u", "John Roebling designed it.",
                      "llm", gold_names=names)
    unnamed = Candidate("Who designed the bridge over the East River?", "John Roebling", "d#0", "u",
                        "John Roebling designed it.", "llm", gold_names=names)
    assert rejection(named) == "names_gold_document" and rejection(unnamed) is None


@pytest.mark.parametrize("reply, answer, expected", [
    ("John Roebling", "John Roebling", True),
    ("It was designed by John A. Roebling in 1867.", "John Roebling", True),   # contained: SQuAD drops the article "A"
    ("The answer is: the bridge was designed by John Roebling.", "John Roebling", True),  # contained
    ("Washington Roebling", "John Roebling", True),                            # F1 0.5 (1 of 2, 1 of 2)
    ("Emily Warren", "John Roebling", False),
    ("", "John Roebling", False),
    (None, "John Roebling", False),
])
def test_round_trip_match_by_hand(reply, answer, expected):
    assert matches(reply, answer) is expected


def test_answer_support_by_containment_or_content_word_share():
    chunk = "Marie Curie, née Skłodowska, won the Nobel Prize in Physics in 1903."
    assert answer_supported("the nobel prize in physics", chunk)          # contained after normalization
    assert answer_supported("Curie nee", chunk)                             # accents folded (é -> e)
    assert answer_supported("Nobel Prize, Physics, 1903, Curie, chemistry", chunk)  # 4 of 5 content words = 0.8
    assert not answer_supported("Nobel Prize, chemistry, 1911", chunk)     # 2 of 4 content words
    assert not answer_supported("Nob", chunk)                               # not at a token boundary


def test_lexical_overlap_is_the_share_of_question_content_words_in_the_chunk():
    # content words of the question: designed, eiffel, tower, paris (who/the/in are stop words);
    # in the chunk: eiffel, tower, paris -> 3 / 4
    assert lexical_overlap("Who designed the Eiffel Tower in Paris?", "The Eiffel Tower stands in Paris.") == 0.75
    assert lexical_overlap("What is it?", "anything") == 0.0  # no content words at all
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)


def test_lexical_bias_summary_by_hand():
    summary = lexical_bias([0.0, 0.5, 1.0, 1.0])
    assert summary["mean"] == 0.625
    # inclusive quartiles of 0, .5, 1, 1: positions 0.75, 1.5, 2.25 -> 0.375, 0.75, 1.0
    assert (summary["p25"], summary["median"], summary["p75"]) == (0.375, 0.75, 1.0)
    assert summary["all_words_copied"] == 0.5
    assert summary["histogram"] == {"[0, 0.2)": 1, "[0.2, 0.4)": 0, "[0.4, 0.6)": 1, "[0.6, 0.8)": 0, "[0.8, 1)": 0, "1": 2}


def test_near_duplicates_are_removed_and_every_removal_is_counted():
    kept = QuestionFilter()
    results = [kept.keep(_candidate(q, a)) for q, a in (
        ("Who designed the Brooklyn Bridge?", "John Roebling"),
        ("Who designed Brooklyn Bridge?", "John Roebling"),             # same content words: Jaccard 1
        ("Who designed the Brooklyn Bridge cables?", "John Roebling"),  # 3 shared of 4: Jaccard 0.75 < 0.8
        ("Who painted the Brooklyn Bridge?", "Pablo Picasso"),          # not in the chunk
    )]
    assert results == [True, False, True, False]
    table = {row["filter"]: (row["in"], row["removed"]) for row in kept.table()}
    assert table["answer_unsupported"] == (4, 1) and table["near_duplicate"] == (3, 1)
    assert table["not_a_question"] == (4, 0)


def test_a_fact_asked_the_other_way_round_is_a_near_duplicate():
    chunk = ("Python 2.1 was released by the PSF. Zope Corporation is a sponsoring member of the PSF "
             "(Python's license page)")
    kept = QuestionFilter()
    results = [kept.keep(Candidate(q, a, "license.html#0", "license.html", chunk, kind)) for q, a, kind in (
        ("What is the name of the sponsoring member of the PSF?", "Zope Corporation", "known_item"),
        ("What is Zope Corporation?", "a sponsoring member of the PSF", "definition"),  # the same fact, reversed
        ("Who released Python 2.1?", "the PSF", "known_item"),  # its answer is in the first question, not the reverse
    )]
    assert results == [True, False, True]
