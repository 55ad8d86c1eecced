"""precision: int8 for the local embedder: validation, closeness to float32 on the real model and
bundled texts, embedding-store separation, and the per-run fidelity record against a numpy oracle."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from rag.encoders import SentenceTransformersEncoder
from rag.retrievers.dense import DenseParams, DenseRetriever
from rag.retrievers.precision_fidelity import fidelity_record, int8_vs_float32


@pytest.mark.parametrize("embedder", [{"precision": "int4"}, {"precision": "INT8"}, {"precision": 8}])
def test_precision_is_validated(embedder):
    with pytest.raises(ValidationError, match="precision"):
        DenseParams(embedder=embedder)


def test_int8_on_a_gpu_device_is_a_config_error():
    with pytest.raises(ValidationError, match="embedder precision int8 runs on the CPU only"):
        DenseParams(embedder={"precision": "int8"}, device="cuda")
    assert DenseParams(embedder={"precision": "int8"}, device="cpu").embedder.precision == "int8"


def test_precisions_have_distinct_store_identities_and_float32_dumps_as_before():
    float32, int8 = DenseParams(), DenseParams(embedder={"type": "sentence_transformers", "precision": "int8"})
    assert float32.identity() == "all-MiniLM-L6-v2"  # the store written before precision existed
    assert int8.identity() != float32.identity()
    assert float32.model_dump()["embedder"] == {"type": "sentence_transformers"}
    assert int8.model_dump()["embedder"]["precision"] == "int8"


def oracle_top_k(queries: np.ndarray, chunks: np.ndarray, ids: list[str], k: int) -> list[list[str]]:
    """Brute force with numpy: every dot product, sorted descending (no ties with random vectors)."""
    return [[ids[i] for i in np.argsort(-row)[:k]] for row in queries @ chunks.T]


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("noise", [0.0, 0.05, 0.3])
def test_fidelity_record_matches_a_brute_force_oracle(noise):
    rng = np.random.default_rng(7)
    ids = [f"c{i:03d}" for i in range(300)]
    chunks32, queries32 = unit(rng.normal(size=(300, 24))), unit(rng.normal(size=(40, 24)))
    chunks8 = unit(chunks32 + noise * rng.normal(size=chunks32.shape))
    queries8 = unit(queries32 + noise * rng.normal(size=queries32.shape))
    record = fidelity_record(ids, chunks8, chunks32, queries8, queries32, k=10)

    found, reference = oracle_top_k(queries8, chunks8, ids, 10), oracle_top_k(queries32, chunks32, ids, 10)
    assert record["top_k_overlap"] == pytest.approx(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, reference)]))
    assert record["identical_top_k"] == pytest.approx(np.mean([a == b for a, b in zip(found, reference)]))
    errors = [1 - float(a @ b) for a, b in zip(queries8.astype(float), queries32.astype(float))]
    assert record["query_cosine_error_mean"] == pytest.approx(np.mean(errors), abs=1e-6)
    assert record["query_cosine_error_max"] == pytest.approx(max(errors), abs=1e-6)
    assert (record["questions"], record["chunks"], record["k"]) == (40, 300, 10)
    if noise == 0.0:
        assert record["top_k_overlap"] == record["identical_top_k"] == 1.0
    if noise == 0.3:
        assert record["top_k_overlap"] < 0.9  # the record can show a loss


@pytest.fixture(scope="session")
def int8_encoder(onnx_encoder) -> SentenceTransformersEncoder:
    """The real MiniLM in int8 (exported and quantized once per session)."""
    return onnx_encoder("int8")


@pytest.mark.slow
def test_int8_vectors_are_close_to_float32_on_bundled_texts(int8_encoder, minilm, smoke_data):
    chunks, questions = smoke_data
    texts = [chunk.text for chunk in chunks[:40]] + questions[:20]
    int8 = int8_encoder.encode(texts, normalize_embeddings=True)
    float32 = minilm.encode(texts, batch_size=8, convert_to_numpy=True)
    float32 /= np.linalg.norm(float32, axis=1, keepdims=True)
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(int8.astype(float) * float32, axis=1)
    assert cosines.min() > 0.998 and np.mean(1 - cosines) < 1e-3, (cosines.min(), np.mean(1 - cosines))
    assert not np.allclose(int8, float32, atol=1e-4)  # really another computation


@pytest.mark.slow
def test_an_int8_vector_does_not_depend_on_its_batch(int8_encoder, smoke_data):
    texts = [chunk.text for chunk in smoke_data[0][:9]]
    together = int8_encoder.encode(texts, batch_size=9)
    alone = np.vstack([int8_encoder.encode([text], batch_size=1) for text in texts])
    np.testing.assert_allclose(together, alone, atol=2e-6)


@pytest.mark.slow
def test_the_store_never_serves_one_precision_for_the_other(int8_encoder, minilm, make_chunks, smoke_data, storage):
    chunks = smoke_data[0][:12]
    float32 = DenseRetriever("dense", DenseParams(search="exact"), encoder=minilm)
    float32.index(chunks, storage)
    int8 = DenseRetriever("dense", DenseParams(search="exact", embedder={"precision": "int8"}), encoder=int8_encoder)
    int8.index(chunks, storage)
    assert int8.embedder.texts_encoded == len(chunks)  # nothing read from the float32 entry
    assert int8.embedder.store.directory != float32.embedder.store.directory
    assert not np.allclose(int8.embedded()[1], float32.embedded()[1], atol=1e-4)
    again = DenseRetriever("dense", DenseParams(search="exact"), encoder=minilm)
    again.index(chunks, storage)  # float32 after int8: its own vectors, not the int8 ones
    assert np.array_equal(again.embedded()[1], float32.embedded()[1])


@pytest.mark.slow
def test_int8_vs_float32_on_a_chunk_sample(int8_encoder, minilm, smoke_data, storage):
    chunks, questions = smoke_data
    retriever = DenseRetriever("dense", DenseParams(search="exact", embedder={"precision": "int8"}), encoder=int8_encoder)
    retriever.index(chunks, storage)
    record = int8_vs_float32(retriever, {c.chunk_id: c.text for c in chunks}, questions[:15], k=5, seed=0, chunk_sample=30)
    assert (record["questions"], record["chunks"], record["k"]) == (15, 30, 5)
    assert record["top_k_overlap"] >= 0.8 and record["query_cosine_error_max"] < 0.01


@pytest.mark.slow
def test_calibration_is_deterministic_even_from_a_model_in_training_mode(smoke_data):
    """torch.onnx.export leaves a module in the mode it found, and a new wrapper Module is in
    training mode: calibrating with dropout on made every build a different model."""
    from rag.models import load_sentence_transformer, load_tokenizer, resolve_embedding_model
    from rag.ort.calibration import layer_inputs

    model = load_sentence_transformer("all-MiniLM-L6-v2", "cpu")
    tokenizer = load_tokenizer(resolve_embedding_model("all-MiniLM-L6-v2"))
    texts = [chunk.text for chunk in smoke_data[0][:6]]
    summaries = []
    for _ in range(2):
        model.train()
        summaries.append(layer_inputs(model, tokenizer, texts))
    assert not model.training
    for name, first in summaries[0].items():
        np.testing.assert_array_equal(first.peak, summaries[1][name].peak)
        np.testing.assert_array_equal(first.gram, summaries[1][name].gram)
