"""Dense retrieval on the real MiniLM model and a real Chroma (local and server), and the shared
embedding store (resume after an interruption, sharing, compaction, damaged shards)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from rag.embeddings import MERGE_SHARDS_ABOVE, Embedder, EmbeddingStore
from rag.errors import ConfigError
from rag.retrievers import IndexStorage, build_retriever
from rag.retrievers.chroma_store import COMPLETE_KEY
from rag.retrievers.dense import DenseParams, DenseRetriever
from rag.runner.retrieval import build_with_marker

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
def test_obvious_nearest_neighbours_and_cosine_scores(minilm, make_chunks, storage, search):
    retriever = dense({"search": search}, minilm)
    retriever.index(make_chunks(TEXTS), storage)
    rankings = retriever.search(QUERIES, k=5)
    assert [ranking.chunk_ids[0] for ranking in rankings] == NEAREST
    ids = list(TEXTS)
    oracle = cosine_oracle(minilm, QUERIES, list(TEXTS.values()))
    for ranking, row in zip(rankings, oracle):
        assert ranking.chunk_ids == sorted(ids, key=lambda chunk_id: -row[ids.index(chunk_id)])
        assert ranking.scores == pytest.approx([row[ids.index(c)] for c in ranking.chunk_ids], abs=1e-5)


def store(root, identity="all-MiniLM-L6-v2") -> EmbeddingStore:
    return EmbeddingStore.for_model(root, identity)


def test_embedding_store_encodes_only_new_texts(counting_encoder, minilm, tmp_path):
    texts = list(TEXTS.values())
    first = Embedder(counting_encoder, store(tmp_path)).embed(texts + texts[:1])
    assert counting_encoder.texts_encoded == len(texts)  # the duplicate is encoded once
    direct = minilm.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(first[: len(texts)], direct, atol=1e-5)
    np.testing.assert_array_equal(first[-1], first[0])

    counting_encoder.calls.clear()
    again = Embedder(counting_encoder, store(tmp_path)).embed(texts)
    assert counting_encoder.calls == []
    np.testing.assert_array_equal(again, first[: len(texts)])

    changed = texts[:2] + ["A completely new sentence about rivers."] + texts[3:]
    Embedder(counting_encoder, store(tmp_path)).embed(changed)
    assert counting_encoder.texts_encoded == 1

    counting_encoder.calls.clear()  # another model identity has its own store
    Embedder(counting_encoder, store(tmp_path, "other-model")).embed(texts[:2])
    assert counting_encoder.texts_encoded == 2
    assert sorted((d / "MODEL").read_text() for d in tmp_path.iterdir()) == ["all-MiniLM-L6-v2\n", "other-model\n"]


def test_embedding_store_shared_between_processes_and_compacted(counting_encoder, tmp_path):
    texts = [f"sentence number {i} about a topic" for i in range(MERGE_SHARDS_ABOVE + 1)]
    early = Embedder(counting_encoder, store(tmp_path))  # opened before anything is stored
    writer = Embedder(counting_encoder, store(tmp_path))
    vectors = np.concatenate([writer.embed([text]) for text in texts])  # one shard per call
    counting_encoder.calls.clear()
    np.testing.assert_array_equal(early.embed(texts), vectors)
    assert counting_encoder.calls == []  # picked up the other embedder's shards
    (model_dir,) = tmp_path.iterdir()
    assert len(list(model_dir.glob("shard-*.npz"))) == len(texts)
    np.testing.assert_array_equal(Embedder(counting_encoder, store(tmp_path)).embed(texts), vectors)
    assert len(list(model_dir.glob("shard-*.npz"))) == 1 and counting_encoder.calls == []
    np.testing.assert_array_equal(early.embed(texts), vectors)  # a store opened before the merge re-indexes


def test_damaged_shard_is_deleted_and_its_texts_encoded_again(counting_encoder, tmp_path, caplog):
    texts = list(TEXTS.values())
    embedder = Embedder(counting_encoder, store(tmp_path), texts_per_call=2)
    expected = embedder.embed(texts)
    (model_dir,) = tmp_path.iterdir()
    damaged = sorted(model_dir.glob("shard-*.npz"))[0]
    with np.load(damaged) as data:
        lost = len(data["keys"])
    damaged.write_bytes(damaged.read_bytes()[:100])  # truncated
    counting_encoder.calls.clear()
    with caplog.at_level(logging.WARNING, logger="rag.embeddings"):
        again = Embedder(counting_encoder, store(tmp_path)).embed(texts)
    assert "unreadable shard" in caplog.text and counting_encoder.texts_encoded == lost
    np.testing.assert_allclose(again, expected, atol=1e-6)


class InterruptingEncoder:
    """The real model, interrupted (as by Ctrl-C) on call number ``fail_on_call``."""

    def __init__(self, model, fail_on_call: int):
        self.model, self.fail_on_call, self.calls = model, fail_on_call, 0

    def encode(self, sentences, **kwargs):
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise KeyboardInterrupt
        return self.model.encode(sentences, **kwargs)


def test_interrupted_dense_build_resumes_from_the_shards_written(minilm, counting_encoder, smoke_data, tmp_path):
    """Issue 14: a dense build interrupted part-way through the runner's index step keeps every shard
    it finished; the next build encodes only the chunks no shard holds, and gets the same index."""
    chunks, questions = smoke_data
    unique_texts = len({chunk.text for chunk in chunks})
    shard_size = 10
    assert unique_texts > 3 * shard_size  # the interruption lands part-way
    params = {"search": "exact", "shard_size": shard_size}
    index_root = tmp_path / "index"

    interrupted = dense(params, InterruptingEncoder(minilm, fail_on_call=3))
    with pytest.raises(KeyboardInterrupt):
        build_with_marker(index_root, "dense", lambda storage: interrupted.index(chunks, storage))
    assert interrupted.embedder.texts_encoded == 2 * shard_size  # two shards written, the third lost

    resumed = dense(params, counting_encoder)
    build_with_marker(index_root, "dense", lambda storage: resumed.index(chunks, storage))
    assert counting_encoder.texts_encoded == unique_texts - 2 * shard_size

    scratch = dense({"search": "exact"}, minilm)
    scratch.index(chunks, IndexStorage.under(tmp_path / "scratch", "dense"))
    for got, expected in zip(resumed.search(questions, 10), scratch.search(questions, 10)):
        assert got.chunk_ids == expected.chunk_ids
        assert got.scores == pytest.approx(expected.scores, abs=1e-6)


def test_dense_retrievers_with_one_model_share_the_embeddings(counting_encoder, make_chunks, tmp_path):
    chunks = make_chunks(TEXTS)
    dense({"search": "exact"}, counting_encoder).index(chunks, IndexStorage.under(tmp_path, "dense"))
    assert counting_encoder.texts_encoded == len(TEXTS)
    counting_encoder.calls.clear()
    other = DenseRetriever("dense_hnsw", DenseParams(search="hnsw"), encoder=counting_encoder)
    other.index(chunks, IndexStorage.under(tmp_path, "dense_hnsw"))
    assert counting_encoder.calls == []
    assert (tmp_path / "index" / "dense_hnsw" / "chroma").is_dir() and len(list((tmp_path / "embeddings").iterdir())) == 1


def test_collection_reused_rebuilt_and_interrupted_build_redone(counting_encoder, make_chunks, storage, tmp_path):
    chunks = make_chunks(TEXTS)
    first = dense({"search": "hnsw"}, counting_encoder)
    first.index(chunks, storage)
    first.search(QUERIES, 3)
    assert first.collection_rebuilt is True

    counting_encoder.calls.clear()
    second = dense({"search": "hnsw"}, counting_encoder)
    second.index(chunks, storage)
    assert second.collection_rebuilt is False
    assert second.search(QUERIES, 3) == first.search(QUERIES, 3)
    assert counting_encoder.calls == []  # corpus and queries both came from the cache

    changed = make_chunks({**TEXTS, "cats": "Dogs are loyal domesticated animals."})
    third = dense({"search": "hnsw"}, counting_encoder)
    third.index(changed, storage)
    assert third.collection_rebuilt is True and counting_encoder.texts_encoded == 1
    assert third.store.client.get_settings().persist_directory == str(tmp_path / "chroma")
    (collection,) = third.store.client.list_collections()  # the stale collection was deleted
    assert collection.count() == len(TEXTS)

    collection.modify(metadata={COMPLETE_KEY: False})  # as if the build had been interrupted
    fourth = dense({"search": "hnsw"}, counting_encoder)
    fourth.index(changed, storage)
    assert fourth.collection_rebuilt is True


def test_server_mode_against_a_real_chroma_server(chroma_server, minilm, make_chunks, storage, tmp_path):
    host, port = chroma_server
    params = {"mode": "server", "host": host, "port": port, "hnsw": {"construction_ef": 50, "search_ef": 50, "M": 8}}
    chunks = make_chunks(TEXTS)
    server = dense(params, minilm)
    server.index(chunks, storage)
    exact = dense({"search": "exact"}, minilm)
    exact.index(chunks, storage)
    for found, expected in zip(server.search(QUERIES, 3), exact.search(QUERIES, 3)):
        assert found.chunk_ids == expected.chunk_ids
        assert found.scores == pytest.approx(expected.scores, abs=1e-12)
    again = dense(params, minilm)
    again.index(chunks, storage)
    assert again.collection_rebuilt is False
    assert not (tmp_path / "chroma").exists()  # nothing stored locally in server mode


def test_unreachable_server_is_a_clear_error(minilm, make_chunks, storage):
    from rag.errors import BenchError

    retriever = dense({"mode": "server", "port": 1}, minilm)
    with pytest.raises(BenchError, match="Chroma server at 127.0.0.1:1"):
        retriever.index(make_chunks(TEXTS), storage)


def test_dense_params_from_config():
    retriever = build_retriever("dense", "dense", {"search": "exact", "hnsw": {"M": 32}})
    assert retriever.params.hnsw.M == 32 and retriever.params.model == "all-MiniLM-L6-v2"
    assert retriever.params.identity() == "all-MiniLM-L6-v2"
    endpoint = build_retriever("dense", "dense", {"model": "m", "embedder": {"type": "openai", "base_url": "http://127.0.0.1:1/v1"}})
    assert endpoint.params.identity() == "openai:m"


def test_remote_embeddings_endpoint_without_its_key_is_refused_before_any_request(monkeypatch):
    monkeypatch.delenv("RAG_TEST_EMBED_KEY", raising=False)
    with pytest.raises(ConfigError, match="RAG_TEST_EMBED_KEY is not set") as error:
        build_retriever("dense", "dense", {"model": "m", "embedder": {
            "type": "openai", "base_url": "http://embeddings.example:1/v1", "api_key_env": "RAG_TEST_EMBED_KEY"}})
    assert error.value.key == "embedder.api_key_env"


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"embedder": {"type": "openai", "base_url": "not-a-url"}}, "retrievers.dense.params.embedder.base_url"),
        ({"embedder": {"type": "tei"}}, "retrievers.dense.params.embedder"),
        ({"embedder": {"type": "openai", "base_url": "http://h/v1"}, "device": "cpu"}, "retrievers.dense.params"),
        ({"shard_size": 0}, "retrievers.dense.params.shard_size"),
    ],
)
def test_bad_embedder_params_name_their_key(params, key):
    with pytest.raises(ConfigError) as error:
        build_retriever("dense", "dense", params)
    assert error.value.key == key
