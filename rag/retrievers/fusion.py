"""Hybrid retrieval: fuse the ranked lists of any number of other retrievers, named in params.

Each input retriever is searched to ``depth`` results per query (default: the run's ``depth``, 100,
the depth every method returns). L_i is input i's list, w_i its weight (``weights``; 1 each by
default unless stated), norm_i(d) the normalized score of d in L_i (see below).

- ``rrf`` — Reciprocal Rank Fusion (Cormack, Clarke & Büttcher 2009), weighted:
  score(d) = sum_{i: d in L_i} w_i / (k + rank_i(d)), rank 1-based, k = 60. With unit weights it
  is ranx's ``rrf``, and k is Elasticsearch's / OpenSearch's ``rank_constant``; Qdrant ranks from 0,
  so its k is ours + 1.
- ``convex`` — convex combination of normalized scores (Bruch, Gai & Ingber 2022):
  score(d) = sum_i w_i * norm_i(d), weights = [alpha, 1 - alpha] for two inputs, else given, else
  1/n each. A chunk absent from L_i gets L_i's lowest normalized score (0 for min-max). With
  min-max it is ranx's ``wsum`` over ``min-max`` (the scheme of Weaviate's relative score fusion).
- ``combsum`` — CombSUM (Fox & Shaw 1994): score(d) = sum_{i: d in L_i} w_i * norm_i(d); a chunk
  absent from L_i gets nothing from it (ranx ``sum``, and ``wsum`` with weights).
- ``combmnz`` — CombMNZ (Fox & Shaw 1994): score(d) = |{i: d in L_i}| * sum_{i: d in L_i} norm_i(d)
  (ranx ``mnz``). No weights: ranx's ``wmnz`` multiplies by the summed weights instead, and there is
  no agreed weighted form.
- ``dbsf`` — Qdrant's distribution-based score fusion (Qdrant 1.11, ``score_fusion.rs``; the same
  in qdrant-client's ``distribution_based_score_fusion``): CombSUM of
  norm_i(d) = (s - (mu - 3 sigma)) / (6 sigma), mu the mean and sigma the *sample* standard
  deviation (ddof 1) of L_i's scores; 0.5 for every entry of a list of one entry or with sigma = 0.
  Not clipped to [0, 1] (Qdrant does not clip: an outlier beyond 3 sigma scores above 1). Qdrant
  computes in float32; we compute in float64 and round the fused score to float32 once.

Normalizations (``normalization:`` of ``convex``, ``combsum``, ``combmnz``), over the input's
depth-limited list: ``minmax``: (s - min) / (max - min); ``zscore``: (s - mean) / std with the
population std (ddof 0) — ranx's ``min-max`` and ``zmuv``; ``none`` (``combsum``/``combmnz`` only):
the raw scores. A list whose scores are all equal carries no ranking information and normalizes to 0
everywhere under ``minmax`` and ``zscore`` (as ranx, whose denominators are floored at 1e-9).

The fused list follows the project's one tie rule (:mod:`rag.retrievers.ranking`): fused score
descending (float32), then the best rank the chunk had in any input (a chunk some input ranked
higher goes first), then chunk id descending; it is cut to k.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from rag.errors import BenchError, ConfigError
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, ServedInputsParams
from rag.retrievers.ranking import ranking_from_pairs
from rag.types import Chunk, Ranking


class FusionParams(ServedInputsParams):
    retrievers: list[str] = Field(min_length=1)
    weights: list[float] | None = None
    depth: int | None = Field(None, gt=0, description="results taken from each input; default: the run's depth")

    @model_validator(mode="after")
    def _check_inputs(self) -> "FusionParams":
        if len(set(self.retrievers)) != len(self.retrievers):
            raise ValueError(f"retrievers must be distinct, got {self.retrievers}")
        if self.weights is not None and len(self.weights) != len(self.retrievers):
            raise ValueError(f"weights needs one value per retriever ({len(self.retrievers)}), got {len(self.weights)}")
        if self.weights is not None and (min(self.weights) < 0 or max(self.weights) == 0):
            raise ValueError(f"weights {self.weights}: expected weights >= 0, at least one of them > 0 (a negative "
                             "weight ranks a chunk lower the better an input ranks it; all zero ranks nothing)")
        return self

    def requires(self) -> list[str]:
        return list(self.retrievers)

    def input_depth(self, run_depth: int) -> int:
        return self.depth or run_depth


class FusionRetriever(Retriever):
    """Searches the bound input retrievers and combines their rankings with :meth:`fuse`."""

    params: FusionParams

    def __init__(self, name: str, params: FusionParams):
        super().__init__(name, params)
        self.inputs: list[Retriever] = []

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
        depth = self.params.input_depth(k)
        per_input = [retriever.search(queries, depth) for retriever in self.inputs]
        weights = self.weights()
        return [fused_ranking(list(lists), self.fuse(list(lists), weights), k) for lists in zip(*per_input)]

    @abstractmethod
    def fuse(self, rankings: list[Ranking], weights: list[float]) -> dict[str, float]:
        """Fused score of every chunk in any of one query's input rankings."""


class RRFParams(FusionParams):
    """``k`` >= 1, the minimum of Elasticsearch's and OpenSearch's ``rank_constant``: k = 0 is the plain
    reciprocal rank, whose steep first ranks RRF's constant exists to damp (60 in Cormack et al.)."""

    k: float = Field(60.0, ge=1)


