"""Edge cases and bad input of retrieval_scores / evaluate_run, with hand-computed expectations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from evaluation import compare_methods, evaluate_run, retrieval_scores, to_document_ranking, to_document_run

KEYS = {"precision", "recall", "f1", "hit", "mrr", "map", "ndcg", "complete"}


@pytest.mark.parametrize("convention", ["trec", "autorag"])
def test_empty_retrieved_list_scores_zero(convention):
    scores = retrieval_scores(["a"], [], k=5, convention=convention)
    assert set(scores) == KEYS and all(value == 0.0 for value in scores.values())


@pytest.mark.parametrize("convention", ["trec", "autorag"])
@pytest.mark.parametrize("truth", [[], {}, {"a": 0, "b": -1}])
def test_empty_ground_truth_is_undefined(truth, convention):
    assert retrieval_scores(truth, ["a", "b"], convention=convention) == dict.fromkeys(KEYS)


# AutoRAG (autorag/schema/metricinput.py, MetricInput.is_fields_notnone via the autorag_metric
# decorator): retrieval_gt fails when it, a group or an id is empty, or an id is only white space;
# every metric of that query is then None.
@pytest.mark.parametrize("truth", [[[]], [["a"], []], [""], [["a", ""]], [["a"], [" "]], ["\t"], {"": 1}])
def test_autorag_blank_ground_truth_is_undefined(truth):
    assert retrieval_scores(truth, ["a", "b"], k=2, convention="autorag") == dict.fromkeys(KEYS)


def test_autorag_blank_ground_truth_is_left_out_of_means_and_counted():
    qrels = {"q1": [["a"]], "q2": [["b"], []], "q3": [["", "c"]]}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}, "q3": {"c": 1.0}}
    table = evaluate_run(qrels, run, ["recall", "mrr"], convention="autorag")
    assert table.loc["q1"].tolist() == [1.0, 1.0]
    assert table.loc[["q2", "q3"]].isna().all().all()
    long = pd.concat([table.assign(method=name) for name in ("x", "y")]).reset_index()
    summary, _ = compare_methods(long, "recall")
    assert summary["n"].tolist() == [1, 1] and summary["n_undefined"].tolist() == [2, 2]


def test_trec_keeps_empty_groups_an_error_and_blank_ids_as_ids():
    with pytest.raises(ValueError, match=r"ground_truth\[1\].*empty"):
        retrieval_scores([["a"], []], ["a"])
    assert retrieval_scores([""], ["", "a"])["mrr"] == 1.0  # trec_eval has no notion of a blank id


@pytest.mark.parametrize("convention", ["trec", "autorag"])
def test_duplicates_count_once_at_their_best_rank(convention):
    assert (retrieval_scores(["a", "b"], ["a", "a", "x", "b"], convention=convention)
            == retrieval_scores(["a", "b"], ["a", "x", "b"], convention=convention))


def test_k_larger_than_the_list():
    scores = retrieval_scores({"a": 2, "b": 1}, ["x", "a"], k=10)
    assert scores["precision"] == pytest.approx(1 / 10)  # trec P_k divides by k
    assert scores["recall"] == pytest.approx(1 / 2)
    assert scores["ndcg"] == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert retrieval_scores({"a": 2, "b": 1}, ["x", "a"], k=10, convention="autorag")["precision"] == 0.5


def test_graded_ndcg_and_cutoffs_hand_computed():
    truth, ranked = {"a": 3, "b": 2, "c": 0}, ["c", "b", "x", "a"]
    dcg = 2 / math.log2(3) + 3 / math.log2(5)
    assert retrieval_scores(truth, ranked)["ndcg"] == pytest.approx(dcg / (3 + 2 / math.log2(3)))
    at2 = retrieval_scores(truth, ranked, k=2)
    assert at2["ndcg"] == pytest.approx((2 / math.log2(3)) / (3 + 2 / math.log2(3)))
    assert at2["map"] == pytest.approx((1 / 2) / 2) and at2["mrr"] == 0.5 and at2["hit"] == 1.0
    assert retrieval_scores(truth, ranked, k=1) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "hit": 0.0,
                                                     "mrr": 0.0, "map": 0.0, "ndcg": 0.0, "complete": 0.0}


def test_unicode_ids_and_numpy_arrays():
    truth = np.array(["日本", "é"])
    ranked = np.array(["x", "é", "日本"])
    scores = retrieval_scores(truth, ranked)
    assert scores["recall"] == 1.0 and scores["mrr"] == 0.5
    assert retrieval_scores(list(truth), list(ranked)) == scores
    assert retrieval_scores(["é"], ranked, k=np.int64(2))["hit"] == 1.0


def test_autorag_hand_computed_groups():
    # groups {a, b} and {c}; ranked c, x, b, a -> group 1 hits at 3, 4; group 2 at 1
    scores = retrieval_scores([["a", "b"], ["c"]], ["c", "x", "b", "a"], convention="autorag")
    assert scores["recall"] == 1.0 and scores["precision"] == 0.75
    assert scores["mrr"] == pytest.approx((1 / 3 + 1) / 2)
    assert scores["map"] == pytest.approx(((1 / 3 + 2 / 4) / 2 + 1) / 2)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert scores["ndcg"] == pytest.approx((1 + 1 / math.log2(4) + 1 / math.log2(5)) / ideal)


@pytest.mark.parametrize("truth, retrieved, k, message", [
    (["a"], ["a"], -1, "cut-off"),
    (["a"], ["a"], 0, "cut-off"),
    (["a"], ["a"], 2.5, "cut-off"),
    (["a"], ["a"], True, "cut-off"),
    ("a", ["a"], None, "ground_truth"),
    ([1, 2], ["a"], None, "ground_truth.*strings"),
    ({"a": "high"}, ["a"], None, "grade"),
    ({"a": float("nan")}, ["a"], None, "grade"),
    ([["a"], []], ["a"], None, "empty"),
    (["a"], "a", None, "retrieved"),
    (["a"], {"a", "b"}, None, "ordered"),
    (["a"], [1], None, r"retrieved\[0\]"),
    (["a"], np.zeros((2, 2)), None, "1-D"),
])
def test_bad_input_raises_clear_value_error(truth, retrieved, k, message):
    with pytest.raises(ValueError, match=message):
        retrieval_scores(truth, retrieved, k=k)


def test_unknown_convention():
    with pytest.raises(ValueError, match="convention"):
        retrieval_scores(["a"], ["a"], convention="beir")


@pytest.mark.parametrize("qrels, run, metrics, message", [
    ({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ndcg@x"], "cut-off"),
    ({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ndcg@0"], "cut-off"),
    ({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["bleu"], "unknown name"),
    ({"q": {"a": 1}}, {"q": {"a": 1.0}}, [], "at least one"),
    ({"q": {"a": 1}}, {"q": {"a": "high"}}, ["mrr"], "run"),
    ({"q": {"a": 1}}, {"q": {"a": float("nan")}}, ["mrr"], r"run\['q'\]\['a'\]"),
    ({"q": {"a": 1}}, {"q": ["a"]}, ["mrr"], r"run\['q'\]"),
    ({"q": {"a": "x"}}, {"q": {"a": 1.0}}, ["mrr"], r"qrels\['q'\]\['a'\]"),
    ({"q": {1: 1}}, {"q": {"a": 1.0}}, ["mrr"], "strings"),
    ([("q", "a")], {"q": {"a": 1.0}}, ["mrr"], "qrels"),
])
def test_evaluate_run_bad_input(qrels, run, metrics, message):
    with pytest.raises(ValueError, match=message):
        evaluate_run(qrels, run, metrics)


def test_evaluate_run_shapes_rows_and_aliases():
    qrels = {"q1": {"a": 1}, "q2": [["b", "c"]], "q3": ["z"], "q0": {"n": 0}}
    run = {"q1": {"a": 0.1, "x": 0.9}, "q2": {"c": 1.0}, "q9": {"a": 1.0}}
    table = evaluate_run(qrels, run, ["precision@2", "success@1", "mrr", "MRR"])
    assert isinstance(table, pd.DataFrame) and table.index.name == "qid"
    assert list(table.columns) == ["p@2", "hit@1", "mrr"]
    assert list(table.index) == ["q1", "q2", "q3", "q0", "q9"]
    assert table.loc["q1"].tolist() == [0.5, 0.0, 0.5]
    assert table.loc["q2"].tolist() == [0.5, 1.0, 1.0]
    assert table.loc["q3"].tolist() == [0.0, 0.0, 0.0]  # missing from the run: scored 0, not skipped
    assert table.loc[["q0", "q9"]].isna().all().all()  # no relevant id: undefined
    assert table.attrs == {"convention": "trec", "level": "chunk", "ties": "id"}


def test_ties_are_broken_by_doc_id_descending():
    table = evaluate_run({"q": {"b": 1}}, {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}, ["mrr"])
    assert table["mrr"].iloc[0] == 0.5  # order c, b, a


def test_document_level_keeps_first_occurrence():
    chunk_to_doc = {"c1": "A", "c2": "B", "c3": "A", "c4": "C"}
    assert to_document_ranking(["c3", "c2", "c1", "c4"], chunk_to_doc) == ["A", "B", "C"]
    run = {"q": {"c1": 0.2, "c2": 0.9, "c3": 0.8, "c4": 0.8}}  # c4 > c3 on the tie: C before A
    assert list(to_document_run(run, chunk_to_doc)["q"]) == ["B", "C", "A"]
    table = evaluate_run({"q": {"A": 1}}, run, ["mrr", "p@3"], level="document", chunk_to_doc=chunk_to_doc)
    assert table.loc["q"].tolist() == [pytest.approx(1 / 3), pytest.approx(1 / 3)]
    chunk_level = evaluate_run({"q": {"c3": 1}}, run, ["mrr"])
    assert chunk_level.loc["q", "mrr"] == pytest.approx(1 / 3)


def test_document_level_needs_a_complete_mapping():
    with pytest.raises(ValueError, match="chunk_to_doc"):
        evaluate_run({"q": ["A"]}, {"q": {"c1": 1.0}}, ["mrr"], level="document")
    with pytest.raises(ValueError, match="'c9'"):
        evaluate_run({"q": ["A"]}, {"q": {"c9": 1.0}}, ["mrr"], level="document", chunk_to_doc={"c1": "A"})
    with pytest.raises(ValueError, match="level"):
        evaluate_run({"q": ["A"]}, {"q": {"c1": 1.0}}, ["mrr"], level="url")


def test_autorag_run_equals_single_query_scores():
    qrels = {"q": [["a", "b"], ["c"]]}
    run = {"q": {"a": 3.0, "x": 2.0, "b": 1.0}}
    table = evaluate_run(qrels, run, ["map", "mrr@1", "ndcg"], convention="autorag")
    single = retrieval_scores(qrels["q"], ["a", "x", "b"], convention="autorag")
    assert table.loc["q", "map"] == pytest.approx(single["map"])
    assert table.loc["q", "mrr@1"] == pytest.approx(0.5)
    assert table.loc["q", "ndcg"] == pytest.approx(single["ndcg"])
