"""The vector store behind the dense retriever's approximate search: a small interface and a registry.

A store holds one retriever's precomputed embeddings (never computes any) and answers nearest-
neighbour queries with chunk ids; the dense retriever scores those candidates itself from its own
vectors, so every store's rankings follow the one tie rule (:mod:`rag.retrievers.ranking`) and
differ only in which chunks they find.

``store:`` in a dense retriever's params picks one, by ``type``:

- ``chroma`` (default): Chroma, configured by the dense params ``mode``/``host``/``port``/``hnsw``
  (:mod:`rag.retrievers.chroma_store`);
- ``milvus``: milvus-lite in a local file or a Milvus server/cluster by URI, index ``FLAT``,
  ``HNSW`` or ``IVF_FLAT`` (:mod:`rag.retrievers.milvus_store`).

Adding a store means a config model with a ``type`` literal, a class with :class:`VectorStore`'s two
methods, and an opener registered with ``@VECTOR_STORES.register(type)`` (:mod:`rag.registry`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Literal, Protocol, Union

import numpy as np
from pydantic import Field

from rag.registry import Registry
from rag.retrievers.milvus_config import SERVER_SCHEMES, MilvusStoreConfig  # noqa: F401  (re-exported)
from rag.validation import ConfigModel


class VectorStore(Protocol):
    def ensure(self, key: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> bool:
        """Make the store hold exactly these vectors for ``key``; True when it was (re)built."""

    def query(self, query_vectors: np.ndarray, k: int) -> list[list[str]]:
        """Ids of the (approximate) ``k`` nearest neighbours of each query vector."""


class ChromaStoreConfig(ConfigModel):
    """Chroma: its settings are the dense params ``mode``, ``host``, ``port`` and ``hnsw``."""

    type: Literal["chroma"] = "chroma"


StoreConfig = Annotated[Union[ChromaStoreConfig, MilvusStoreConfig], Field(discriminator="type")]

#: store type -> opener(dense params, retriever name, the retriever's own index directory)
Opener = Callable[[object, str, Path], VectorStore]
VECTOR_STORES: Registry[Opener] = Registry("vector store")


@VECTOR_STORES.register("chroma")
def _open_chroma(params, name: str, directory: Path) -> VectorStore:
    from rag.retrievers.chroma_store import ChromaStore, make_client

    return ChromaStore(make_client(params.mode, directory / "chroma", params.host, params.port), name, params.hnsw)


@VECTOR_STORES.register("milvus")
def _open_milvus(params, name: str, directory: Path) -> VectorStore:
    from rag.retrievers.milvus_store import MilvusCollection, milvus_client

    return MilvusCollection(milvus_client(params.store, directory), name, params.store)


def open_store(params, name: str, directory: Path) -> VectorStore:
    """The store ``params.store`` names, for the retriever ``name`` indexing into ``directory``."""
    return VECTOR_STORES.get(params.store.type, key=f"retrievers.{name}.params.store.type")(params, name, directory)
