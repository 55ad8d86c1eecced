"""The query transform interface and its registry: a question -> what a retriever searches for it.

A query transform sits before a retriever's search, configured in the retriever's params as
``query: {type: <name>, ...}`` (``{name: bm25_rm3, type: bm25, params: {query: {type: rm3}}}``,
``{name: dense_hyde, type: dense, params: {model: ..., query: {type: hyde}}}``). It receives the
questions of a search and the retriever it belongs to, and returns the retriever's rankings
(:class:`rag.types.Ranking`, with the LLM calls and tokens it spent per question): it may search the
retriever more than once (multi-query), re-weight the query's terms from a first pass (RM3), or
search with a vector of its own (HyDE). Which retriever types a transform applies to is its
``Params.retriever_types``; a transform on another type is a configuration error.

Adding a transform means writing one class decorated with ``@QUERY_TRANSFORMS.register("name")``
whose ``Params`` (a :class:`rag.retrievers.query_transforms.config.QueryTransformParams` with ``type:
Literal["name"]``, defined in :mod:`rag.retrievers.query_transforms.config`, which rag.retrievers imports) is the
``query:`` mapping, and adding that ``Params`` to :data:`rag.retrievers.query_transforms.config.QueryTransformConfig`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rag.retrievers.query_transforms.config import QueryTransformParams
from rag.registry import Registry
from rag.types import Ranking

if TYPE_CHECKING:  # rag.retrievers imports this module: no import back at run time
    from rag.services import StageServices


class QueryTransform(ABC):
    Params: ClassVar[type[QueryTransformParams]] = QueryTransformParams

    def __init__(self, method: str, params: QueryTransformParams):
        """``method``: the name of the retriever (method) it belongs to (names its cache and logs)."""
        self.method = method
        self.params = params
        self.services: "StageServices | None" = None

    def use(self, services: "StageServices") -> None:
        """Receive the run's services (the LLM transforms need them; offline ones ignore them)."""
        self.services = services

    @abstractmethod
    def search(self, retriever, queries: Sequence[str], k: int) -> list[Ranking]:
        """``retriever``'s top-``k`` for each question, through this transform."""


QUERY_TRANSFORMS: Registry[QueryTransform] = Registry("query transform")


class TransformedSearch:
    """Mixin of the retrievers that accept a ``query:`` transform: ``search`` goes through the
    transform when one is configured, else straight to ``search_plain``. The class sets
    ``self.transform`` (None for none) in its constructor with :func:`build_transform`."""

    transform: QueryTransform | None

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        if self.transform is None:
            return self.search_plain(queries, k)
        return self.transform.search(self, queries, k)

    def search_plain(self, queries: Sequence[str], k: int) -> list[Ranking]:
        raise NotImplementedError

    def use(self, services: "StageServices") -> None:
        if self.transform is not None:
            self.transform.use(services)


def build_transform(method: str, query: QueryTransformParams | None) -> QueryTransform | None:
    """The transform configured by ``query`` for the method named ``method`` (None for none)."""
    if query is None:
        return None
    return QUERY_TRANSFORMS.get(query.type, key=f"retrievers.{method}.params.query.type")(method, query)
