"""Dense retrieval: embeddings (local sentence-transformers or an endpoint), searched in a vector store
(Chroma's HNSW by default, or Milvus: ``store: {type: milvus, ...}``, :mod:`rag.retrievers.vector_store`)
or exactly (numpy).

score(q, d) = cos(q, d) = e_q . e_d for the L2-normalized embeddings e (= 1 - Chroma's cosine
distance). ``search: exact`` (the default) scans all vectors (brute force: the same inputs give the same
rankings, bit for bit); ``search: hnsw`` (the default when a store setting is given: ``store``,
``mode``, ``host``, ``port`` or ``hnsw``) takes the candidate ids from the store's approximate search,
Chroma's HNSW, whose graph Chroma builds with several threads: two cold builds differ (Chroma takes
no single-thread setting), and so may the lists below the first ranks. Exact search is also the
cheaper of the two for a run's questions: scanning every vector costs less than building the graph
(measured: docs/retrievers.md#exact-by-default). In both,
scores are the dot products (in float64) of our stored float32 embeddings, rounded to float32, and
the ranking follows the one tie rule (score desc, chunk id desc, :mod:`rag.retrievers.ranking`), so
the two modes differ only in which chunks they find.

The encoder is chosen by ``embedder`` (:mod:`rag.encoders`). Embeddings of chunks *and* queries are
kept in the shared embedding store ``storage.embeddings`` (:mod:`rag.embeddings`), in shards of
``shard_size`` texts that survive any interruption, so an interrupted build resumes where it
stopped; the model is loaded only when something has to be encoded. The Chroma store lives in
``storage.own / "chroma"`` (``mode: persistent``) or on a Chroma server (``mode: server``,
``host``/``port``); a collection is marked complete after its last vector (:mod:`chroma_store`).
A Milvus store (:mod:`milvus_store`) follows the same rules; ``search: hnsw`` then means "search
the store", whatever its ``index`` (FLAT, HNSW, IVF_FLAT), and the fidelity check compares it with
exact search all the same.

With ``query:`` the searches go through a query transform (:mod:`rag.retrievers.query_transforms`: ``hyde``
searches its own vector with :meth:`DenseRetriever.search_vectors`, ``multi_query`` fuses several
plain searches); the index does not depend on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field, field_validator, model_serializer, model_validator

from rag.embeddings import Embedder, EmbeddingStore, Encoder
from rag.encoders import EmbedderConfig, SentenceTransformersEmbedderConfig, build_encoder
from rag.errors import BenchError
from rag.models import DEFAULT_EMBEDDING_MODEL
from rag.retrievers.query_transforms.base import TransformedSearch, build_transform
from rag.retrievers.query_transforms.config import QueryTransformConfig, for_retriever
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, RetrieverParams
from rag.retrievers.chroma_store import HnswParams
from rag.retrievers.index_cache import index_key
from rag.retrievers.ranking import ranking_from_scores, sorted_by_id
from rag.retrievers.vector_store import ChromaStoreConfig, StoreConfig, VectorStore, open_store
from rag.types import Chunk, Ranking


class DenseParams(RetrieverParams):
    model: str = DEFAULT_EMBEDDING_MODEL
    embedder: EmbedderConfig = Field(default_factory=SentenceTransformersEmbedderConfig)
    device: str = "auto"
    batch_size: int | None = Field(None, gt=0, description="texts per forward pass (local) or request (endpoint); "
                                   "default: 8 on CPU, 64 on a GPU or per request (rag.encoders)")
    shard_size: int = Field(1024, gt=0)
    search: Literal["hnsw", "exact"] = Field("exact", description="default: exact, unless a store setting is given "
                                             "(store, mode, host, port, hnsw): then hnsw")
    mode: Literal["persistent", "server"] = "persistent"
    host: str = "127.0.0.1"
    port: int = Field(8000, gt=0, lt=65536)
    hnsw: HnswParams = Field(default_factory=HnswParams)
    store: StoreConfig = Field(default_factory=ChromaStoreConfig, description="vector store of search: hnsw")
    query: QueryTransformConfig | None = Field(None, description="a query transform: hyde or multi_query (rag.retrievers.query_transforms)")

    @field_validator("query")
    @classmethod
    def _query_applies(cls, query):
        return for_retriever(query, "dense")

    def llm_calls_per_query(self) -> int:
        return self.query.llm_calls_per_query() if self.query is not None else 0

    @model_validator(mode="before")
    @classmethod
    def _default_search(cls, data):
        """``search`` unset: exact (bit-reproducible, and cheaper than building a graph: module docstring),
        or hnsw where a store setting says the store is wanted."""
        if isinstance(data, dict) and "search" not in data:
            return {**data, "search": "hnsw" if STORE_SETTINGS & set(data) else "exact"}
        return data

    @model_validator(mode="after")
    def _device_is_local(self) -> "DenseParams":
        if "device" in self.model_fields_set and self.embedder.type != "sentence_transformers":
            raise ValueError(f"device applies to the local embedder, not to embedder type {self.embedder.type!r}")
        if getattr(self.embedder, "on_onnxruntime", False) and self.device not in ("auto", "cpu"):
            setting, other = (("precision int8", "precision: float32") if self.embedder.precision == "int8"
                              else ("runtime onnxruntime", "runtime: pytorch"))
            raise ValueError(f"embedder {setting} runs on the CPU only, not on device {self.device!r} (set {other} to use it)")
        chroma_only = sorted({"mode", "host", "port", "hnsw"} & self.model_fields_set)
        if self.store.type != "chroma" and chroma_only:
            raise ValueError(f"{', '.join(chroma_only)} configure the Chroma store, not store type {self.store.type!r}")
        return self

    @model_serializer(mode="wrap")
    def _default_store_unsaid(self, handler) -> dict:
        """The default Chroma store, and no query transform, are left out of dumps, so run plans and
        cache keys written before ``store`` and ``query`` existed stay valid."""
        data = handler(self)
        if self.store.type == "chroma" and "store" not in self.model_fields_set:
            data.pop("store", None)
        if self.query is None:
            data.pop("query", None)
        return data

    def store_settings(self) -> dict:
        """What the store's contents depend on besides the vectors (keys its collection)."""
        if self.store.type == "chroma":
            return {"model": self.identity(), "hnsw": self.hnsw.model_dump()}
        return {"model": self.identity(), "store": self.store.model_dump(include={"type", "index", "params"})}

    def identity(self) -> str:
        """The model identity that keys the embedding store and the Chroma collection."""
        return self.embedder.identity(self.model)