@RETRIEVERS.register("rrf")
class RRFRetriever(FusionRetriever):
    Params = RRFParams
    params: RRFParams

    def fuse(self, rankings: list[Ranking], weights: list[float]) -> dict[str, float]:
        return rrf_scores(rankings, weights, self.params.k)


def rrf_scores(rankings: Sequence[Ranking], weights: Sequence[float], k: float) -> dict[str, float]:
    """Weighted RRF (module docstring): sum over the lists holding d of w_i / (k + rank_i(d))."""
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, chunk_id in enumerate(ranking.chunk_ids, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (k + rank)
    return fused


def fused_ranking(rankings: Sequence[Ranking], fused: Mapping[str, float], k: int) -> Ranking:
    """The top-``k`` of one query's fused scores under the fusion tie rule (module docstring):
    fused score desc (float32), then the best rank the chunk had in any of ``rankings``, then id desc."""
    best_rank: dict[str, int] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking.chunk_ids, start=1):
            best_rank[chunk_id] = min(rank, best_rank.get(chunk_id, rank))
    return ranking_from_pairs(fused.items(), k, tie_break=best_rank.__getitem__)


def minmax(scores: np.ndarray) -> np.ndarray:
    """(s - min) / (max - min); all zeros when max == min."""
    spread = scores.max() - scores.min() if len(scores) else 0.0
    return (scores - scores.min()) / spread if spread > 0 else np.zeros_like(scores)


def zscore(scores: np.ndarray) -> np.ndarray:
    """(s - mean) / std with the population std (ddof 0); all zeros when std == 0."""
    std = scores.std() if len(scores) else 0.0
    return (scores - scores.mean()) / std if std > 0 else np.zeros_like(scores)


def three_sigma(scores: np.ndarray) -> np.ndarray:
    """Qdrant's distribution normalization: (s - (mean - 3 std)) / (6 std), std the sample standard
    deviation (ddof 1); 0.5 everywhere for one score or std == 0; not clipped."""
    std = scores.std(ddof=1) if len(scores) > 1 else 0.0
    if std == 0:
        return np.full_like(scores, 0.5)
    low = scores.mean() - 3.0 * std
    return (scores - low) / (6.0 * std)


NORMALIZATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "minmax": minmax, "zscore": zscore, "none": lambda scores: scores, "three_sigma": three_sigma,
}


def normalized(rankings: Sequence[Ranking], normalization: str) -> list[dict[str, float]]:
    """Each input's {chunk id: normalized score} (:data:`NORMALIZATIONS`), computed in float64."""
    normalize = NORMALIZATIONS[normalization]
    return [dict(zip(r.chunk_ids, normalize(np.asarray(r.scores, dtype=np.float64)).tolist())) for r in rankings]


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
        lists = normalized(rankings, self.params.normalization)
        floors = [min(scores.values(), default=0.0) for scores in lists]
        every_chunk = set().union(*lists)
        return {
            chunk_id: sum(w * scores.get(chunk_id, floor) for w, scores, floor in zip(weights, lists, floors))
            for chunk_id in every_chunk
        }


class CombSumParams(FusionParams):
    normalization: Literal["minmax", "zscore", "none"] = "minmax"


@RETRIEVERS.register("combsum")
class CombSumRetriever(FusionRetriever):
    """CombSUM: sum over the lists holding the chunk of w_i * norm_i (module docstring)."""

    Params = CombSumParams
    params: CombSumParams

    def normalization(self) -> str:
        return self.params.normalization

    def fuse(self, rankings: list[Ranking], weights: list[float]) -> dict[str, float]:
        lists = normalized(rankings, self.normalization())
        every_chunk = dict.fromkeys(chunk_id for scores in lists for chunk_id in scores)
        return {
            chunk_id: sum(w * scores[chunk_id] for w, scores in zip(weights, lists) if chunk_id in scores)
            for chunk_id in every_chunk
        }


class CombMNZParams(CombSumParams):
    @model_validator(mode="after")
    def _no_weights(self) -> "CombMNZParams":
        if self.weights is not None:
            raise ValueError("combmnz takes no weights (no agreed weighted CombMNZ); use combsum for weights")
        return self


@RETRIEVERS.register("combmnz")
class CombMNZRetriever(FusionRetriever):
    """CombMNZ: the number of lists holding the chunk times the sum of its normalized scores."""

    Params = CombMNZParams
    params: CombMNZParams

    def fuse(self, rankings: list[Ranking], weights: list[float]) -> dict[str, float]:
        lists = normalized(rankings, self.params.normalization)
        every_chunk = dict.fromkeys(chunk_id for scores in lists for chunk_id in scores)
        fused = {}
        for chunk_id in every_chunk:
            present = [scores[chunk_id] for scores in lists if chunk_id in scores]
            fused[chunk_id] = sum(present) * len(present)
        return fused


class DBSFParams(FusionParams):
    """Qdrant's DBSF has no normalization choice: it is the three-sigma one."""


@RETRIEVERS.register("dbsf")
class DBSFRetriever(CombSumRetriever):
    """Qdrant's distribution-based score fusion: CombSUM of three-sigma-normalized scores."""

    Params = DBSFParams
    params: DBSFParams  # type: ignore[assignment]

    def normalization(self) -> str:
        return "three_sigma"
