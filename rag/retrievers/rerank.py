"""Reranking: a method that reorders the top ``depth`` chunks of another method (its ``input``) by a
reranker's relevance scores.

Config shape::

    {name: rrf_rerank, type: rerank, params: {input: rrf, depth: 50, reranker: {type: endpoint, ...}}}

``reranker`` is one of :data:`rag.rerankers.RERANKERS` (``endpoint``, ``llm``, ``cross_encoder``),
validated by that reranker's own ``Params`` (an unknown key is an error keyed
``retrievers.<name>.params.reranker.<key>``). The input's top ``depth`` chunks (fewer when it
returns fewer) are served to it like a fusion's inputs (:mod:`rag.runner.retrieval`), their texts
come from the chunks given to :meth:`RerankRetriever.index`, and the reranker scores each
(question, chunk text) pair. The result holds exactly those chunks — none added, none dropped — cut
to the ``k`` asked, ordered by the project's one tie rule (:mod:`rag.retrievers.ranking`): reranker
score descending (float32), then the chunk's rank in the input (the input's order decides a tie),
then chunk id descending. A rerank's list is at most ``depth`` long, so measures at cut-offs beyond
``depth`` see only the reranked chunks. A question whose scores cannot order its candidates (the
reranker's own ``Scored.failed``, or :func:`unusable_scores`) gets no ranking, with the reason in
``Ranking.failed``: a failed stage (docs/evaluation.md, "Failed stages"), never the input's order.

Cost: the rerank's own step (the reranker's time, and its requests and tokens in each
:class:`rag.types.Ranking`'s ``llm_calls`` / ``llm_tokens``); the runner adds its input's cost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, ClassVar, Union

import numpy as np
from pydantic import Field, field_validator

from rag.errors import BenchError, ConfigError
from rag.rerankers import RERANKERS, Candidate, Reranker
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, ServedInputsParams
from rag.services import StageServices
from rag.retrievers.ranking import ranking_from_pairs
from rag.types import Chunk, Ranking

FLOAT32_MAX = float(np.finfo(np.float32).max)

RerankerConfig = Annotated[
    Union[tuple(RERANKERS.get(name).Params for name in RERANKERS.names())],  # type: ignore[valid-type]
    Field(discriminator="type"),
]


class RerankParams(ServedInputsParams):
    """``input``: the method whose list is reranked; ``depth``: how many of its top chunks;
    ``reranker``: the reranker's settings (its ``type`` picks it)."""

    inputs_key: ClassVar[str] = "input"
    input: str = Field(min_length=1)
    depth: int = Field(50, gt=0)
    reranker: RerankerConfig

    @field_validator("reranker", mode="before")
    @classmethod
    def _known_type(cls, settings: Any) -> Any:
        kind = settings.get("type") if isinstance(settings, Mapping) else None
        if kind is not None and kind not in RERANKERS:
            raise ValueError(f"unknown reranker type {kind!r}; expected one of: {', '.join(RERANKERS.names())}")
        return settings

    def requires(self) -> list[str]:
        return [self.input]

    def input_depth(self, run_depth: int) -> int:
        return self.depth

    def llm_calls_per_query(self) -> int:
        return self.reranker.calls_per_query(self.depth)


@RETRIEVERS.register("rerank")
class RerankRetriever(Retriever):
    """Reranks its bound input's top ``depth`` (module docstring)."""

    Params = RerankParams
    params: RerankParams

    def __init__(self, name: str, params: RerankParams):
        super().__init__(name, params)
        self.input: Retriever | None = None
        self.services: StageServices | None = None
        self.texts: dict[str, str] = {}
        self._reranker: Reranker | None = None

    def bind(self, retrievers: Mapping[str, Retriever]) -> None:
        if self.params.input not in retrievers:
            known = ", ".join(sorted(retrievers)) or "none"
            raise ConfigError(f"retrievers.{self.name}.params.input",
                              f"unknown retriever {self.params.input!r}; configured: {known}")
        self.input = retrievers[self.params.input]

    def use(self, services: StageServices) -> None:
        self.services = services

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        """Keeps each chunk's text (the reranker reads them); the input is indexed by the caller."""
        self.texts = {chunk.chunk_id: chunk.text for chunk in chunks}

    def reranker(self) -> Reranker:
        """The configured reranker, built on first use."""
        if self._reranker is None:
            settings = self.params.reranker
            self._reranker = RERANKERS.get(settings.type)(settings, self.services, method=self.name)
        return self._reranker

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        if self.input is None:
            raise BenchError(f"retriever {self.name!r}: search() called before bind()")
        lists = self.input.search(queries, self.params.depth)
        candidates = [[Candidate(chunk_id, self.texts[chunk_id]) for chunk_id in ranking.chunk_ids] for ranking in lists]
        to_score = [i for i, found in enumerate(candidates) if found]
        scored = dict(zip(to_score, self.reranker().score([queries[i] for i in to_score], [candidates[i] for i in to_score]),
                          strict=True))
        rankings = []
        for i, ranking in enumerate(lists):
            if i not in scored:
                rankings.append(Ranking([], []))
                continue
            mine = scored[i]
            if mine.failed:
                rankings.append(Ranking([], [], mine.llm_calls, mine.llm_tokens, failed=mine.failed))
                continue
            if len(mine.scores) != len(ranking.chunk_ids):
                raise BenchError(f"retrievers.{self.name}.params.reranker: the reranker returned {len(mine.scores)} scores for "
                                 f"{len(ranking.chunk_ids)} candidates")
            if reason := unusable_scores(mine.scores):
                rankings.append(Ranking([], [], mine.llm_calls, mine.llm_tokens, failed=f"{self.params.reranker.type} "
                                        f"reranker: {reason}"))
                continue
            input_rank = {chunk_id: rank for rank, chunk_id in enumerate(ranking.chunk_ids)}
            reordered = ranking_from_pairs(zip(ranking.chunk_ids, mine.scores), k, tie_break=input_rank.__getitem__)
            rankings.append(replace(reordered, llm_calls=mine.llm_calls, llm_tokens=mine.llm_tokens))
        return rankings


def unusable_scores(scores: Sequence[float]) -> str:
    """Why a question's reranker scores cannot order its candidates ("" when they can): a score that is
    not a finite number within float32's range (the scores are ranked as float32), or scores that differ
    only below float32's resolution, so every one rounds to the same value (the input's order would
    stand under the rerank's name)."""
    values = []
    for score in scores:
        try:
            value = float(score)
        except (TypeError, ValueError, OverflowError):
            return f"a score is not a number: {str(score)[:40]!r}"
        if isinstance(score, bool) or not math.isfinite(value) or abs(value) > FLOAT32_MAX:
            return f"a score is not a finite number within float32's range (+-{FLOAT32_MAX:.3g}): {value!r}"
        values.append(value)
    rounded = {float(np.float32(value)) for value in values}
    if len(rounded) == 1 and len(set(values)) > 1:
        return (f"the {len(values)} scores differ only below float32's resolution (all round to {rounded.pop()!r}), "
                "so they cannot order the candidates")
    return ""
