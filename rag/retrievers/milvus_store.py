"""Milvus as a vector store and as a search engine: one collection per retriever.

``store: {type: milvus, uri: ...}``: a ``uri`` that is a file name (default ``milvus.db``) is a
milvus-lite database, an embedded engine in a local file; a relative one lives in the retriever's
own index directory (``<cache_dir>/index/<name>/``), so caches never land elsewhere. An
``http(s)://host:19530`` URI is a Milvus server or cluster, the same client and collections; its
token, if any, is read from the environment variable named by ``api_key_env`` (never from the config).

A collection holds the fields a retriever needs: ``id`` (the chunk id, primary key), ``dense``
(our precomputed float32 embeddings, COSINE; index ``FLAT``, ``HNSW`` or ``IVF_FLAT`` with
``params``, e.g. ``{M: 16, efConstruction: 200}`` / ``{nlist: 128}``, and ``search_params``, e.g.
``{ef: 200}`` / ``{nprobe: 16}``), and for full-text search ``text`` (analyzed by the collection's
``analyzer``) with ``sparse``, the output of Milvus's BM25 function (``SPARSE_INVERTED_INDEX``,
metric BM25, ``bm25_k1`` / ``bm25_b``). The engine embeds nothing: vectors always come from our
content-addressed embedding store (:mod:`rag.embeddings`).

Like the Chroma store, a collection follows :mod:`rag.retrievers.keyed_collections`: named after a
hash of everything it depends on, reused when it matches and rebuilt otherwise; the collection
properties ``rag_complete`` and ``rag_rows`` are set only after the last row was inserted and
flushed, so an interrupted build is dropped and built again; stale collections are dropped.
"""

from __future__ import annotations

import logging
import os
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import BenchError
from rag.progress import progress as progress_bar
from rag.retrievers.keyed_collections import KeyedCollections
from rag.retrievers.milvus_config import SERVER_SCHEMES, MilvusStoreConfig  # noqa: F401  (re-exported)

COMPLETE_KEY, ROWS_KEY = "rag_complete", "rag_rows"


def milvus_client(config: MilvusStoreConfig, directory: Path):
    """A ``MilvusClient`` for ``config.uri`` (a local file is placed under ``directory`` when relative)."""
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise BenchError("store type 'milvus' needs pymilvus and milvus-lite: pip install 'hybrid-rag-bench[milvus]'") from None
    if config.is_server():
        token = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        try:
            return MilvusClient(uri=config.uri, token=token)
        except Exception as error:  # pymilvus raises MilvusException / grpc errors
            raise BenchError(f"cannot reach the Milvus server at {config.uri}: {error}") from error
    path = Path(config.uri).expanduser()
    path = path if path.is_absolute() else directory / path
    path.parent.mkdir(parents=True, exist_ok=True)
    _quiet_unimplemented_timestamp()
    return MilvusClient(str(path))


