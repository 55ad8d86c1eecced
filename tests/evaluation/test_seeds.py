"""Every worked example of the three seed documents (shared/seeds), in both conventions where they apply.
Expected values are the seeds' printed numbers (and docs/evaluation.md's corrections)."""

from __future__ import annotations

import math

import pytest

from evaluation import answer_scores, evaluate_run, retrieval_scores
from evaluation.answers import token_overlap

SEED001_GT = [["test-1", "test-2"], ["test-3"]]
SEED001_RESULT = ["test-1", "pred-1", "test-2", "pred-3"]


def test_seed001_autorag_convention():
    scores = retrieval_scores(SEED001_GT, SEED001_RESULT, convention="autorag")
    assert scores["precision"] == pytest.approx(2 / 4)
    assert scores["recall"] == pytest.approx(1 / 2)
    assert scores["f1"] == pytest.approx(0.5)
    assert scores["mrr"] == pytest.approx((1 + 0) / 2)
    assert scores["map"] == pytest.approx((5 / 6 + 0) / 2)  # the seed's "MRR = 1/2" under MAP is a typo
    idcg = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert scores["ndcg"] == pytest.approx(1.5 / idcg, abs=1e-15)
    assert scores["ndcg"] == pytest.approx(0.7039180890341347, abs=1e-15)


def test_seed001_trec_convention():
    scores = retrieval_scores(SEED001_GT, SEED001_RESULT, convention="trec")
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["mrr"] == 1.0
    assert scores["precision"] == pytest.approx(0.5)
    assert scores["map"] == pytest.approx((1 + 2 / 3) / 3)


SEED004 = [  # (retrieved, ground truth, precision@5, recall@5)
    (["chunk_01", "chunk_04", "chunk_03", "chunk_02", "chunk_12"], {"chunk_12": 3}, 0.2, 1.0),
    (["chunk_07", "chunk_05", "chunk_11", "chunk_02", "chunk_08"], {"chunk_11": 3}, 0.2, 1.0),
    (["chunk_10", "chunk_07", "chunk_04", "chunk_01", "chunk_05"], {"chunk_10": 3, "chunk_04": 2}, 0.4, 1.0),
]


@pytest.mark.parametrize("convention", ["trec", "autorag"])
@pytest.mark.parametrize("retrieved, truth, precision, recall", SEED004)
def test_seed004_precision_recall_at_5(retrieved, truth, precision, recall, convention):
    scores = retrieval_scores(truth, retrieved, k=5, convention=convention)
    assert scores["precision"] == pytest.approx(precision)
    assert scores["recall"] == pytest.approx(recall)


@pytest.mark.parametrize("convention", ["trec", "autorag"])
def test_seed003_mrr_over_four_queries(convention):
    # Relevant URL at ranks 1, 3, 2 and not found: MRR = (1 + 1/3 + 1/2 + 0) / 4 = 0.458.
    qrels = {f"q{i}": ["url_rel"] for i in range(4)}
    lists = [["url_rel", "x1", "x2"], ["x1", "x2", "url_rel"], ["x1", "url_rel"], ["x1", "x2", "x3"]]
    run = {f"q{i}": {doc: float(10 - rank) for rank, doc in enumerate(ids)} for i, ids in enumerate(lists)}
    table = evaluate_run(qrels, run, ["mrr"], convention=convention)
    assert table["mrr"].tolist() == pytest.approx([1, 1 / 3, 1 / 2, 0])
    assert round(table["mrr"].mean(), 3) == 0.458


@pytest.mark.parametrize("convention", ["trec", "autorag"])
def test_seed003_recall_at_10(convention):
    retrieved = ["url_A", "url_C", "url_D", "url_E"]
    assert retrieval_scores(["url_A", "url_B"], retrieved, k=10, convention=convention)["recall"] == 0.5


def test_seed003_answer_f1_seed_and_squad_modes():
    generated, reference = "The capital of France is Paris", "Paris is the capital city of France"
    seed = token_overlap(generated, reference, "seed")
    assert (seed.precision, round(seed.recall, 3), round(seed.f1, 3)) == (1.0, 0.857, 0.923)
    assert answer_scores(generated, reference, normalization="seed")["f1"] == pytest.approx(12 / 13)
    assert answer_scores(generated, reference)["f1"] == pytest.approx(10 / 11)  # 0.909
    assert round(answer_scores(generated, reference)["f1"], 3) == 0.909
