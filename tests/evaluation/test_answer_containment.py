"""``match`` and ``answer_in_context``: hand-computed cases (Unicode, punctuation, word boundaries,
articles, undefined references) and properties checked against brute force."""

from __future__ import annotations

import math
import string
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation import answer_in_context, answer_in_context_at, answer_scores
from evaluation.answers import containment_form


def match(prediction, references, normalization="squad"):
    return answer_scores(prediction, references, normalization)["match"]


@pytest.mark.parametrize("prediction, references, expected", [
    # the reference said in a sentence: EM 0, match 1
    ("The capital of France is Paris.", "Paris", 1.0),
    ("It was written by William Shakespeare around 1600", ["Marlowe", "william shakespeare"], 1.0),
    # word boundaries: "1989" is not in "19890", "art" not in "party"
    ("In 19890 years", "1989", 0.0),
    ("a party", "art", 0.0),
    # token order matters: a contiguous sequence, not a bag of words
    ("Shakespeare William", "William Shakespeare", 0.0),
    # articles dropped on both sides (SQuAD): "the Nile" in "a river called Nile"
    ("a river called Nile", "the Nile", 1.0),
    # Unicode: accents folded, curly apostrophe and en dash deleted like ASCII ' and -
    ("Kurt Godels theorem", "Kurt Gödel’s theorem", 1.0),
    ("the war of 1914–1918", "1914-1918", 1.0),
    ("«Café» au lait", '"cafe"', 1.0),
    # NFKD: a fullwidth "ＰＡＲＩＳ" and the ligature "ﬁ" fold to ASCII
    ("ＰＡＲＩＳ!", "paris", 1.0),
    ("the ﬁnal answer", "final", 1.0),
    # NFD (decomposed) and NFC (composed) spellings are the same
    (unicodedata.normalize("NFD", "Zürich"), unicodedata.normalize("NFC", "Zürich"), 1.0),
    # punctuation is deleted, not turned into a space (as SQuAD): "U.S." -> "us"
    ("the U.S. army", "US Army", 1.0),
    ("no answer here", "Paris", 0.0),
])
def test_match_hand_computed(prediction, references, expected):
    assert match(prediction, references) == expected


def test_match_is_undefined_when_every_reference_normalizes_to_nothing():
    assert math.isnan(match("anything", ["The", "..."]))
    assert match("anything", ["The", "anything"]) == 1.0  # the empty reference is ignored


def test_match_seed_normalization_keeps_articles():
    assert match("a river called Nile", "the Nile", normalization="seed") == 0.0
    assert match("it is the Nile", "the Nile", normalization="seed") == 1.0


CHUNKS = [
    "Paris is the capital of France.",
    "The Berlin Wall fell on 9 November 1989, after weeks of protests.",
    "Gödel’s incompleteness theorems were published in 1931.",
]


@pytest.mark.parametrize("references, k, expected", [
    (["1989"], 1, 0.0),
    (["1989"], 2, 1.0),
    (["1989"], 10, 1.0),  # k beyond the list: all contexts
    (["Godel's incompleteness theorems"], 2, 0.0),
    (["Godel's incompleteness theorems"], 3, 1.0),
    (["9 November 1989"], 3, 1.0),
    (["November 9, 1989"], 3, 0.0),  # a different token order
    (["France Berlin"], 3, 0.0),     # never across two contexts
    (["wall fell"], 2, 1.0),
    (["all fell"], 3, 0.0),          # "wall" is not "all"
    (["the"], 3, math.nan),          # no usable reference: undefined
])
def test_answer_in_context_hand_computed(references, k, expected):
    value = answer_in_context(CHUNKS, references, k)
    assert (math.isnan(value) and math.isnan(expected)) or value == expected


def test_answer_in_context_at_vectorized():
    columns = answer_in_context_at([1.0, 3.0, math.inf, math.nan], [1, 3])
    np.testing.assert_array_equal(columns["answer_in_context@1"], [1.0, 0.0, 0.0, np.nan])
    np.testing.assert_array_equal(columns["answer_in_context@3"], [1.0, 1.0, 0.0, np.nan])


def test_string_punctuation_is_the_ascii_part_of_unicode_p_and_s():
    """The claim the containment form rests on: deleting Unicode P and S extends SQuAD's deletion."""
    ascii_p_s = "".join(chr(i) for i in range(128) if unicodedata.category(chr(i))[0] in "PS")
    assert ascii_p_s == string.punctuation


WORDS = st.sampled_from(["paris", "Paris", "the", "a", "Gödel", "godel", "1989", "19890", "x", "’s", "—"])
TEXT = st.lists(WORDS, max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(prediction=TEXT, references=st.lists(TEXT, min_size=1, max_size=3))
def test_exact_match_implies_match(prediction, references):
    """EM 1 against a reference with a non-empty form implies match 1 (empty forms are ignored)."""
    usable = [ref for ref in references if containment_form(ref)]
    if any(answer_scores(prediction, ref)["em"] == 1.0 for ref in usable):
        assert answer_scores(prediction, references)["match"] == 1.0


@settings(max_examples=300, deadline=None)
@given(contexts=st.lists(TEXT, max_size=5), references=st.lists(TEXT, min_size=1, max_size=2),
       k=st.integers(1, 6))
def test_answer_in_context_equals_brute_force_over_token_windows(contexts, references, k):
    """Oracle: slide every reference's token list over every context's token list."""
    refs = [containment_form(r).split() for r in references]
    refs = [r for r in refs if r]
    value = answer_in_context(contexts, references, k)
    if not refs:
        assert math.isnan(value)
        return
    found = any(tokens[i:i + len(ref)] == ref
                for context in contexts[:k] for tokens in [containment_form(context).split()]
                for ref in refs for i in range(len(tokens) - len(ref) + 1))
    assert value == float(found)
    assert answer_in_context(contexts, references, k + 1) >= value  # monotone in k
