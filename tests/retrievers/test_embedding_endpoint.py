"""Dense retrieval with embeddings from an OpenAI-compatible endpoint: the stand-in server computing
real MiniLM embeddings, compared with the local model; batching, concurrency, retries, keys."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from rag.embeddings import Embedder, EmbeddingStore
from rag.encoders import EndpointEncoder, OpenAIEmbedderConfig
from rag.errors import BenchError
from rag.retrievers import IndexStorage
from rag.retrievers.dense import DenseParams, DenseRetriever
from rag.testing import StandInServer, StandInSettings

pytestmark = pytest.mark.slow  # the real embedding model, here and in the stand-in server

FAST_BACKOFF = {"initial_s": 0.01, "max_s": 0.02}


@pytest.fixture(scope="module")
def server():
    with StandInServer(StandInSettings(retry_after="0", slow_s=2.0)) as running:
        yield running


def endpoint(base_url: str, **overrides) -> dict:
    return {"type": "openai", "base_url": base_url, "api_key_env": "RAG_TEST_NO_SUCH_VAR",
            "backoff": FAST_BACKOFF, **overrides}


def encoder(base_url: str, **overrides) -> EndpointEncoder:
    return EndpointEncoder(OpenAIEmbedderConfig(**endpoint(base_url, **overrides)), "all-MiniLM-L6-v2")


@pytest.mark.parametrize("search", ["exact", "hnsw"])
def test_endpoint_rankings_equal_the_local_models_on_the_smoke_data(server, minilm, smoke_data, tmp_path, search):
    chunks, questions = smoke_data
    remote = DenseRetriever("dense", DenseParams(search=search, batch_size=8, embedder=endpoint(server.base_url, concurrency=3)))
    remote.index(chunks, IndexStorage.under(tmp_path, "remote"))
    local = DenseRetriever("dense", DenseParams(search=search), encoder=minilm)
    local.index(chunks, IndexStorage.under(tmp_path, "local"))
    assert len(list((tmp_path / "embeddings").iterdir())) == 2  # openai:<model> is not the local identity
    remote_rankings, local_rankings = remote.search(questions, 10), local.search(questions, 10)
    assert [r.chunk_ids for r in remote_rankings] == [r.chunk_ids for r in local_rankings]
    for got, expected in zip(remote_rankings, local_rankings):
        assert got.scores == pytest.approx(expected.scores, abs=1e-5)
    direct = minilm.encode([chunk.text for chunk in chunks[:5]], normalize_embeddings=True)
    np.testing.assert_allclose(remote.embedder.embed([chunk.text for chunk in chunks[:5]]), direct, atol=1e-5)


def test_requests_of_batch_size_and_a_resumed_build_sends_only_missing_texts(server, tmp_path):
    texts = [f"text number {i} about cities and rivers" for i in range(23)]
    store = EmbeddingStore.for_model(tmp_path, "openai:all-MiniLM-L6-v2")
    before = (server.stats.embedding_requests, server.stats.texts_embedded)
    Embedder(encoder(server.base_url, concurrency=4), store, batch_size=5, texts_per_call=10).embed(texts[:12])
    assert server.stats.embedding_requests - before[0] == 2 + 1  # calls of 10 and 2 texts, 5 per request
    assert server.stats.texts_embedded - before[1] == 12
    again = Embedder(encoder(server.base_url), EmbeddingStore.for_model(tmp_path, "openai:all-MiniLM-L6-v2"), batch_size=5)
    vectors = again.embed(texts)
    assert again.texts_encoded == 11 and server.stats.texts_embedded - before[1] == 23
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_retryable_failures_are_retried(server):
    texts = ["[[faults:error_500,rate_limit_429,malformed_json,drop_connection,ok]] first", "second"]
    scripted = encoder(server.base_url, max_retries=4)
    vectors = scripted.encode(texts, batch_size=2)
    assert scripted.requests == 5 and vectors.shape == (2, 384)
    plain = encoder(server.base_url).encode(["[[faults:ok]] first", "second"], batch_size=2)
    np.testing.assert_allclose(vectors[1], plain[1], atol=1e-6)


def test_final_failure_is_one_line_naming_the_endpoint(server):
    with pytest.raises(BenchError) as caught:
        encoder(server.base_url, max_retries=1).encode(["[[faults:bad_request_400]] x"], batch_size=1)
    message = str(caught.value)
    assert server.base_url in message and "client_error" in message and "\n" not in message
    with pytest.raises(BenchError, match="server_error.*after 2 attempt"):
        encoder(server.base_url, max_retries=1).encode(["[[faults:error_503]] y"], batch_size=1)
    with pytest.raises(BenchError, match="connection"):
        encoder("http://127.0.0.1:1/v1", max_retries=0).encode(["z"])


def test_the_key_comes_from_the_environment_and_never_appears_in_errors(server, monkeypatch, caplog):
    key = "sk-planted-embedding-key-0123456789"
    monkeypatch.setenv("RAG_TEST_EMBEDDING_KEY", key)
    keyed = encoder(server.base_url, api_key_env="RAG_TEST_EMBEDDING_KEY", max_retries=1)
    with caplog.at_level(logging.INFO), pytest.raises(BenchError) as caught:
        keyed.encode(["[[faults:echo_auth_500]] secret please"], batch_size=1)
    assert "***" in str(caught.value) and key not in str(caught.value) and key not in caplog.text
    assert "api_key" not in OpenAIEmbedderConfig.model_fields


def test_stand_in_serves_float_and_base64_embeddings(server):
    import base64

    import httpx

    texts = ["Paris is the capital of France.", "Lava erupts from volcanoes."]
    answers = {
        form: httpx.post(f"{server.base_url}/embeddings", json={"model": "m", "input": texts, "encoding_format": form},
                         timeout=120).json()
        for form in ("float", "base64")
    }
    floats = np.array([item["embedding"] for item in answers["float"]["data"]], dtype=np.float32)
    decoded = np.stack([np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4") for item in answers["base64"]["data"]])
    np.testing.assert_array_equal(floats, decoded)
    assert [item["index"] for item in answers["float"]["data"]] == [0, 1] and floats.shape == (2, 384)
