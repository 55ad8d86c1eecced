"""Rerankers (``reranker:`` of a ``rerank`` method): registered in :data:`RERANKERS`.

Importing this package registers every reranker: ``endpoint`` (:mod:`rag.rerankers.endpoint`),
``llm`` (:mod:`rag.rerankers.llm`) and ``cross_encoder`` (:mod:`rag.rerankers.cross_encoder`)."""

from rag.rerankers import cross_encoder, endpoint, llm  # noqa: F401  (registration)
from rag.rerankers.base import RERANKERS, Candidate, Reranker, RerankerParams, Scored

__all__ = ["RERANKERS", "Candidate", "Reranker", "RerankerParams", "Scored"]
