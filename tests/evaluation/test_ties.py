"""Tie-aware metrics (ties="expected") against brute force: every order of every tie group is
enumerated, ranked with the id rule, evaluated with ties="id" and averaged; plus hand-computed
cases, runs without ties, ties_crossing and the exact hitting probability of gold groups."""

from __future__ import annotations

import math
from itertools import combinations, permutations, product

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evaluation import evaluate_run, ties_crossing
from evaluation.ties import probability_all_met

NAMES = ["p", "recall", "f1", "hit", "mrr", "map", "ndcg", "complete"]
IDS = [f"d{i}" for i in range(9)]
# Few values, so many ties; 0.8 and 0.80000003 are equal in float32 (a tie), 0.8000001 is not.
SCORES = st.sampled_from([0.0, 1.0, 2.0, 0.8, 0.80000003, 0.8000001, -1.0])


def tie_groups(scores: dict[str, float]) -> list[list[str]]:
    """The ids grouped by float32 score, best group first (written here, independently)."""
    by_score: dict[float, list[str]] = {}
    for doc_id, score in scores.items():
        by_score.setdefault(float(np.float32(score)), []).append(doc_id)
    return [by_score[score] for score in sorted(by_score, reverse=True)]


def orders(scores: dict[str, float]) -> list[list[str]]:
    """Every ranked list obtained by ordering each tie group in every possible way."""
    return [[doc_id for group in choice for doc_id in group]
            for choice in product(*(permutations(group) for group in tie_groups(scores)))]


def brute_force(qrels: dict, run: dict, metrics: list[str]) -> dict[str, dict[str, float]]:
    """Per query and metric, the mean over all tie orders of the ties="id" value of that order."""
    pseudo_qrels, pseudo_run, owner = {}, {}, {}
    for qid in qrels:
        for n, order in enumerate(orders(run.get(qid, {})) if qid in run else [None]):
            pseudo = f"{qid}#{n}"
            pseudo_qrels[pseudo] = qrels[qid]
            if order is not None:
                pseudo_run[pseudo] = {doc_id: float(len(order) - i) for i, doc_id in enumerate(order)}
            owner[pseudo] = qid
    table = evaluate_run(pseudo_qrels, pseudo_run, metrics, ties="id")
    return table.groupby(table.index.map(owner)).mean().to_dict("index")


@st.composite
def tied_qrels_and_runs(draw):
    qrels, run = {}, {}
    for q in range(draw(st.integers(1, 3))):
        qid = f"q{q}"
        if draw(st.booleans()):
            qrels[qid] = draw(st.dictionaries(st.sampled_from(IDS), st.integers(-1, 3), max_size=6))
        else:
            qrels[qid] = draw(st.lists(st.lists(st.sampled_from(IDS), min_size=1, max_size=3), min_size=1, max_size=3))
        if draw(st.integers(0, 5)):
            run[qid] = draw(st.dictionaries(st.sampled_from(IDS), SCORES, max_size=6))
    return qrels, run


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tied_qrels_and_runs(), k=st.integers(1, 8))
def test_expected_equals_the_mean_over_every_tie_order(data, k):
    qrels, run = data
    metrics = [f"{name}@{k}" for name in NAMES] + NAMES
    expected = evaluate_run(qrels, run, metrics, ties="expected")
    reference = brute_force(qrels, run, metrics)
    for qid in qrels:
        for metric in metrics:
            ours, theirs = expected.loc[qid, metric], reference[qid][metric]
            assert (math.isnan(ours) and math.isnan(theirs)) or math.isclose(ours, theirs, abs_tol=1e-9), \
                f"{qid} {metric}: expected {ours} != brute force {theirs}"


def test_one_large_tie_group_against_brute_force():
    qrels = {"q": {"d1": 3, "d4": 1, "d6": 2, "d8": 0}, "g": [["d1", "d2"], ["d5"], ["d7", "d0"]]}
    scores = {doc_id: 1.0 for doc_id in IDS[:8]} | {"d8": 2.0}
    run = {"q": scores, "g": scores}
    metrics = [f"{name}@{k}" for name in NAMES for k in (1, 3, 6)] + NAMES
    expected = evaluate_run(qrels, run, metrics, ties="expected")
    reference = brute_force(qrels, run, metrics)
    for qid in qrels:
        for metric in metrics:
            assert math.isclose(expected.loc[qid, metric], reference[qid][metric], abs_tol=1e-9), (qid, metric)


@settings(max_examples=60, deadline=None)
@given(qrels=st.dictionaries(st.sampled_from(IDS), st.integers(-1, 3), max_size=8),
       scores=st.lists(st.floats(-10, 10, allow_nan=False), min_size=0, max_size=9, unique=True),
       k=st.integers(1, 12))
