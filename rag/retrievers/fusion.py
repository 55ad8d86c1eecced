"""Hybrid retrieval: fuse the ranked lists of any number of other retrievers, named in params.

Each input retriever is searched to ``depth`` (default 100) results per query; documents outside an
input's list get no contribution from it (RRF) or that list's lowest normalized score (convex).

- ``rrf`` — Reciprocal Rank Fusion (Cormack, Clarke & Büttcher 2009):
  score(d) = sum_i w_i / (k + rank_i(d)), rank 1-based, k = 60 and w_i = 1 by default.
- ``convex`` — convex combination of normalized scores (Bruch, Gai & Ingber 2022):
  score(d) = sum_i w_i * norm_i(d), weights = [alpha, 1 - alpha] for two inputs, else given, else
  1/n each. ``minmax``: (s - min) / (max - min); ``zscore``: (s - mean) / std (population std,
  ddof = 0), both over the input's depth-limited list. A list whose scores are all equal carries no
  ranking information and normalizes to 0 everywhere.

The fused list is ordered by score desc, then chunk id asc, and cut to k.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from rag.errors import BenchError, ConfigError
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, RetrieverParams
from rag.retrievers.ranking import ranking_from_pairs
from rag.types import Chunk, Ranking


class FusionParams(RetrieverParams):
    retrievers: list[str] = Field(min_length=1)
    weights: list[float] | None = None
    depth: int = Field(100, gt=0)

    @model_validator(mode="after")
    def _check_inputs(self) -> "FusionParams":
        if len(set(self.retrievers)) != len(self.retrievers):
            raise ValueError(f"retrievers must be distinct, got {self.retrievers}")
        if self.weights is not None and len(self.weights) != len(self.retrievers):
            raise ValueError(f"weights needs one value per retriever ({len(self.retrievers)}), got {len(self.weights)}")
        return self


class FusionRetriever(Retriever):
    """Searches the bound input retrievers and combines their rankings with :meth:`fuse`."""

    params: FusionParams

    def __init__(self, name: str, params: FusionParams):
        super().__init__(name, params)
        self.inputs: list[Retriever] = []

    def requires(self) -> list[str]:
        return list(self.params.retrievers)

    def bind(self, retrievers: Mapping[str, Retriever]) -> None:
        missing = [name for name in self.params.retrievers if name not in retrievers]
        if missing:
            known = ", ".join(sorted(retrievers)) or "none"
            raise ConfigError(
                f"retrievers.{self.name}.params.retrievers", f"unknown retriever(s) {missing}; configured: {known}"
            )
        self.inputs = [retrievers[name] for name in self.params.retrievers]

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        """Nothing of its own to index: the inputs are indexed by the caller (see :meth:`requires`)."""

    def weights(self) -> list[float]:
        return self.params.weights if self.params.weights is not None else [1.0] * len(self.params.retrievers)

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        if not self.inputs:
            raise BenchError(f"retriever {self.name!r}: search() called before bind()")
        per_input = [retriever.search(queries, self.params.depth) for retriever in self.inputs]
        weights = self.weights()
        return [ranking_from_pairs(self.fuse(list(lists), weights).items(), k) for lists in zip(*per_input)]

    @abstractmethod
    def fuse(self, rankings: list[Ranking], weights: list[float]) -> dict[str, float]:
        """Fused score of every chunk in any of one query's input rankings."""


class RRFParams(FusionParams):
    k: float = Field(60.0, ge=0)


@RETRIEVERS.register("rrf")
class RRFRetriever(FusionRetriever):
    Params = RRFParams
    params: RRFParams

    def fuse(self, rankings: list[Ranking], weights: list[float]) -> dict[str, float]:
        fused: dict[str, float] = {}
        for ranking, weight in zip(rankings, weights):
            for rank, chunk_id in enumerate(ranking.chunk_ids, start=1):
                fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (self.params.k + rank)
        return fused


def minmax(scores: np.ndarray) -> np.ndarray:
    """(s - min) / (max - min); all zeros when max == min."""
    spread = scores.max() - scores.min() if len(scores) else 0.0
    return (scores - scores.min()) / spread if spread > 0 else np.zeros_like(scores)


def zscore(scores: np.ndarray) -> np.ndarray:
    """(s - mean) / std with the population std (ddof 0); all zeros when std == 0."""
    std = scores.std() if len(scores) else 0.0
    return (scores - scores.mean()) / std if std > 0 else np.zeros_like(scores)


NORMALIZATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"minmax": minmax, "zscore": zscore}


class ConvexParams(FusionParams):
    alpha: float | None = Field(None, ge=0, le=1)
    normalization: Literal["minmax", "zscore"] = "minmax"

    @model_validator(mode="after")
    def _check_alpha(self) -> "ConvexParams":
        if self.alpha is not None and self.weights is not None:
            raise ValueError("give either alpha (two retrievers) or weights, not both")
        if self.alpha is not None and len(self.retrievers) != 2:
            raise ValueError(f"alpha needs exactly two retrievers, got {len(self.retrievers)}; use weights")
        return self


@RETRIEVERS.register("convex")
class ConvexRetriever(FusionRetriever):
    Params = ConvexParams
    params: ConvexParams

    def weights(self) -> list[float]:
        if self.params.alpha is not None:
            return [self.params.alpha, 1.0 - self.params.alpha]
        if self.params.weights is not None:
            return self.params.weights
        return [1.0 / len(self.params.retrievers)] * len(self.params.retrievers)

    def fuse(self, rankings: list[Ranking], weights: list[float]) -> dict[str, float]:
        normalize = NORMALIZATIONS[self.params.normalization]
        normalized = [dict(zip(r.chunk_ids, normalize(np.asarray(r.scores, dtype=np.float64)).tolist())) for r in rankings]
        floors = [min(scores.values(), default=0.0) for scores in normalized]
        every_chunk = set().union(*normalized)
        return {
            chunk_id: sum(w * scores.get(chunk_id, floor) for w, scores, floor in zip(weights, normalized, floors))
            for chunk_id in every_chunk
        }
