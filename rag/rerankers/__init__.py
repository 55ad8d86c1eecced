"""Rerankers (``reranker:`` of a ``rerank`` method): registered in :data:`RERANKERS`.

Importing this package registers every reranker: ``endpoint`` (:mod:`rag.rerankers.endpoint`)."""

from rag.rerankers import endpoint  # noqa: F401  (registration)
from rag.rerankers.base import RERANKERS, Candidate, Reranker, RerankerParams, Scored

__all__ = ["RERANKERS", "Candidate", "Reranker", "RerankerParams", "Scored"]