class _UnimplementedTimestamp(logging.Filter):
    """Drops the one harmless error milvus-lite's in-process gRPC server logs, with a traceback, on
    every call: pymilvus asks it for a timestamp (``AllocTimestamp``), which it does not implement
    and which the client does not need. Every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, NotImplementedError) and "AllocTimestamp" in "".join(
            traceback.format_tb(record.exc_info[2])))


def _quiet_unimplemented_timestamp() -> None:
    server_log = logging.getLogger("grpc._server")
    if not any(isinstance(existing, _UnimplementedTimestamp) for existing in server_log.filters):
        server_log.addFilter(_UnimplementedTimestamp())


class MilvusCollection(KeyedCollections):
    """One retriever's collection: ensure it holds the rows, then search its dense and BM25 fields."""

    joiner, name_characters = "_", "A-Za-z0-9_"

    def __init__(self, client, retriever_name: str, config: MilvusStoreConfig):
        super().__init__(client, retriever_name)
        self.config = config
        self.name: str | None = None

    # ---------------------------------------------------------------------------------------------
    # Building

    def ensure(self, key: str, chunk_ids: Sequence[str], vectors: np.ndarray | None = None,
               texts: Sequence[str] | None = None, bm25: dict[str, Any] | None = None) -> bool:
        """Make the collection for ``key`` hold exactly these rows (a ``dense`` field when ``vectors``
        is given; ``text`` + BM25 ``sparse`` when ``texts`` is, ``bm25`` holding ``analyzer``,
        ``k1``, ``b``); True when it was (re)built."""

        def build(name: str) -> None:
            self.name = name
            self._create(name, None if vectors is None else vectors.shape[1], texts is not None, bm25 or {})
            self._insert(chunk_ids, vectors, texts)
            self.client.flush(name)
            self.client.load_collection(name)

        return self.ensure_collection(key, len(chunk_ids), build)

    def collection_names(self) -> list[str]:
        return list(self.client.list_collections())

    def drop(self, name: str) -> None:
        if self.client.has_collection(name):
            self.client.drop_collection(name)

    def is_complete(self, name: str, rows: int) -> bool:
        if not self.client.has_collection(name):
            return False
        properties = self.client.describe_collection(name).get("properties", {})
        return str(properties.get(COMPLETE_KEY)) == "1" and str(properties.get(ROWS_KEY)) == str(rows)

    def use(self, name: str) -> None:
        self.name = name
        self.client.load_collection(name)

    def mark_complete(self, name: str, rows: int) -> None:
        self.client.alter_collection_properties(name, {COMPLETE_KEY: "1", ROWS_KEY: str(rows)})

    def _create(self, name: str, dimension: int | None, with_text: bool, bm25: dict[str, Any]) -> None:
        from pymilvus import DataType, Function, FunctionType

        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=1024)
        index = self.client.prepare_index_params()
        if dimension is not None:
            schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dimension)
            index.add_index("dense", index_type=self.config.index, metric_type="COSINE", params=_build_params(self.config.params))
        if with_text:
            schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True,
                             analyzer_params=bm25.get("analyzer"))
            schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
            schema.add_function(Function(name="bm25", function_type=FunctionType.BM25,
                                         input_field_names=["text"], output_field_names=["sparse"]))
            index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                            params=_build_params({"bm25_k1": bm25.get("k1", 1.2), "bm25_b": bm25.get("b", 0.75),
                                                  **bm25.get("index_params", {})}))
        self.client.create_collection(name, schema=schema, index_params=index)

    def _insert(self, chunk_ids: Sequence[str], vectors: np.ndarray | None, texts: Sequence[str] | None) -> None:
        batch = self.config.batch_size
        with progress_bar(total=len(chunk_ids), desc=f"{self.prefix[:-1]}: adding to Milvus", unit="row") as progress:
            for start in range(0, len(chunk_ids), batch):
                rows = [{"id": chunk_id} for chunk_id in chunk_ids[start : start + batch]]
                for offset, row in enumerate(rows):
                    if vectors is not None:
                        row["dense"] = vectors[start + offset].tolist()
                    if texts is not None:
                        row["text"] = texts[start + offset]
                self.client.insert(self.name, rows)
                progress.update(len(rows))

    # ---------------------------------------------------------------------------------------------
    # Searching: each returns, per query, [(chunk id, engine score)] best first

    def dense_request(self, query_vectors: np.ndarray, limit: int):
        from pymilvus import AnnSearchRequest

        return AnnSearchRequest(data=[vector.tolist() for vector in query_vectors], anns_field="dense",
                                param={"metric_type": "COSINE", "params": dict(self.config.search_params)}, limit=limit)

    def bm25_request(self, queries: Sequence[str], limit: int):
        from pymilvus import AnnSearchRequest

        return AnnSearchRequest(data=list(queries), anns_field="sparse", param={"metric_type": "BM25"}, limit=limit)

    def search(self, request) -> list[list[tuple[str, float]]]:
        """One search request (:meth:`dense_request` or :meth:`bm25_request`)."""
        if not request.data:
            return []
        hits = self.client.search(self.name, data=request.data, anns_field=request.anns_field,
                                  search_params=request.param, limit=request.limit, output_fields=[])
        return [_pairs(found, engine_score=request.anns_field == "sparse") for found in hits]

    def hybrid_search(self, requests: Sequence, ranker, limit: int) -> list[list[tuple[str, float]]]:
        """Milvus's hybrid search: one query per request (the engine fuses one query at a time)."""
        hits = self.client.hybrid_search(self.name, reqs=list(requests), ranker=ranker, limit=limit, output_fields=[])
        return [_pairs(found, engine_score=True) for found in hits]

    def query(self, query_vectors: np.ndarray, k: int) -> list[list[str]]:
        """Ids of the (approximate) ``k`` nearest neighbours of each query vector (the vector-store
        interface of the dense retriever, :mod:`rag.retrievers.vector_store`)."""
        return [[chunk_id for chunk_id, _ in found] for found in self.search(self.dense_request(query_vectors, k))]


def _build_params(params: dict[str, Any]) -> dict[str, Any]:
    """Index build parameters in both wire forms: pymilvus 3 sends each key as its own pair, which
    a server reads; milvus-lite 3.2 reads only the JSON ``params`` pair of the older clients (which
    a server reads too), so without it milvus-lite silently builds with its defaults."""
    return {**params, "params": dict(params)} if params else {}


def _pairs(found, engine_score: bool) -> list[tuple[str, float]]:
    """(id, score) of one query's hits: the cosine similarity for a dense search; for BM25 and fused
    scores, which are >= 0 by construction, ``abs`` of the reported value (milvus-lite reports a
    plain BM25 search's score negated, as a distance; a server reports it as is)."""
    return [(str(hit["id"]), abs(float(hit["distance"])) if engine_score else float(hit["distance"])) for hit in found]
