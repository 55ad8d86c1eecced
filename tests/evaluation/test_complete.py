"""complete@k (every gold group has a relevant id in the top k): hand-computed cases, pytrec_eval's
recall (flat qrels: complete@k = 1 iff recall@k = 1) and an oracle written here (groups)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation import evaluate_run, parse_metric, retrieval_scores


def test_parse_metric_knows_complete():
    assert parse_metric("complete@10").column == "complete@10"
    assert parse_metric("complete").k is None


@pytest.mark.parametrize("convention", ["trec", "autorag"])
def test_groups_hand_computed(convention):
    truth = [["a", "a2"], ["b"]]
    ranked = ["x", "a2", "y", "b", "a"]  # group 1 found at rank 2 (a2), group 2 at rank 4
    expected = {1: 0.0, 2: 0.0, 3: 0.0, 4: 1.0, 5: 1.0, None: 1.0}
    for k, value in expected.items():
        assert retrieval_scores(truth, ranked, k=k, convention=convention)["complete"] == value, k
    assert retrieval_scores(truth, ["a", "a2", "x"], convention=convention)["complete"] == 0.0


@pytest.mark.parametrize("convention", ["trec", "autorag"])
def test_flat_and_graded_need_every_relevant_id(convention):
    assert retrieval_scores(["a", "b"], ["a", "x", "b"], k=2, convention=convention)["complete"] == 0.0
    assert retrieval_scores(["a", "b"], ["a", "x", "b"], k=3, convention=convention)["complete"] == 1.0
    graded = {"a": 2, "b": 1, "n": 0, "m": -1}  # grades <= 0 are not gold groups
    assert retrieval_scores(graded, ["b", "a"], k=2, convention=convention)["complete"] == 1.0
    assert retrieval_scores(graded, ["b", "n", "a"], k=2, convention=convention)["complete"] == 0.0


def test_evaluate_run_rows_overlapping_groups_and_undefined():
    qrels = {"q1": [["a", "b"], ["b", "c"]], "q2": [["a", "b"], ["c"]], "q3": ["z"], "q4": {"n": 0}}
    run = {"q1": {"b": 2.0, "x": 1.0}, "q2": {"a": 3.0, "b": 2.0, "c": 1.0}, "q4": {"n": 1.0}}
    table = evaluate_run(qrels, run, ["complete@1", "complete@2", "complete"])
    assert table.loc["q1"].tolist() == [1.0, 1.0, 1.0]  # "b" is in both groups
    assert table.loc["q2"].tolist() == [0.0, 0.0, 1.0]
    assert table.loc["q3"].tolist() == [0.0, 0.0, 0.0]  # missing from the run: 0, as trec_eval -c
    assert table.loc["q4"].isna().all()  # no relevant id: undefined


def test_trec_empty_group_is_an_error():
    with pytest.raises(ValueError, match=r"qrels\['q'\]\[1\].*empty"):
        evaluate_run({"q": [["a"], []]}, {"q": {"a": 1.0}}, ["complete"])


IDS = st.sampled_from([f"d{i}" for i in range(12)])
SCORES = st.sampled_from([0.0, 0.5, 1.0, 2.0, 0.8, 0.80000003, -1.0])


def oracle_order(scores: dict[str, float]) -> list[str]:
    """trec_eval's order, written independently: float32 score descending, doc id descending."""
    return sorted(scores, key=lambda d: (float(np.float32(scores[d])), d), reverse=True)


@st.composite
def group_qrels_and_run(draw):
    qrels, run = {}, {}
    for q in range(draw(st.integers(1, 4))):
        groups = draw(st.lists(st.lists(IDS, min_size=1, max_size=3), min_size=1, max_size=4))
        qrels[f"q{q}"] = groups
        if draw(st.booleans()):
            run[f"q{q}"] = draw(st.dictionaries(IDS, SCORES, max_size=12))
    return qrels, run


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=group_qrels_and_run(), k=st.integers(1, 14))
def test_groups_equal_an_independent_oracle_in_both_conventions(data, k):
    qrels, run = data
    for convention in ("trec", "autorag"):
        table = evaluate_run(qrels, run, [f"complete@{k}", "complete"], convention=convention)
        for qid, groups in qrels.items():
            ranked = oracle_order(run.get(qid, {}))
            for column, top in ((f"complete@{k}", set(ranked[:k])), ("complete", set(ranked))):
                expected = float(all(any(doc_id in top for doc_id in group) for group in groups))
                assert table.loc[qid, column] == expected, (convention, qid, column)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=st.dictionaries(st.sampled_from(["q0", "q1", "q2"]),
                             st.dictionaries(IDS, st.integers(-1, 3), min_size=1, max_size=6), min_size=1),
       runs=st.lists(st.dictionaries(IDS, SCORES, max_size=12), min_size=3, max_size=3),
       k=st.integers(1, 14))
def test_flat_complete_is_pytrec_eval_recall_one(qrels, runs, k):
    # Only queries with a relevant id go to pytrec_eval (see test_trec_properties.py).
    qrels = {qid: judged for qid, judged in qrels.items() if any(grade > 0 for grade in judged.values())}
    run = {qid: scores for qid, scores in zip(["q0", "q1", "q2"], runs) if qid in qrels}
    if not qrels:
        return
    reference = pytrec_eval.RelevanceEvaluator(qrels, {f"recall.{k}"}).evaluate(run)
    table = evaluate_run(qrels, run, [f"complete@{k}"])
    for qid in qrels:
        recall = reference[qid][f"recall_{k}"] if qid in reference else 0.0
        assert table.loc[qid, f"complete@{k}"] == float(math.isclose(recall, 1.0)), qid
