"""Rerankers (``reranker:`` of a ``rerank`` method): registered in :data:`RERANKERS`.

Importing this package registers every reranker: ``endpoint`` (:mod:`rag.rerankers.endpoint`), ``llm`` (:mod:`rag.rerankers.llm`)."""

from rag.rerankers import endpoint, llm  # noqa: F401  (registration)
from rag.rerankers.base import RERANKERS, Candidate, Reranker, RerankerParams, Scored

__all__ = ["RERANKERS", "Candidate", "Reranker", "RerankerParams", "Scored"]
