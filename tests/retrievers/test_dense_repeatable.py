"""Issue 44, item 5: runs repeat bit for bit. Chroma builds its HNSW graph with several threads, so
two cold builds over the same vectors gave lists that differ below the first ranks (1 or 2 of 200
lists at 10k vectors; Chroma 1.5.9 ignores ``num_threads``, as configuration or as metadata). A dense
retriever searches exactly unless a store is asked for, so two cold indexes give the same rankings."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from rag.retrievers import IndexStorage
from rag.retrievers.dense import DenseParams, DenseRetriever

pytestmark = pytest.mark.slow  # two indexes of 10,000 chunks
CHUNKS, QUERIES, DIMENSIONS = 10_000, 200, 384


class ClusteredEncoder:
    """A stand-in model: each text's vector is a seeded draw around one of 50 centres (a text's hash
    picks both), so neighbours are close and many, as real embeddings' are."""

    centres = np.random.default_rng(0).normal(size=(50, DIMENSIONS))

    def encode(self, sentences, **kwargs):
        rows = []
        for text in sentences:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            rng = np.random.default_rng(seed)
            noise = 0.05 if text.startswith("query") else 0.5
            rows.append(self.centres[seed % 50] + noise * rng.normal(size=DIMENSIONS))
        vectors = np.asarray(rows, dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_the_default_search_is_exact_unless_a_store_is_asked_for():
    assert DenseParams().search == "exact"
    assert DenseParams(hnsw={"M": 8}).search == DenseParams(store={"type": "milvus"}).search == "hnsw"
    assert DenseParams(search="hnsw").search == "hnsw"


def test_two_cold_indexes_give_the_same_rankings(make_chunks, tmp_path):
    chunks = make_chunks({f"c{i:05d}": f"chunk {i}" for i in range(CHUNKS)})
    queries = [f"query {i}" for i in range(QUERIES)]
    found = []
    for cold in ("first", "second"):
        retriever = DenseRetriever("dense", DenseParams(), encoder=ClusteredEncoder())
        retriever.index(chunks, IndexStorage.under(tmp_path / cold, "dense"))
        found.append([(r.chunk_ids, r.scores) for r in retriever.search(queries, k=100)])
    assert found[0] == found[1]
