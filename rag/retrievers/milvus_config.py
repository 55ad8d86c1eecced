"""Where a retriever's Milvus collection lives and how it is indexed: the config alone, without
pymilvus. The vector store registry (:mod:`rag.retrievers.vector_store`) and the store itself
(:mod:`rag.retrievers.milvus_store`, which the registry loads only when a store is opened) both
import it from here, so imports point down: the store never imports the registry.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rag.endpoints.settings import key_variable_name
from rag.validation import ConfigModel

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
