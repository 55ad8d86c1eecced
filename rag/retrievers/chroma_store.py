"""A Chroma collection holding our precomputed embeddings (cosine space, HNSW).

The collection is named after a hash of everything it depends on (model, HNSW settings, chunk ids and
texts), so it is reused when they match and rebuilt otherwise. Its metadata ``rag_complete`` is set
only after the last batch was added: a collection left by an interrupted build is deleted and built
again. Stale collections of the same retriever (same name prefix, other hash) are deleted (the rule of
:mod:`rag.retrievers.keyed_collections`, which the Milvus store follows too).
Chroma's own embedding function is never used (``embedding_function=None``; vectors always passed).
A persistent store whose database is damaged (a truncated ``chroma.sqlite3``) is reported as a
warning, deleted and created anew in the same run; its collections are rebuilt from the vectors.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import Field
from rag.progress import progress as progress_bar

from rag.errors import BenchError
from rag.retrievers.keyed_collections import KeyedCollections
from rag.validation import ConfigModel

log = logging.getLogger(__name__)
COMPLETE_KEY = "rag_complete"
# SQLite's SQLITE_CORRUPT (11) and SQLITE_NOTADB (26), as chromadb reports them: only these mean
# "damaged", never a locked or read-only database, which must not be deleted.
_DAMAGED = re.compile(r"malformed|not a database|\(code: (11|26)\)")


class HnswParams(ConfigModel):
    """HNSW graph settings (Chroma's ``configuration["hnsw"]``: ef_construction, ef_search,
    max_neighbors). Chroma's defaults are 100/100/16; ours are 200/200/16, closer to exact search.
    measured: docs/measurements.md#hnsw-settings"""

    construction_ef: int = Field(200, gt=0)
    search_ef: int = Field(200, gt=0)
    M: int = Field(16, gt=1)


def make_client(mode: str, path: Path, host: str, port: int):
    """``persistent``: a local ``PersistentClient`` at ``path``; ``server``: an ``HttpClient``."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if mode == "server":
        try:
            return chromadb.HttpClient(host=host, port=port, settings=settings)
        except Exception as error:  # chromadb raises bare ValueError/ConnectError kinds here
            raise BenchError(f"cannot reach the Chroma server at {host}:{port}: {error}") from error
    try:
        client = chromadb.PersistentClient(path=str(path), settings=settings)
        client.list_collections()  # reads the system tables: fails here if the database is damaged
        return client
    except Exception as error:  # chromadb wraps SQLite's errors in its InternalError
        if not _DAMAGED.search(str(error)):
            raise
        log.warning("Chroma store %s is unreadable (%s: %s); deleting it and building it again", path,
                    type(error).__name__, error)
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # chromadb keeps one open system per path
    shutil.rmtree(path)
    return chromadb.PersistentClient(path=str(path), settings=settings)


class ChromaStore(KeyedCollections):
    """One retriever's collection in a Chroma client: ensure it holds the vectors, query it."""

    joiner, name_characters = "-", "A-Za-z0-9_-"

    def __init__(self, client, retriever_name: str, hnsw: HnswParams):
        super().__init__(client, retriever_name)
        self.hnsw = hnsw
        self.collection = None

    def ensure(self, key: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> bool:
        """Make the collection for ``key`` hold exactly these vectors; True when it was (re)built."""

        def build(name: str) -> None:
            self.collection = self._create(name)
            self._add(chunk_ids, vectors)

        return self.ensure_collection(key, len(chunk_ids), build)

    def collection_names(self) -> list[str]:
        return [collection.name for collection in self.client.list_collections()]

    def drop(self, name: str) -> None:
        if self._get(name) is not None:
            self.client.delete_collection(name)

    def is_complete(self, name: str, rows: int) -> bool:
        collection = self._get(name)
        return collection is not None and bool((collection.metadata or {}).get(COMPLETE_KEY)) and collection.count() == rows

    def use(self, name: str) -> None:
        self.collection = self._get(name)

    def mark_complete(self, name: str, rows: int) -> None:
        self.collection.modify(metadata={COMPLETE_KEY: True, "count": rows})

    def _get(self, name: str):
        try:
            return self.client.get_collection(name, embedding_function=None)
        except Exception:  # chromadb raises NotFoundError (ValueError in some versions)
            return None

    def _create(self, name: str):
        return self.client.create_collection(
            name,
            configuration={
                "hnsw": {
                    "space": "cosine",
                    "ef_construction": self.hnsw.construction_ef,
                    "ef_search": self.hnsw.search_ef,
                    "max_neighbors": self.hnsw.M,
                }
            },
            metadata={COMPLETE_KEY: False},
            embedding_function=None,
        )

    def _add(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        batch = max(1, self.client.get_max_batch_size())
        with progress_bar(total=len(chunk_ids), desc=f"{self.prefix[:-1]}: adding to Chroma", unit="vector") as progress:
            for start in range(0, len(chunk_ids), batch):
                self.collection.add(ids=list(chunk_ids[start : start + batch]), embeddings=vectors[start : start + batch])
                progress.update(min(batch, len(chunk_ids) - start))

    def query(self, query_vectors: np.ndarray, k: int) -> list[list[str]]:
        """Ids of the (approximate) ``k`` nearest neighbours of each query vector."""
        n_results = min(k, self.collection.count())
        if n_results <= 0 or len(query_vectors) == 0:
            return [[] for _ in range(len(query_vectors))]
        result = self.collection.query(query_embeddings=query_vectors, n_results=n_results, include=[])
        return result["ids"]
