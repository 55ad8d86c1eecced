"""The reranker interface and its registry: (question, candidate chunks with their texts) -> one
relevance score per candidate.

A reranker never adds or drops a chunk: the ``rerank`` method (:mod:`rag.retrievers.rerank`)
hands it the top ``depth`` of its input method and orders exactly those candidates by the scores it
returns (the project's one tie rule, :mod:`rag.retrievers.ranking`).

Adding a reranker means writing one class decorated with ``@RERANKERS.register("name")`` whose
``Params`` model is the ``reranker:`` mapping of a rerank method's config.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rag.registry import Registry
from rag.services import StageServices
from rag.validation import ConfigModel


class RerankerParams(ConfigModel):
    """Base of every reranker's parameter model (the ``reranker:`` mapping): unknown keys are errors."""

    type: str

    def calls_per_query(self, depth: int) -> int:
        """Requests to an LLM or model endpoint per question when reranking ``depth`` candidates."""
        return 0


@dataclass(frozen=True)
class Candidate:
    """One chunk to score: its id and the text the reranker reads."""

    chunk_id: str
    text: str


@dataclass(frozen=True)
class Scored:
    """A reranker's answer for one question: one score per candidate, in the candidates' order, and
    what it cost (requests sent and their prompt + completion tokens). ``failed``: why the replies
    gave no usable score for this question ("" when they did; ``scores`` is then empty): a failed
    stage, never a stand-in score."""

    scores: list[float]
    llm_calls: int = 0
    llm_tokens: int = 0
    failed: str = ""


class Reranker(ABC):
    Params: ClassVar[type[RerankerParams]] = RerankerParams

    def __init__(self, params: RerankerParams, services: StageServices | None = None, method: str = "rerank"):
        """``method``: the name of the rerank method using this reranker (error messages name its
        settings by :attr:`key`; its LLM outputs are cached under ``<cache_dir>/stages/<method>``)."""
        self.params = params
        self.services = services
        self.method = method

    @property
    def key(self) -> str:
        """The config path of these settings, e.g. ``retrievers.bm25_rerank.params.reranker``."""
        return f"retrievers.{self.method}.params.reranker"

    @abstractmethod
    def score(self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]]) -> list[Scored]:
        """One :class:`Scored` per question, each with one score per candidate (higher = more relevant)."""

    def close(self) -> None:
        """Release servers and clients."""


RERANKERS: Registry[Reranker] = Registry("reranker")