#: Settings of the vector store: given without ``search``, they make it ``hnsw`` (the store is searched).
STORE_SETTINGS = frozenset({"store", "mode", "host", "port", "hnsw"})


@RETRIEVERS.register("dense")
class DenseRetriever(TransformedSearch, Retriever):
    """Cosine-similarity retrieval over chunk embeddings; see the module docstring. With ``query:``
    its searches go through a query transform (:mod:`rag.retrievers.query_transforms`: hyde, multi_query)."""

    Params = DenseParams
    params: DenseParams

    def __init__(self, name: str, params: DenseParams, encoder: Encoder | None = None):
        """``encoder``: an already loaded model for ``params.model`` (else built from ``params.embedder``)."""
        super().__init__(name, params)
        self.encoder: Encoder = encoder if encoder is not None else build_encoder(params.embedder, params.model, params.device)
        self.embedder: Embedder | None = None
        self.store: VectorStore | None = None
        self.collection_rebuilt: bool | None = None
        self._chunk_ids: list[str] = []
        self._row_of: dict[str, int] = {}
        self._vectors = np.empty((0, 0), dtype=np.float32)  # unit vectors, rows in chunk-id order
        self.transform = build_transform(name, params.query)

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        ordered = sorted_by_id(chunks)
        if not ordered:
            raise BenchError(f"retriever {self.name!r}: cannot index an empty corpus")
        self.embedder = Embedder(
            self.encoder,
            EmbeddingStore.for_model(storage.embeddings, self.params.identity()),
            batch_size=self.params.batch_size,
            texts_per_call=self.params.shard_size,
        )
        if hasattr(self.encoder, "use_model_cache"):
            self.encoder.use_model_cache(storage.embeddings.parent / "models")
        self._chunk_ids = [chunk.chunk_id for chunk in ordered]
        self._row_of = {chunk_id: row for row, chunk_id in enumerate(self._chunk_ids)}
        self._vectors = self.embedder.embed([chunk.text for chunk in ordered], desc=f"{self.name}: embedding chunks")
        if self.params.search == "hnsw":
            self.store = open_store(self.params, self.name, storage.own)
            key = index_key(self.params.store_settings(), ordered)
            self.collection_rebuilt = self.store.ensure(key, self._chunk_ids, self._vectors)

    def search_plain(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """The queries' own embeddings searched, without the transform."""
        if self.embedder is None:
            raise BenchError(f"retriever {self.name!r}: search() called before index()")
        if not queries:
            return []
        return self.search_vectors(self.embed_queries(queries), k)

    def search_vectors(self, query_vectors: np.ndarray, k: int) -> list[Ranking]:
        """Top-``k`` for query vectors given (unit length: scores are then cosines), as ``search`` ranks them."""
        query_vectors = np.asarray(query_vectors).astype(np.float64)
        if self.store is None:
            return self._exact(query_vectors, k)
        rankings = []
        for query_vector, found in zip(query_vectors, self.store.query(query_vectors.astype(np.float32), k)):
            rows = np.sort(np.array([self._row_of[chunk_id] for chunk_id in found], dtype=np.int64))
            scores = self._vectors[rows].astype(np.float64) @ query_vector
            rankings.append(ranking_from_scores(scores, [self._chunk_ids[row] for row in rows], k))
        return rankings

    def search_exact(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """Top-``k`` by brute force whatever ``search`` is set to: the reference that measures HNSW's recall."""
        if self.embedder is None:
            raise BenchError(f"retriever {self.name!r}: search_exact() called before index()")
        return self._exact(self.embed_queries(queries).astype(np.float64), k)

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """The queries' unit float32 embeddings (through the embedding store, like the chunks')."""
        if self.embedder is None:
            raise BenchError(f"retriever {self.name!r}: queries embedded before index()")
        return self.embedder.embed(list(queries), desc=f"{self.name}: embedding queries")

    def embedded(self) -> tuple[list[str], np.ndarray]:
        """The indexed chunk ids (id-rule order) and their unit float32 embeddings, row for row."""
        return self._chunk_ids, self._vectors

    def _exact(self, query_vectors: np.ndarray, k: int, block: int = 256, rows: int = 65536) -> list[Ranking]:
        """Brute force: all cosine similarities, ``block`` queries by ``rows`` chunks per float64
        matrix product (so no float64 copy of the whole corpus is ever made)."""
        rankings = []
        for start in range(0, len(query_vectors), block):
            batch = query_vectors[start : start + block]
            scores = np.empty((len(batch), len(self._chunk_ids)))
            for first in range(0, len(self._chunk_ids), rows):
                scores[:, first : first + rows] = batch @ self._vectors[first : first + rows].astype(np.float64).T
            rankings.extend(ranking_from_scores(row, self._chunk_ids, k) for row in scores)
        return rankings
