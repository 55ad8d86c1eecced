"""Retrievers: dense (Chroma / exact), sparse BM25, and fusion (RRF, convex), built from config by name.

Importing this package registers every retriever in :data:`RETRIEVERS`; :func:`build_retriever`
turns one config entry into an instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from rag.errors import ConfigError
from rag.retrievers import bm25, dense, fusion  # noqa: F401  (registration)
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, RetrieverParams

__all__ = ["RETRIEVERS", "IndexStorage", "Retriever", "RetrieverParams", "build_retriever"]


def build_retriever(name: str, type: str, params: Mapping[str, Any] | None = None) -> Retriever:
    """The retriever registered as ``type``, named ``name``, with validated ``params``.

    Errors are :class:`ConfigError` keyed by their path, e.g. ``retrievers.sparse.params.k1``.
    """
    cls = RETRIEVERS.get(type, key=f"retrievers.{name}.type")
    try:
        validated = cls.Params.model_validate(dict(params or {}))
    except ValidationError as error:
        first = error.errors()[0]
        location = ".".join(str(part) for part in first["loc"])
        key = f"retrievers.{name}.params" + (f".{location}" if location else "")
        raise ConfigError(key, first["msg"]) from None
    return cls(name, validated)
