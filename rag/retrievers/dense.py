"""Dense retrieval: sentence-transformers embeddings, searched in Chroma (HNSW) or exactly (numpy).

score(q, d) = cos(q, d) = e_q . e_d for the L2-normalized embeddings e (= 1 - Chroma's cosine
distance). ``search: hnsw`` (default) takes the candidate ids from Chroma's approximate HNSW search;
``search: exact`` scans all vectors with one matrix product (brute force, the reference for
Chroma's recall). In both, scores are the dot products (in float64) of our cached float32
embeddings, rounded to float32, and the ranking follows the one tie rule (score desc, chunk id desc,
:mod:`rag.retrievers.ranking`), so the two modes differ only in which chunks they find.

Embeddings of chunks *and* queries are cached (:mod:`rag.embeddings`) under
``<cache_dir>/embeddings``; the model is loaded only when something has to be encoded. The Chroma
store lives in ``<cache_dir>/chroma`` (``mode: persistent``) or on a Chroma server
(``mode: server``, ``host``/``port``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from rag.embeddings import Embedder, Encoder, load_sentence_transformer
from rag.errors import BenchError
from rag.models import DEFAULT_EMBEDDING_MODEL
from rag.retrievers.base import RETRIEVERS, Retriever, RetrieverParams
from rag.retrievers.chroma_store import ChromaStore, HnswParams, make_client
from rag.retrievers.index_cache import index_key
from rag.retrievers.ranking import ranking_from_scores, sorted_by_id
from rag.types import Chunk, Ranking


class DenseParams(RetrieverParams):
    model: str = DEFAULT_EMBEDDING_MODEL
    device: str = "auto"
    batch_size: int = Field(64, gt=0)
    search: Literal["hnsw", "exact"] = "hnsw"
    mode: Literal["persistent", "server"] = "persistent"
    host: str = "127.0.0.1"
    port: int = Field(8000, gt=0, lt=65536)
    hnsw: HnswParams = Field(default_factory=HnswParams)


class _LazyEncoder:
    """Loads the sentence-transformers model on the first ``encode`` call (cached runs never do)."""

    def __init__(self, model: str, device: str):
        self.model, self.device = model, device

    @cached_property
    def _model(self):
        return load_sentence_transformer(self.model, self.device)

    def encode(self, sentences, **kwargs):
        return self._model.encode(sentences, **kwargs)


@RETRIEVERS.register("dense")
class DenseRetriever(Retriever):
    """Cosine-similarity retrieval over chunk embeddings; see the module docstring."""

    Params = DenseParams
    params: DenseParams

    def __init__(self, name: str, params: DenseParams, encoder: Encoder | None = None):
        """``encoder``: an already loaded model for ``params.model`` (else loaded when first needed)."""
        super().__init__(name, params)
        self.encoder: Encoder = encoder if encoder is not None else _LazyEncoder(params.model, params.device)
        self.embedder: Embedder | None = None
        self.store: ChromaStore | None = None
        self.collection_rebuilt: bool | None = None
        self._chunk_ids: list[str] = []
        self._row_of: dict[str, int] = {}
        self._vectors = np.empty((0, 0), dtype=np.float64)  # unit vectors, rows in chunk-id order

    def index(self, chunks: Sequence[Chunk], cache_dir: Path) -> None:
        ordered = sorted_by_id(chunks)
        if not ordered:
            raise BenchError(f"retriever {self.name!r}: cannot index an empty corpus")
        cache_dir = Path(cache_dir)
        self.embedder = Embedder(
            self.encoder, model_id=self.params.model, batch_size=self.params.batch_size, cache_dir=cache_dir / "embeddings"
        )
        self._chunk_ids = [chunk.chunk_id for chunk in ordered]
        self._row_of = {chunk_id: row for row, chunk_id in enumerate(self._chunk_ids)}
        vectors = self.embedder.embed([chunk.text for chunk in ordered], desc=f"{self.name}: embedding chunks")
        self._vectors = vectors.astype(np.float64)
        if self.params.search == "hnsw":
            client = make_client(self.params.mode, cache_dir / "chroma", self.params.host, self.params.port)
            self.store = ChromaStore(client, self.name, self.params.hnsw)
            settings = {"model": self.params.model, "hnsw": self.params.hnsw.model_dump()}
            self.collection_rebuilt = self.store.ensure(index_key(settings, ordered), self._chunk_ids, vectors)

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        if self.embedder is None:
            raise BenchError(f"retriever {self.name!r}: search() called before index()")
        if not queries:
            return []
        query_vectors = self.embedder.embed(list(queries), desc=f"{self.name}: embedding queries").astype(np.float64)
        if self.store is None:
            return self._exact(query_vectors, k)
        rankings = []
        for query_vector, found in zip(query_vectors, self.store.query(query_vectors.astype(np.float32), k)):
            rows = np.sort(np.array([self._row_of[chunk_id] for chunk_id in found], dtype=np.int64))
            scores = self._vectors[rows] @ query_vector
            rankings.append(ranking_from_scores(scores, [self._chunk_ids[row] for row in rows], k))
        return rankings

    def search_exact(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """Top-``k`` by brute force whatever ``search`` is set to: the reference that measures HNSW's recall."""
        if self.embedder is None:
            raise BenchError(f"retriever {self.name!r}: search_exact() called before index()")
        return self._exact(self.embedder.embed(list(queries), desc=f"{self.name}: embedding queries").astype(np.float64), k)

    def _exact(self, query_vectors: np.ndarray, k: int, block: int = 256) -> list[Ranking]:
        """Brute force: all cosine similarities, ``block`` queries per matrix product."""
        rankings = []
        for start in range(0, len(query_vectors), block):
            scores = query_vectors[start : start + block] @ self._vectors.T
            rankings.extend(ranking_from_scores(row, self._chunk_ids, k) for row in scores)
        return rankings
