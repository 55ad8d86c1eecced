"""The one cache-completeness rule of an engine's collections (Chroma, Milvus): a retriever's
collection is named ``<prefix><first 32 hex digits of the key>``, the key hashing everything the
contents depend on (:func:`rag.retrievers.index_cache.index_key`).

:meth:`KeyedCollections.ensure_collection` drops the retriever's other (stale) collections, reuses
the collection when it is marked complete and holds every row, and otherwise drops it, builds it
and marks it complete as the very last step, so an interrupted build is never taken for a finished one.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar


class KeyedCollections(ABC):
    """One retriever's collections in one engine; engines implement the five primitives.

    Names are ``rag<joiner><retriever name><joiner><key[:32]>``, the retriever name with every
    character outside ``name_characters`` (the engine's rule) replaced by ``_`` and cut to 48."""

    joiner: ClassVar[str]
    name_characters: ClassVar[str]

    def __init__(self, client, retriever_name: str):
        self.client = client
        safe_name = re.sub(f"[^{self.name_characters}]", "_", retriever_name)[:48]
        self.prefix = f"rag{self.joiner}{safe_name}{self.joiner}"

    def ensure_collection(self, key: str, rows: int, build: Callable[[str], None]) -> bool:
        """Make the collection for ``key`` hold its ``rows`` rows (``build(name)`` fills a new one);
        True when it was (re)built."""
        name = self.prefix + key[:32]
        for existing in self.collection_names():
            if existing.startswith(self.prefix) and existing != name:
                self.drop(existing)
        if self.is_complete(name, rows):
            self.use(name)
            return False
        self.drop(name)
        build(name)
        self.mark_complete(name, rows)
        return True

    @abstractmethod
    def collection_names(self) -> list[str]:
        """Every collection's name in the engine (or its database)."""

    @abstractmethod
    def drop(self, name: str) -> None:
        """Delete the collection ``name`` if it exists."""

    @abstractmethod
    def is_complete(self, name: str, rows: int) -> bool:
        """True when ``name`` exists, is marked complete and holds ``rows`` rows."""

    @abstractmethod
    def use(self, name: str) -> None:
        """Open the complete collection ``name`` for searching."""

    @abstractmethod
    def mark_complete(self, name: str, rows: int) -> None:
        """Mark ``name`` complete: the last step of a build."""
