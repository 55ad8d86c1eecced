"""Answer metrics against SQuAD v1.1's official evaluation functions (written out here as the oracle)."""

from __future__ import annotations

import math
import re
import string
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation import answer_scores


# --- SQuAD v1.1 evaluate-v1.1.py, verbatim logic -----------------------------------------------
def squad_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def squad_f1_score(prediction, ground_truth):
    prediction_tokens = squad_normalize_answer(prediction).split()
    ground_truth_tokens = squad_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def squad_exact_match_score(prediction, ground_truth):
    return squad_normalize_answer(prediction) == squad_normalize_answer(ground_truth)


def squad_metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    return max(metric_fn(prediction, gt) for gt in ground_truths)
# -----------------------------------------------------------------------------------------------

TEXT = st.text(alphabet=st.sampled_from(list("abc the an A, .!Paris'-\u00e9 ")), max_size=30)


@settings(max_examples=300, deadline=None)
@given(prediction=TEXT, references=st.lists(TEXT, min_size=1, max_size=3))
def test_squad_mode_equals_official_script(prediction, references):
    scores = answer_scores(prediction, references)
    assert scores["f1"] == pytest.approx(squad_metric_max_over_ground_truths(squad_f1_score, prediction, references))
    assert scores["em"] == float(squad_metric_max_over_ground_truths(squad_exact_match_score, prediction, references))


def test_hand_computed_cases():
    assert answer_scores("The Eiffel Tower!", "eiffel tower") == {"em": 1.0, "f1": 1.0, "match": 1.0}
    assert answer_scores("Paris", ["London", "paris."]) == {"em": 1.0, "f1": 1.0, "match": 1.0}
    # squad: ["cat"] vs ["cat", "cat"] -> 1 common token, P 1, R 1/2 -> F1 2/3
    assert answer_scores("the the cat", "cat cat")["f1"] == pytest.approx(2 / 3)
    # seed mode keeps articles and counts token sets: {"a","cat"} vs {"cat"} -> P 1/2, R 1 -> 2/3
    assert answer_scores("a cat cat", "cat", normalization="seed")["f1"] == pytest.approx(2 / 3)
    assert answer_scores("a cat", "cat", normalization="seed")["em"] == 0.0
    scores = answer_scores("", "")  # SQuAD v1.1: no common token -> F1 0; an empty reference: match undefined
    assert (scores["em"], scores["f1"]) == (1.0, 0.0) and math.isnan(scores["match"])


@pytest.mark.parametrize("kwargs, message", [
    ({"prediction": 3, "references": "x"}, "prediction"),
    ({"prediction": "x", "references": []}, "references"),
    ({"prediction": "x", "references": [1]}, "references"),
    ({"prediction": "x", "references": "x", "normalization": "lemma"}, "normalization"),
])
def test_bad_input_raises_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        answer_scores(**kwargs)
