"""The ``cross_encoder`` reranker on a CrossEncoder built here: no cross-encoder with weights ships
with the project, so the test makes a tiny BERT (random weights from a fixed seed, a 30-word
vocabulary) and saves it to tmp_path, which exercises the loading and scoring path, not any model's
quality. Oracle: the same saved model run through transformers directly (logits, then sigmoid)."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

from rag.errors import BenchError
from rag.retrievers import IndexStorage, build_retriever
from rag.retrievers.base import RetrieverParams
from rag.runner.retrieval import CachedRanking, ServedRankings
from rag.types import Chunk

WORDS = "which is the sixth planet from sun saturn second largest espresso coffee brewed water lava ash ice".split()
TEXTS = {"saturn": "saturn is the sixth planet from the sun", "espresso": "espresso is coffee brewed from water",
         "lava": "lava and ash", "ice": "ice"}
QUESTION = "which is the sixth planet from the sun"


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tokenizer = BertTokenizer(str(path / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=5 + len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def oracle(path, question, texts):
    tokenizer, model = BertTokenizer.from_pretrained(path), BertForSequenceClassification.from_pretrained(path).eval()
    with torch.no_grad():
        logits = model(**tokenizer([question] * len(texts), texts, padding=True, return_tensors="pt")).logits[:, 0]
    return torch.sigmoid(logits).tolist()


def test_a_local_cross_encoder_orders_the_inputs_top_depth_by_its_scores(tiny_cross_encoder):
    method = build_retriever("ce", "rerank", {"input": "first", "depth": 3,
                                              "reranker": {"type": "cross_encoder", "model": str(tiny_cross_encoder),
                                                           "device": "cpu"}})
    ids = ["ice", "espresso", "saturn", "lava"]
    method.bind({"first": ServedRankings("first", RetrieverParams(), {QUESTION: CachedRanking(ids, [4, 3, 2, 1], 0.0)})})
    method.index([Chunk(i, i, f"u/{i}", text, 0, 0) for i, text in TEXTS.items()], IndexStorage.under("/nonexistent", "ce"))
    [ranking] = method.search([QUESTION], 10)
    expected = dict(zip(ids[:3], oracle(tiny_cross_encoder, QUESTION, [TEXTS[i] for i in ids[:3]])))
    assert sorted(ranking.chunk_ids) == sorted(ids[:3])  # the top 3, none added, none dropped
    assert ranking.chunk_ids == sorted(expected, key=lambda i: -expected[i])
    assert ranking.scores == pytest.approx([expected[i] for i in ranking.chunk_ids], abs=1e-6)
    assert ranking.llm_calls == 0


def test_a_path_without_a_model_is_one_line_naming_the_key(tmp_path):
    method = build_retriever("ce", "rerank", {"input": "first", "reranker": {"type": "cross_encoder", "model": str(tmp_path)}})
    method.bind({"first": ServedRankings("first", RetrieverParams(), {"q": CachedRanking(["a"], [1.0], 0.0)})})
    method.index([Chunk("a", "a", "u/a", "text", 0, 0)], IndexStorage.under("/nonexistent", "ce"))
    with pytest.raises(BenchError, match=r"^retrievers\.ce\.params\.reranker\.model: .* is not a model directory"):
        method.search(["q"], 10)
