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
from pydantic import Field, field_validator

from rag.endpoints.settings import key_variable_name
from rag.registry import Registry
from rag.validation import ConfigModel


class VectorStore(Protocol):
    def ensure(self, key: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> bool:
        """Make the store hold exactly these vectors for ``key``; True when it was (re)built."""

    def query(self, query_vectors: np.ndarray, k: int) -> list[list[str]]:
        """Ids of the (approximate) ``k`` nearest neighbours of each query vector."""


SERVER_SCHEMES = ("http://", "https://", "tcp://", "grpc://")


class MilvusStoreConfig(ConfigModel):
    """Where a retriever's Milvus collection lives and how its dense field is indexed (the store
    itself, which imports pymilvus, is :mod:`rag.retrievers.milvus_store`, loaded only when opened)."""

    type: Literal["milvus"]
    uri: str = Field("milvus.db", min_length=1, description="milvus-lite file (relative: in the retriever's index "
                                                             "directory) or http(s)://host:port of a server")
    api_key_env: str | None = Field(None, description="environment variable holding the server's token "
                                                       "(user:password or an API key; redacted like every API key)")
    index: Literal["FLAT", "HNSW", "IVF_FLAT"] = "HNSW"
    params: dict[str, int | float] = Field(default_factory=lambda: {"M": 16, "efConstruction": 200},
                                           description="index build parameters (HNSW: M, efConstruction; IVF: nlist)")
    search_params: dict[str, int | float] = Field(default_factory=lambda: {"ef": 200},
                                                  description="search parameters (HNSW: ef; IVF: nprobe)")
    batch_size: int = Field(1000, gt=0, description="rows per insert call")

    _variable_name = field_validator("api_key_env")(key_variable_name)

    @field_validator("uri")
    @classmethod
    def _file_or_server(cls, uri: str) -> str:
        if not uri.startswith(SERVER_SCHEMES) and not uri.endswith(".db"):
            raise ValueError(f"{uri!r}: expected a milvus-lite file name ending in .db, or http(s)://host:port of a server")
        return uri

    def is_server(self) -> bool:
        return self.uri.startswith(SERVER_SCHEMES)


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
