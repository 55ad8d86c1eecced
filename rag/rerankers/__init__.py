"""Rerankers (``reranker:`` of a ``rerank`` method): registered in :data:`RERANKERS`."""

from rag.rerankers.base import RERANKERS, Candidate, Reranker, RerankerParams, Scored

__all__ = ["RERANKERS", "Candidate", "Reranker", "RerankerParams", "Scored"]