def test_without_ties_both_rules_agree(qrels, scores, k):
    run = {"q": {doc_id: score for doc_id, score in zip(IDS, scores)}}
    assume(len({np.float32(s) for s in scores}) == len(scores))  # distinct in float64 may tie in float32
    metrics = [f"{name}@{k}" for name in NAMES] + NAMES
    by_id = evaluate_run({"q": qrels}, run, metrics)
    expected = evaluate_run({"q": qrels}, run, metrics, ties="expected")
    np.testing.assert_allclose(expected.to_numpy(), by_id.to_numpy(), rtol=0, atol=1e-12)


def test_hand_computed_three_way_tie():
    # a, b, c tied; b relevant: its rank is 1, 2 or 3 with probability 1/3 each.
    table = evaluate_run({"q": {"b": 1}}, {"q": {"a": 1.0, "b": 1.0, "c": 1.0}},
                         ["mrr", "p@1", "hit@1", "recall@2", "f1@2", "ndcg@2", "map", "complete@2"], ties="expected")
    row = table.loc["q"]
    assert row["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert row["p@1"] == pytest.approx(1 / 3) and row["hit@1"] == pytest.approx(1 / 3)
    assert row["recall@2"] == pytest.approx(2 / 3) and row["complete@2"] == pytest.approx(2 / 3)
    assert row["f1@2"] == pytest.approx(2 * (2 / 3) / (2 + 1))
    assert row["ndcg@2"] == pytest.approx((1 + 1 / math.log2(3)) / 3)
    assert row["map"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert evaluate_run({"q": {"b": 1}}, {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}, ["mrr"]).loc["q", "mrr"] == 0.5


def test_hand_computed_groups_in_a_tie():
    # 4 tied ids; complete@2 needs c and one of a, b: {a,c}, {b,c} of the 6 pairs.
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "x": 1.0}}
    table = evaluate_run({"q": [["a", "b"], ["c"]]}, run, ["complete@2", "complete@3", "complete@1"], ties="expected")
    assert table.loc["q"].tolist() == [pytest.approx(2 / 6), pytest.approx(3 / 4), 0.0]
    # "a" alone above the tie meets the first group; c must take the one free place of the three.
    run = {"q": {"a": 2.0, "b": 1.0, "c": 1.0, "x": 1.0}}
    assert evaluate_run({"q": [["a", "b"], ["c"]]}, run, ["complete@2"], ties="expected").loc["q", "complete@2"] \
        == pytest.approx(1 / 3)


def test_document_level_ties_documents_by_their_best_chunk():
    chunk_to_doc = {"c1": "A", "c2": "A", "c3": "B", "c4": "C"}
    run = {"q": {"c1": 0.9, "c2": 0.5, "c3": 0.9, "c4": 0.1}}  # A and B tie at 0.9
    table = evaluate_run({"q": ["B"]}, run, ["mrr"], level="document", chunk_to_doc=chunk_to_doc, ties="expected")
    assert table.loc["q", "mrr"] == pytest.approx((1 + 1 / 2) / 2)
    assert table.attrs == {"convention": "trec", "level": "document", "ties": "expected"}


def test_bad_tie_rule_and_autorag():
    with pytest.raises(ValueError, match="ties"):
        evaluate_run({"q": ["a"]}, {"q": {"a": 1.0}}, ["mrr"], ties="random")
    with pytest.raises(ValueError, match="trec convention only"):
        evaluate_run({"q": ["a"]}, {"q": {"a": 1.0}}, ["mrr"], convention="autorag", ties="expected")


@settings(max_examples=80, deadline=None)
@given(scores=st.lists(SCORES, max_size=7), cutoffs=st.lists(st.integers(1, 9), min_size=1, max_size=3))
def test_ties_crossing_is_a_top_k_that_depends_on_the_order(scores, cutoffs):
    run = {"q": dict(zip(IDS, scores))}
    varies = any(len({frozenset(order[:k]) for order in orders(run["q"])}) > 1 for k in cutoffs)
    assert ties_crossing(run, cutoffs) == {"q": varies}


def test_ties_crossing_hand_computed():
    run = {"q1": {"a": 2.0, "b": 1.0, "c": 1.0}, "q2": {"a": 1.0, "b": 1.0}, "q3": {}}
    assert ties_crossing(run, [1]) == {"q1": False, "q2": True, "q3": False}
    assert ties_crossing(run, [2]) == {"q1": True, "q2": False, "q3": False}


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 8), data=st.data())
def test_probability_all_met_equals_counting_subsets(n, data):
    m = data.draw(st.integers(0, n))
    sets = data.draw(st.lists(st.frozensets(st.integers(0, n - 1), min_size=1), max_size=4))
    subsets = list(combinations(range(n), m))
    count = sum(all(s & set(subset) for s in sets) for subset in subsets)
    assert probability_all_met(n, m, sets) == pytest.approx(count / len(subsets), abs=1e-12)
