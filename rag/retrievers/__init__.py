"""Retrievers: dense (Chroma / Milvus / exact), sparse BM25, fusion (RRF, convex, CombSUM, CombMNZ, DBSF),
Milvus's engine-native BM25 and hybrid search, and the user's own retriever (a TREC run file, a search
endpoint, PostgreSQL full-text search), built from config by name.

Importing this package registers every retriever in :data:`RETRIEVERS`; :func:`build_retriever`
turns one config entry into an instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from rag.retrievers import bm25, dense, fusion, rerank, run_file  # noqa: F401  (registration)
from rag.retrievers.query_transforms import hyde, multi_query, rm3  # noqa: F401,E402  (registration; after the retrievers they use)
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, RetrieverParams

from rag.validation import config_error_from_validation

# Milvus's engine-native methods (optional extra): imported on first use, so pymilvus is never loaded otherwise.
for _name in ("milvus_bm25", "milvus_hybrid"):
    RETRIEVERS.register_lazy(_name, "rag.retrievers.milvus")
# An external system's search endpoint, and PostgreSQL's full-text search (psycopg), also on first use.
RETRIEVERS.register_lazy("http", "rag.retrievers.http_search")
RETRIEVERS.register_lazy("postgres_fts", "rag.retrievers.postgres_fts")

__all__ = ["RETRIEVERS", "IndexStorage", "Retriever", "RetrieverParams", "build_retriever"]


def build_retriever(name: str, type: str, params: RetrieverParams | Mapping[str, Any] | None = None) -> Retriever:
    """The retriever registered as ``type``, named ``name``, with ``params`` (a mapping is validated
    by the type's ``Params``; an already validated ``Params`` instance, as a loaded run config
    holds, is used as is).

    Errors are :class:`ConfigError` keyed by their path, e.g. ``retrievers.sparse.params.k1``.
    """
    cls = RETRIEVERS.get(type, key=f"retrievers.{name}.type")
    if isinstance(params, cls.Params):
        return cls(name, params)
    try:
        validated = cls.Params.model_validate(dict(params or {}))
    except ValidationError as error:
        raise config_error_from_validation(error, dict(params or {}), cls.Params, prefix=f"retrievers.{name}.params") from None
    return cls(name, validated)
