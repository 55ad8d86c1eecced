"""How close a dense retriever's int8 embeddings retrieve to the float32 model's, measured per run.

On a seeded sample of the run's questions and a seeded sample of :data:`CHUNK_SAMPLE` of its chunks
(all of them when fewer), both precisions embed the questions and the chunks, and exact search
(brute force, float64 dot products, the one tie rule: :func:`rag.retrievers.ranking.ranking_from_scores`)
ranks the sampled chunks for each question in each precision. The record (:func:`fidelity_record`):

- ``top_k_overlap``: mean over questions of |int8 top-k ∩ float32 top-k| / k (k = the run's top_k);
- ``identical_top_k``: the share of questions whose two top-k lists are equal, order included;
- ``query_cosine_error_mean`` / ``_max`` and ``chunk_cosine_error_mean``: 1 - cos(int8 vector,
  float32 vector) of the same text.

The float32 vectors come through the embedding store under the float32 identity, so they are
computed once (and a float32 run reuses them). Searching a sample of the corpus rather than all of
it bounds the cost (the float32 model embeds at most :data:`CHUNK_SAMPLE` chunks once); with fewer
chunks per question the ranks are farther apart, so the overlap here can be higher than on the whole
corpus (``scripts/bench_dense.py`` measures it on the whole 1,000-chunk sample it embeds).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import numpy as np

from rag.embeddings import Embedder, EmbeddingStore
from rag.encoders import build_encoder
from rag.errors import BenchError
from rag.retrievers.dense import DenseRetriever
from rag.retrievers.ranking import ranking_from_scores

CHUNK_SAMPLE = 1000


def fidelity_record(chunk_ids: Sequence[str], chunks_int8: np.ndarray, chunks_float32: np.ndarray,
                    queries_int8: np.ndarray, queries_float32: np.ndarray, k: int) -> dict:
    """The module docstring's record from unit vectors (rows aligned with ``chunk_ids``, resp. the
    questions), top-``k`` by exact search in each precision."""
    def top_k(queries: np.ndarray, chunks: np.ndarray) -> list[list[str]]:
        scores = queries.astype(np.float64) @ chunks.astype(np.float64).T
        return [ranking_from_scores(row, chunk_ids, k).chunk_ids for row in scores]

    found, reference = top_k(queries_int8, chunks_int8), top_k(queries_float32, chunks_float32)
    overlaps = [len(set(a) & set(b)) / max(len(b), 1) for a, b in zip(found, reference)]
    query_error = 1.0 - np.sum(queries_int8.astype(np.float64) * queries_float32, axis=1)
    chunk_error = 1.0 - np.sum(chunks_int8.astype(np.float64) * chunks_float32, axis=1)
    return {
        "questions": len(reference), "chunks": len(chunk_ids), "k": k,
        "top_k_overlap": float(np.mean(overlaps)),
        "identical_top_k": float(np.mean([a == b for a, b in zip(found, reference)])),
        "query_cosine_error_mean": float(np.mean(query_error)), "query_cosine_error_max": float(np.max(query_error)),
        "chunk_cosine_error_mean": float(np.mean(chunk_error)),
    }


def int8_vs_float32(retriever: DenseRetriever, chunk_text: Mapping[str, str], questions: Sequence[str],
                    k: int, seed: int, chunk_sample: int = CHUNK_SAMPLE) -> dict:
    """:func:`fidelity_record` of an indexed int8 ``retriever`` on ``questions`` and a ``seed``-ed
    sample of ``chunk_sample`` of its chunks (``chunk_text``: every chunk's text by id). The float32
    reference is the model as it is, on PyTorch (``runtime: pytorch``; the same vectors as on ONNX
    Runtime, so the store's float32 vectors serve either way)."""
    if retriever.embedder is None or retriever.embedder.store is None:
        raise BenchError(f"retriever {retriever.name!r}: precision fidelity measured before index()")
    ids, vectors = retriever.embedded()
    rows = sorted(random.Random(seed).sample(range(len(ids)), min(chunk_sample, len(ids))))
    sampled = [ids[row] for row in rows]
    float32_params = retriever.params.model_copy(
        update={"embedder": retriever.params.embedder.model_copy(update={"precision": "float32", "runtime": "pytorch"})})
    float32 = Embedder(build_encoder(float32_params.embedder, float32_params.model, float32_params.device),
                       EmbeddingStore.for_model(retriever.embedder.store.directory.parent, float32_params.identity()),
                       batch_size=float32_params.batch_size, texts_per_call=float32_params.shard_size)
    return fidelity_record(
        sampled, vectors[rows], float32.embed([chunk_text[i] for i in sampled], desc=f"{retriever.name}: float32 reference"),
        retriever.embed_queries(questions), float32.embed(list(questions), desc=f"{retriever.name}: float32 queries"), k)
