"""Dense retrieval on the real MiniLM model and a real Chroma (local and server), and the embedding cache."""

from __future__ import annotations

import numpy as np
import pytest

from rag.embeddings import MERGE_SHARDS_ABOVE, Embedder
from rag.retrievers import build_retriever
from rag.retrievers.chroma_store import COMPLETE_KEY
from rag.retrievers.dense import DenseRetriever, DenseParams

pytestmark = pytest.mark.slow  # loads the real embedding model

TEXTS = {
    "paris": "Paris is the capital and largest city of France.",
    "tokyo": "Tokyo is the capital of Japan and its most populous city.",
    "cats": "Cats are small domesticated carnivorous mammals kept as pets.",
    "python": "Python is a high-level general-purpose programming language.",
    "volcano": "A volcano is a rupture in the crust where lava and ash escape.",
}
QUERIES = ["Which city is the capital of Japan?", "kitten", "writing code in a scripting language", "lava eruption"]
NEAREST = ["tokyo", "cats", "python", "volcano"]


def dense(params: dict, encoder) -> DenseRetriever:
    return DenseRetriever("dense", DenseParams(**params), encoder=encoder)


def cosine_oracle(minilm, queries, texts):
    """Cosine similarities computed directly with the model and numpy (no project code)."""
    q = minilm.encode(queries, convert_to_numpy=True)
    d = minilm.encode(texts, convert_to_numpy=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return q @ d.T


@pytest.mark.parametrize("search", ["exact", "hnsw"])
def test_obvious_nearest_neighbours_and_cosine_scores(minilm, make_chunks, tmp_path, search):
    retriever = dense({"search": search}, minilm)
    retriever.index(make_chunks(TEXTS), tmp_path)
    rankings = retriever.search(QUERIES, k=5)
    assert [ranking.chunk_ids[0] for ranking in rankings] == NEAREST
    ids = list(TEXTS)
    oracle = cosine_oracle(minilm, QUERIES, list(TEXTS.values()))
    for ranking, row in zip(rankings, oracle):
        assert ranking.chunk_ids == sorted(ids, key=lambda chunk_id: -row[ids.index(chunk_id)])
        assert ranking.scores == pytest.approx([row[ids.index(c)] for c in ranking.chunk_ids], abs=1e-5)


def test_embedding_cache_encodes_only_new_texts(counting_encoder, minilm, tmp_path):
    texts = list(TEXTS.values())
    first = Embedder(counting_encoder, "all-MiniLM-L6-v2", cache_dir=tmp_path).embed(texts + texts[:1])
    assert counting_encoder.texts_encoded == len(texts)  # the duplicate is encoded once
    direct = minilm.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(first[: len(texts)], direct, atol=1e-5)
    np.testing.assert_array_equal(first[-1], first[0])

    counting_encoder.calls.clear()
    again = Embedder(counting_encoder, "all-MiniLM-L6-v2", cache_dir=tmp_path).embed(texts)
    assert counting_encoder.calls == []
    np.testing.assert_array_equal(again, first[: len(texts)])

    changed = texts[:2] + ["A completely new sentence about rivers."] + texts[3:]
    Embedder(counting_encoder, "all-MiniLM-L6-v2", cache_dir=tmp_path).embed(changed)
    assert counting_encoder.texts_encoded == 1

    counting_encoder.calls.clear()  # another model identity has its own cache
    Embedder(counting_encoder, "other-model", cache_dir=tmp_path).embed(texts[:2])
    assert counting_encoder.texts_encoded == 2


def test_embedding_cache_shared_between_embedders_and_compacted(counting_encoder, tmp_path):
    texts = [f"sentence number {i} about a topic" for i in range(MERGE_SHARDS_ABOVE + 1)]
    early = Embedder(counting_encoder, "m", cache_dir=tmp_path)  # opened before anything is cached
    writer = Embedder(counting_encoder, "m", cache_dir=tmp_path)
    vectors = np.concatenate([writer.embed([text]) for text in texts])  # one shard per call
    counting_encoder.calls.clear()
    np.testing.assert_array_equal(early.embed(texts), vectors)
    assert counting_encoder.calls == []  # picked up the other embedder's shards
    (model_dir,) = tmp_path.iterdir()
    assert len(list(model_dir.glob("shard-*.npz"))) == len(texts)
    np.testing.assert_array_equal(Embedder(counting_encoder, "m", cache_dir=tmp_path).embed(texts), vectors)
    assert len(list(model_dir.glob("shard-*.npz"))) == 1 and counting_encoder.calls == []


def test_collection_reused_rebuilt_and_interrupted_build_redone(counting_encoder, make_chunks, tmp_path):
    chunks = make_chunks(TEXTS)
    first = dense({}, counting_encoder)
    first.index(chunks, tmp_path)
    first.search(QUERIES, 3)
    assert first.collection_rebuilt is True

    counting_encoder.calls.clear()
    second = dense({}, counting_encoder)
    second.index(chunks, tmp_path)
    assert second.collection_rebuilt is False
    assert second.search(QUERIES, 3) == first.search(QUERIES, 3)
    assert counting_encoder.calls == []  # corpus and queries both came from the cache

    changed = make_chunks({**TEXTS, "cats": "Dogs are loyal domesticated animals."})
    third = dense({}, counting_encoder)
    third.index(changed, tmp_path)
    assert third.collection_rebuilt is True and counting_encoder.texts_encoded == 1
    assert third.store.client.get_settings().persist_directory == str(tmp_path / "chroma")
    (collection,) = third.store.client.list_collections()  # the stale collection was deleted
    assert collection.count() == len(TEXTS)

    collection.modify(metadata={COMPLETE_KEY: False})  # as if the build had been interrupted
    fourth = dense({}, counting_encoder)
    fourth.index(changed, tmp_path)
    assert fourth.collection_rebuilt is True


def test_server_mode_against_a_real_chroma_server(chroma_server, minilm, make_chunks, tmp_path):
    host, port = chroma_server
    params = {"mode": "server", "host": host, "port": port, "hnsw": {"construction_ef": 50, "search_ef": 50, "M": 8}}
    chunks = make_chunks(TEXTS)
    server = dense(params, minilm)
    server.index(chunks, tmp_path)
    exact = dense({"search": "exact"}, minilm)
    exact.index(chunks, tmp_path)
    for found, expected in zip(server.search(QUERIES, 3), exact.search(QUERIES, 3)):
        assert found.chunk_ids == expected.chunk_ids
        assert found.scores == pytest.approx(expected.scores, abs=1e-12)
    again = dense(params, minilm)
    again.index(chunks, tmp_path)
    assert again.collection_rebuilt is False
    assert not (tmp_path / "chroma").exists()  # nothing stored locally in server mode


def test_unreachable_server_is_a_clear_error(minilm, make_chunks, tmp_path):
    from rag.errors import BenchError

    retriever = dense({"mode": "server", "port": 1}, minilm)
    with pytest.raises(BenchError, match="Chroma server at 127.0.0.1:1"):
        retriever.index(make_chunks(TEXTS), tmp_path)


def test_dense_params_from_config():
    retriever = build_retriever("dense", "dense", {"search": "exact", "hnsw": {"M": 32}})
    assert retriever.params.hnsw.M == 32 and retriever.params.model == "all-MiniLM-L6-v2"
