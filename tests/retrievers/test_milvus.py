"""Milvus (milvus-lite, the real engine in a local file) as the dense retriever's vector store, and its
engine-native BM25 and hybrid search, on the smoke data with the real MiniLM model.

Oracles: brute-force cosine (numpy) for the dense store; a hand-written BM25 with the formula and
tokenizer Milvus documents for milvus_bm25; for the engine's RRFRanker and WeightedRanker, our own
fusion code (rag.retrievers.fusion) fed the engine's own dense and BM25 lists."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("pymilvus")

from rag.errors import ConfigError  # noqa: E402
from rag.retrievers import build_retriever  # noqa: E402
from rag.retrievers.dense import DenseParams, DenseRetriever  # noqa: E402
from rag.retrievers.fusion import CombSumParams, CombSumRetriever, RRFParams, RRFRetriever  # noqa: E402
from rag.retrievers.milvus_store import COMPLETE_KEY  # noqa: E402
from rag.types import Ranking  # noqa: E402

pytestmark = pytest.mark.slow  # loads the real embedding model
DEPTH = 20


def milvus_dense(minilm, **store) -> DenseRetriever:
    return DenseRetriever("dense", DenseParams(store={"type": "milvus", **store}), encoder=minilm)


@pytest.mark.parametrize("index, params, search_params", [
    ("FLAT", {}, {}),
    ("IVF_FLAT", {"nlist": 4}, {"nprobe": 128}),  # every list probed: exact
    ("HNSW", {"M": 16, "efConstruction": 200}, {"ef": 200}),
])
def test_dense_store_matches_exact_search(minilm, smoke_data, storage, index, params, search_params) -> None:
    chunks, questions = smoke_data
    retriever = milvus_dense(minilm, index=index, params=params, search_params=search_params)
    retriever.index(chunks, storage)
    assert (storage.own / "milvus.db").exists()  # the relative uri lives in the retriever's own directory
    found = retriever.search(questions, 10)
    exact = retriever.search_exact(questions, 10)
    # brute force with numpy only: the same top-10 sets as the engine's candidates
    ids, vectors = retriever.embedded()
    query_vectors = retriever.embed_queries(questions).astype(np.float64)
    for ranking, reference, row in zip(found, exact, query_vectors @ vectors.astype(np.float64).T):
        assert ranking.chunk_ids == reference.chunk_ids
        assert set(ranking.chunk_ids) == {ids[i] for i in np.argsort(-row)[:10]}


def test_dense_collection_reused_and_interrupted_build_redone(minilm, smoke_data, storage) -> None:
    chunks, questions = smoke_data
    first = milvus_dense(minilm, index="FLAT")
    first.index(chunks, storage)
    assert first.collection_rebuilt is True
    before = first.search(questions[:3], 5)
    first.store.client.close()
    again = milvus_dense(minilm, index="FLAT")
    again.index(chunks, storage)
    assert again.collection_rebuilt is False
    assert again.search(questions[:3], 5) == before
    again.store.client.alter_collection_properties(again.store.name, {COMPLETE_KEY: "0"})  # as if interrupted
    again.store.client.close()
    third = milvus_dense(minilm, index="FLAT")
    third.index(chunks, storage)
    assert third.collection_rebuilt is True


@pytest.mark.parametrize("params, key, problem", [
    ({"store": {"type": "milvus"}, "hnsw": {"M": 8}}, "retrievers.d.params", "hnsw configure the Chroma store"),
    ({"store": {"type": "qdrant"}}, "retrievers.d.params.store", "qdrant"),
    ({"store": {"type": "milvus", "uri": "data/milvus"}}, "retrievers.d.params.store.uri", "ending in .db"),
    ({"store": {"type": "milvus", "index": "DISKANN"}}, "retrievers.d.params.store.index", "FLAT"),
])
def test_bad_store_settings_name_their_key(params, key, problem) -> None:
    with pytest.raises(ConfigError) as caught:
        build_retriever("d", "dense", params)
    assert caught.value.key == key and problem in str(caught.value)


def milvus_bm25_oracle(texts: dict[str, str], query: str, k1: float, b: float) -> dict[str, float]:
    """BM25 as Milvus documents it: tokens \\w+ lower-cased (the standard analyzer), idf =
    ln(1 + (N - df + 0.5) / (df + 0.5)), tf saturation with k1 and b over avgdl; each distinct query
    term counted once per occurrence in the query."""
    tokens = {chunk_id: re.findall(r"\w+", text.lower()) for chunk_id, text in texts.items()}
    n = len(tokens)
    avgdl = sum(map(len, tokens.values())) / n
    df = Counter(term for words in tokens.values() for term in set(words))
    scores = {}
    for chunk_id, words in tokens.items():
        tf = Counter(words)
        score = 0.0
        for term, weight in Counter(re.findall(r"\w+", query.lower())).items():
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += weight * idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(words) / avgdl))
        if score > 0:
            scores[chunk_id] = score
    return scores


def test_milvus_bm25_against_the_documented_formula(smoke_data, storage) -> None:
    chunks, questions = smoke_data
    retriever = build_retriever("milvus_bm25", "milvus_bm25", {"k1": 1.5, "b": 0.6})
    retriever.index(chunks, storage)
    texts = {chunk.chunk_id: chunk.text for chunk in chunks}
    for question, ranking in zip(questions, retriever.search(questions, 10)):
        oracle = milvus_bm25_oracle(texts, question, 1.5, 0.6)
        assert ranking.scores == pytest.approx([oracle[c] for c in ranking.chunk_ids], rel=1e-5)
        best = sorted(oracle.values(), reverse=True)[:10]
        assert ranking.scores == pytest.approx(best, rel=1e-5)


@pytest.fixture(scope="module")
def hybrid_setup(minilm, smoke_data, tmp_path_factory):
    from rag.retrievers import IndexStorage

    chunks, questions = smoke_data
    root = tmp_path_factory.mktemp("hybrid")
    dense = DenseRetriever("dense", DenseParams(search="exact"), encoder=minilm)
    dense.index(chunks, IndexStorage(root / "dense", root / "embeddings"))
    hybrids = {}
    for ranker, extra in (("rrf", {"k": 60}), ("weighted", {"weights": [0.7, 0.3]})):
        hybrid = build_retriever(f"h_{ranker}", "milvus_hybrid",
                                 {"dense": "dense", "ranker": ranker, "depth": DEPTH,
                                  "store": {"type": "milvus", "index": "FLAT"}, **extra})
        hybrid.bind({"dense": dense})
        hybrid.index(chunks, IndexStorage(root / ranker, root / "embeddings"))
        hybrids[ranker] = hybrid
    return dense, hybrids, questions


def engine_lists(hybrid, dense, question: str) -> list[Ranking]:
    """The engine's own dense and BM25 top-DEPTH lists for one question (the hybrid search's inputs)."""
    collection = hybrid.collection
    vector = dense.embed_queries([question])
    (dense_hits,) = collection.search(collection.dense_request(vector, DEPTH))
    (bm25_hits,) = collection.search(collection.bm25_request([question], DEPTH))
    return [Ranking([c for c, _ in hits], [s for _, s in hits]) for hits in (dense_hits, bm25_hits)]


def milvus_normalized(lists: list[Ranking]) -> list[Ranking]:
    """WeightedRanker's score normalizations as Milvus documents them (norm_score, the default):
    COSINE (1 + s) / 2 for the dense route, 2 arctan(s) / pi for the BM25 route."""
    dense, bm25 = lists
    return [Ranking(dense.chunk_ids, [(1 + s) / 2 for s in dense.scores]),
            Ranking(bm25.chunk_ids, [2 * math.atan(s) / math.pi for s in bm25.scores])]


@pytest.mark.parametrize("ranker", ["rrf", "weighted"])
def test_our_fusion_reproduces_the_engine_ranker(hybrid_setup, ranker) -> None:
    """The engine's hybrid search against our fusion code fed the engine's own dense and BM25 lists
    (top-DEPTH each): RRFRanker(60) is our rrf (k 60, ranks from 1, weights 1); WeightedRanker(0.7,
    0.3) is our combsum with weights [0.7, 0.3] and no normalization of its own (a chunk absent from
    a route gets nothing from it) over the routes' Milvus-normalized scores. Not our convex: Milvus
    normalizes by a fixed map per metric, not by the list's min and max. Tolerance 1e-6 absolute on
    the fused scores (both float32); ids compared through their scores, since equal scores may be
    cut or ordered differently."""
    dense, hybrids, questions = hybrid_setup
    if ranker == "rrf":
        ours = RRFRetriever("rrf", RRFParams(retrievers=["d", "s"], k=60))
        inputs = lambda lists: lists  # noqa: E731
    else:
        ours = CombSumRetriever("combsum", CombSumParams(retrievers=["d", "s"], weights=[0.7, 0.3], normalization="none"))
        inputs = milvus_normalized
    engine = hybrids[ranker].search(questions, 10)
    for question, fused in zip(questions, engine):
        expected = ours.fuse(inputs(engine_lists(hybrids[ranker], dense, question)), ours.weights())
        assert len(fused.chunk_ids) == min(10, len(expected))
        for chunk_id, score in zip(fused.chunk_ids, fused.scores):
            assert score == pytest.approx(expected[chunk_id], abs=1e-6)
        assert fused.scores == pytest.approx(sorted(expected.values(), reverse=True)[:10], abs=1e-6)


def test_no_server_traceback_is_logged(smoke_data, storage, caplog) -> None:
    """milvus-lite's in-process server logs an unimplemented AllocTimestamp, with a traceback, on
    every call; that one record is dropped, so a run prints no traceback."""
    import logging

    chunks, questions = smoke_data
    with caplog.at_level(logging.WARNING):
        retriever = build_retriever("quiet", "milvus_bm25", {})
        retriever.index(chunks, storage)
        retriever.search(questions[:2], 5)
    assert not [record for record in caplog.records if record.name.startswith("grpc")]


def test_server_token_comes_from_the_environment_and_is_redacted(monkeypatch, tmp_path) -> None:
    """``api_key_env`` names the variable (a token in its place is refused without echoing it); the
    run's one redactor knows the value, whatever the variable is called."""
    from rag.config import load_config
    from rag.secrets import Redactor

    with pytest.raises(ConfigError) as caught:
        load_config("milvus", ["retrievers.dense.params.store={type: milvus, uri: 'http://h:19530', api_key_env: 'root:Milvus'}"])
    assert caught.value.key == "retrievers.dense.params.store.api_key_env" and "root:Milvus" not in str(caught.value)
    monkeypatch.setenv("MILVUS_AUTH", "root:a-long-password")
    config = load_config("milvus", ["retrievers.dense.params.store={type: milvus, uri: 'http://h:19530', api_key_env: MILVUS_AUTH}"])
    assert Redactor.for_config(config).text("connect root:a-long-password") == "connect [REDACTED]"
