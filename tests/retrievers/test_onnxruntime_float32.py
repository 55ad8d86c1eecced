"""runtime: onnxruntime for the local embedder at float32: validation, the same vectors as the PyTorch
model on bundled texts (the oracle: sentence-transformers itself), and one store identity with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from rag.retrievers.dense import DenseParams, DenseRetriever


@pytest.mark.parametrize("runtime", ["onnx", "ONNXRUNTIME", "torch", 1])
def test_runtime_is_validated(runtime):
    with pytest.raises(ValidationError, match="runtime"):
        DenseParams(embedder={"runtime": runtime})


def test_int8_on_pytorch_and_onnxruntime_on_a_gpu_are_config_errors():
    with pytest.raises(ValidationError, match="precision int8 runs on runtime onnxruntime only"):
        DenseParams(embedder={"precision": "int8", "runtime": "pytorch"})
    with pytest.raises(ValidationError, match="embedder runtime onnxruntime runs on the CPU only, not on device 'cuda'"):
        DenseParams(embedder={"runtime": "onnxruntime"}, device="cuda")
    assert DenseParams(embedder={"precision": "int8", "runtime": "onnxruntime"}).embedder.on_onnxruntime
    assert not DenseParams(embedder={"runtime": "pytorch"}, device="cuda").embedder.on_onnxruntime


def test_float32_on_onnxruntime_shares_the_store_identity_and_dumps_its_runtime():
    pytorch, onnxruntime = DenseParams(), DenseParams(embedder={"runtime": "onnxruntime"})
    assert onnxruntime.identity() == pytorch.identity() == "all-MiniLM-L6-v2"
    assert pytorch.model_dump()["embedder"] == {"type": "sentence_transformers"}  # as before runtime existed
    assert onnxruntime.model_dump()["embedder"] == {"type": "sentence_transformers", "runtime": "onnxruntime"}


@pytest.mark.slow
def test_onnxruntime_float32_vectors_are_the_pytorch_vectors(onnx_encoder, minilm, smoke_data):
    chunks, questions = smoke_data
    onnx_float32 = onnx_encoder("float32")
    texts = [chunk.text for chunk in chunks[:40]] + questions[:20]
    onnx = onnx_float32.encode(texts, normalize_embeddings=True)
    pytorch = minilm.encode(texts, batch_size=8, convert_to_numpy=True, normalize_embeddings=True)
    assert onnx.dtype == np.float32 and onnx.shape == pytorch.shape
    cosines = np.sum(onnx.astype(float) * pytorch, axis=1)
    assert 1 - cosines.min() < 1e-6, 1 - cosines.min()
    np.testing.assert_allclose(onnx, pytorch, atol=2e-5)


@pytest.mark.slow
def test_onnxruntime_float32_reads_the_vectors_pytorch_stored(onnx_encoder, minilm, smoke_data, storage):
    chunks = smoke_data[0][:12]
    pytorch = DenseRetriever("dense", DenseParams(search="exact"), encoder=minilm)
    pytorch.index(chunks, storage)
    onnx = DenseRetriever("dense", DenseParams(search="exact", embedder={"runtime": "onnxruntime"}), encoder=onnx_encoder("float32"))
    onnx.index(chunks, storage)
    assert onnx.embedder.texts_encoded == 0  # the same function: the float32 store serves it
    assert np.array_equal(onnx.embedded()[1], pytorch.embedded()[1])


@pytest.mark.parametrize(("runtime", "model", "device", "expected"), [
    (None, "all-MiniLM-L6-v2", "cpu", True),  # the packaged model on the CPU: onnxruntime
    (None, "all-MiniLM-L6-v2", "cuda", False),  # a GPU: PyTorch
    (None, "nobody/a-model-known-only-by-its-hub-name", "cpu", False),  # no local directory to export
    ("pytorch", "all-MiniLM-L6-v2", "cpu", False),
    ("onnxruntime", "all-MiniLM-L6-v2", "cpu", True),
])
def test_an_unset_runtime_runs_onnxruntime_on_the_cpu_for_a_local_model(runtime, model, device, expected):
    from rag.encoders import SentenceTransformersEmbedderConfig, SentenceTransformersEncoder, runs_on_onnxruntime

    config = SentenceTransformersEmbedderConfig(runtime=runtime)
    assert runs_on_onnxruntime(config, model, device) is expected
    encoder = SentenceTransformersEncoder(config, model, device)
    encoder.use_model_cache(Path("/nonexistent/models"))  # nothing is built before the first encode
    assert (encoder.onnx is not None) is expected
    if expected:
        assert encoder.onnx.cache == Path("/nonexistent/models")


def test_a_local_model_directory_runs_on_onnxruntime_too(tmp_path):
    from rag.encoders import SentenceTransformersEmbedderConfig, runs_on_onnxruntime

    assert runs_on_onnxruntime(SentenceTransformersEmbedderConfig(), str(tmp_path), "cpu")
    assert not runs_on_onnxruntime(SentenceTransformersEmbedderConfig(), str(tmp_path / "missing"), "cpu")


@pytest.mark.parametrize(("value", "expected"), [
    (None, "/run/cache/models"),  # unset: the run's own cache
    ("", "/run/cache/models"),
    ("  ", "/run/cache/models"),
    ("/srv/models", "/srv/models"),
    ("~/models", str(Path("~/models").expanduser())),
])
def test_the_model_cache_is_the_shared_directory_when_one_is_named(value, expected):
    from rag.ort.build import MODEL_CACHE_ENV, model_cache

    environ = {} if value is None else {MODEL_CACHE_ENV: value}
    assert model_cache(Path("/run/cache/models"), environ) == Path(expected)


@pytest.mark.slow
def test_two_caches_share_the_models_built_in_the_shared_directory(tmp_path, monkeypatch, smoke_data):
    from rag.ort.build import MODEL_CACHE_ENV
    from rag.retrievers.base import IndexStorage

    shared = tmp_path / "shared"
    monkeypatch.setenv(MODEL_CACHE_ENV, str(shared))
    chunks, built = smoke_data[0][:6], []
    for cache in ("first", "second"):
        retriever = DenseRetriever("dense", DenseParams(search="exact", embedder={"runtime": "onnxruntime"}))
        retriever.index(chunks, IndexStorage.under(tmp_path / cache, "dense"))
        assert retriever.embedder.texts_encoded == len(chunks)  # each cache encodes its own vectors
        built.append(sorted((path.name, (path / "model.onnx").stat().st_mtime_ns) for path in shared.iterdir() if path.is_dir()))
        assert not (tmp_path / cache / "models").exists()
    assert len(built[0]) == 1 and built[0][0][0].startswith("float32-")
    assert built[1] == built[0]  # the second cache read the first one's model, untouched
