"""Engine-native retrievers: Milvus's own BM25 full-text search and its own hybrid search, measured as
methods beside our exact BM25 and our fusions (docs/retrievers.md says where they differ).

- ``milvus_bm25``: the chunk texts in a Milvus collection whose BM25 function turns each text, as
  the collection's ``analyzer`` tokenizes it, into a sparse term-frequency vector; queries are
  scored by the engine's BM25 (``k1``, ``b``; ``index_params`` go to its ``SPARSE_INVERTED_INDEX``,
  e.g. ``inverted_index_algo``). score = the engine's BM25 score.
- ``milvus_hybrid``: the same text fields plus the dense vectors of the dense retriever named by
  ``dense`` (its embeddings from the shared store, its query encoder); one ``hybrid_search`` per
  batch of queries over the dense (COSINE) and BM25 fields, each route cut to ``depth``, fused by the
  engine's ``RRFRanker(k)`` (``ranker: rrf``) or ``WeightedRanker(w_dense, w_bm25)``
  (``ranker: weighted``). score = the engine's fused score.

Where the collection lives is ``store`` (:class:`rag.retrievers.milvus_store.MilvusStoreConfig`:
milvus-lite file or server URI). The engine's scores are rounded and ordered by the one tie rule
(:mod:`rag.retrievers.ranking`: float32 score descending, then chunk id descending), whatever order
the engine returned equal scores in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from rag.errors import BenchError, ConfigError
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, RetrieverParams
from rag.retrievers.dense import DenseRetriever
from rag.retrievers.index_cache import index_key
from rag.retrievers.milvus_store import MilvusCollection, MilvusStoreConfig, milvus_client
from rag.retrievers.ranking import ranking_from_pairs, sorted_by_id
from rag.types import Chunk, Ranking


class MilvusBM25Params(RetrieverParams):
    store: MilvusStoreConfig = Field(default_factory=lambda: MilvusStoreConfig(type="milvus"))
    analyzer: dict[str, Any] = Field(default_factory=lambda: {"type": "standard"},
                                     description="Milvus analyzer_params of the text field")
    k1: float = Field(1.2, gt=0, description="bm25_k1 (Milvus's default 1.2)")
    b: float = Field(0.75, ge=0, le=1, description="bm25_b")
    index_params: dict[str, Any] = Field(default_factory=dict,
                                         description="more SPARSE_INVERTED_INDEX params, e.g. inverted_index_algo")

    def bm25(self) -> dict[str, Any]:
        return {"analyzer": self.analyzer, "k1": self.k1, "b": self.b, "index_params": self.index_params}


class MilvusRetriever(Retriever):
    """Indexes the chunk texts (and, for hybrid, vectors) into its collection; see the module docstring."""

    params: MilvusBM25Params

    def __init__(self, name: str, params: MilvusBM25Params):
        super().__init__(name, params)
        self.collection: MilvusCollection | None = None
        self.collection_rebuilt: bool | None = None

    def settings(self) -> dict[str, Any]:
        return {"type": type(self).__name__, "bm25": self.params.bm25()}

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        ordered = sorted_by_id(chunks)
        if not ordered:
            raise BenchError(f"retriever {self.name!r}: cannot index an empty corpus")
        self.collection = MilvusCollection(milvus_client(self.params.store, storage.own), self.name, self.params.store)
        self.collection_rebuilt = self.collection.ensure(
            index_key(self.settings(), ordered), [chunk.chunk_id for chunk in ordered], vectors=self.vectors(),
            texts=[chunk.text for chunk in ordered], bm25=self.params.bm25(),
        )

    def vectors(self):
        """The dense field's rows in chunk-id order, or None (BM25 only)."""
        return None

    def _collection(self) -> MilvusCollection:
        if self.collection is None:
            raise BenchError(f"retriever {self.name!r}: search() called before index()")
        return self.collection


@RETRIEVERS.register("milvus_bm25")
class MilvusBM25Retriever(MilvusRetriever):
    Params = MilvusBM25Params

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        collection = self._collection()
        return [ranking_from_pairs(found, k) for found in collection.search(collection.bm25_request(queries, k))]


class MilvusHybridParams(MilvusBM25Params):
    dense: str = Field(description="name of the dense retriever whose embeddings and query encoder are used")
    ranker: Literal["rrf", "weighted"] = "rrf"
    k: int = Field(60, gt=0, description="RRFRanker's k (ranker: rrf)")
    weights: list[float] | None = Field(None, min_length=2, max_length=2,
                                        description="WeightedRanker's [dense, bm25] weights (ranker: weighted; default 0.5 each)")
    depth: int | None = Field(None, gt=0, description="results taken from each route; default: the run's depth")

    @model_validator(mode="after")
    def _ranker_settings(self) -> "MilvusHybridParams":
        if self.ranker == "rrf" and self.weights is not None:
            raise ValueError("weights apply to ranker: weighted, not rrf")
        if self.ranker == "weighted" and "k" in self.model_fields_set:
            raise ValueError("k applies to ranker: rrf, not weighted")
        return self

    def requires(self) -> list[str]:
        return [self.dense]


@RETRIEVERS.register("milvus_hybrid")
class MilvusHybridRetriever(MilvusRetriever):
    Params = MilvusHybridParams
    params: MilvusHybridParams

    def __init__(self, name: str, params: MilvusHybridParams):
        super().__init__(name, params)
        self.dense: DenseRetriever | None = None

    def bind(self, retrievers: Mapping[str, Retriever]) -> None:
        dense = retrievers.get(self.params.dense)
        if not isinstance(dense, DenseRetriever):
            raise ConfigError(f"retrievers.{self.name}.params.dense",
                              f"{self.params.dense!r} is not a configured dense retriever; expected the name of one")
        self.dense = dense

    def settings(self) -> dict[str, Any]:
        dense = self._dense()
        return {**super().settings(), "model": dense.params.identity(),
                "dense_index": self.params.store.model_dump(include={"index", "params"})}

    def vectors(self):
        return self._dense().embedded()[1]

    def _dense(self) -> DenseRetriever:
        if self.dense is None:
            raise BenchError(f"retriever {self.name!r}: used before bind()")
        return self.dense

    def ranker(self):
        from pymilvus import RRFRanker, WeightedRanker

        if self.params.ranker == "rrf":
            return RRFRanker(self.params.k)
        return WeightedRanker(*(self.params.weights or [0.5, 0.5]))

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        collection = self._collection()
        if not queries:
            return []
        vectors = self._dense().embed_queries(queries)
        depth = self.params.depth or k
        requests = [collection.dense_request(vectors, depth), collection.bm25_request(queries, depth)]
        return [ranking_from_pairs(found, k) for found in collection.hybrid_search(requests, self.ranker(), k)]
