"""Per-question retrieval metrics of every method at every grid point, sharing all work that a grid
key does not touch.

The pipeline's own stages do the work (:mod:`rag.runner.pipeline`'s loading and chunk cache,
:class:`rag.runner.retrieval.RetrievalStage` with its index and retrieval caches,
:class:`rag.runner.scoring.RetrievalScorer`); on top of them, within one sweep:

- the data is loaded once, and chunks are computed once per distinct ``chunking`` setting;
- a method's *identity* is what its ranked lists depend on — its settings and those of the inputs
  it fuses (:func:`rag.runner.retrieval.spec_fingerprint`, the retrieval cache's key), the chunk
  set and the depth. A method whose identity was met at an earlier point is not retrieved or scored
  again, and an indexed retriever is handed to every later point where its identity is the same, so a
  fusion parameter re-indexes nothing and a chunk size re-embeds only chunk texts not embedded before
  (the embedding cache is keyed by text). A retriever whose name gets a new identity is not handed
  on any more, since building the new one may replace its on-disk index;
- a handed-on retriever remembers its searches (:class:`RememberedSearches`), so the inputs of a
  fusion are searched once for all the fusion's settings, not once per setting.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from rag.config import RunConfig, bounded_by_chunks
from rag.data import load_dataset
from rag.errors import ConfigError
from rag.io_utils import sha256_text
from rag.retrievers.base import Retriever
from rag.chunking import cached_chunks
from rag.runner.load import select_question_sets
from rag.runner.retrieval import RetrievalStage, spec_fingerprint
from rag.runner.sample import llm_calls_per_question
from rag.runner.scoring import RetrievalScorer
from rag.runner.timing import StageTimer
from rag.types import Chunk, Ranking


class RememberedSearches(Retriever):
    """An indexed retriever that answers a (query, k) it has answered before from memory."""

    def __init__(self, inner: Retriever):
        super().__init__(inner.name, inner.params)
        self.inner = inner
        self._found: dict[tuple[str, int], Ranking] = {}

    def index(self, chunks: Sequence[Chunk], cache_dir: Path) -> None:
        """Already indexed (only indexed retrievers are handed on)."""

    def bind(self, retrievers: Mapping[str, Retriever]) -> None:
        """A fusion's inputs (served rankings, :meth:`RetrievalStage.rankings`) go to the inner retriever."""
        self.inner.bind(retrievers)

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        missing = list(dict.fromkeys(q for q in queries if (q, k) not in self._found))
        if missing:
            self._found.update({(q, k): ranking for q, ranking in zip(missing, self.inner.search(missing, k), strict=True)})
        return [self._found[(q, k)] for q in queries]


class SweepEvaluator:
    """Scores the configured methods for one config (grid point) after another."""

    def __init__(self, base: RunConfig, progress: bool = True):
        self.base = base
        self.progress = progress
        self.timer = StageTimer()
        with self.timer.stage("load"):
            self.dataset = load_dataset(base.dataset, cache_dir=base.cache_dir)
            self.question_sets = select_question_sets(self.dataset, base.question_sets, base.limit)
        self.methods = list(base.methods or [spec.name for spec in base.retrievers])
        if backed := [m for m in self.methods if llm_calls_per_question(base, m)]:
            raise ConfigError("methods", f"{', '.join(backed)} call(s) an LLM or model endpoint per question; a sweep "
                              "retrieves every question at every grid point, so it takes only methods without model "
                              "calls (compare LLM-backed methods with `rag-bench run`, on its question sample)")
        self._chunks: dict[str, tuple[list[Chunk], str]] = {}
        self._scores: dict[str, pd.DataFrame] = {}
        self._retrievers: dict[str, Retriever] = {}

    @property
    def distinct_evaluations(self) -> int:
        """How many (method, identity) pairs were retrieved and scored: the sweep's real work."""
        return len(self._scores)

    def chunks(self, config: RunConfig) -> tuple[list[Chunk], str]:
        key = config.chunking.model_dump_json()
        if key not in self._chunks:
            with self.timer.stage("chunk"):
                self._chunks[key] = cached_chunks(self.dataset.documents, config.chunking, config.cache_dir, self.progress)
        return self._chunks[key]

    @staticmethod
    def identity(config: RunConfig, method: str, chunks_fingerprint: str) -> str:
        return sha256_text(json.dumps(
            {"retriever": spec_fingerprint(config, method), "chunks": chunks_fingerprint, "depth": config.depth},
            sort_keys=True,
        ))[:24]

    def scores(self, config: RunConfig) -> dict[str, tuple[str, pd.DataFrame]]:
        """{method: (identity, per-question metrics)}; the frame has ``question_set``, ``qid`` and one
        column per level x metric (:meth:`RetrievalScorer.columns`)."""
        chunks, fingerprint = self.chunks(config)
        config = bounded_by_chunks(config, len(chunks))
        stage = RetrievalStage(config, chunks, fingerprint, self.timer, self.progress)
        identities = {spec.name: self.identity(config, spec.name, fingerprint) for spec in config.retrievers}
        self._forget_replaced(identities)
        stage.built.update({name: self._retrievers[key] for name, key in identities.items() if key in self._retrievers})
        scorer = RetrievalScorer(chunks, config.evaluation.metrics, config.evaluation.levels,
                                 config.evaluation.convention, config.evaluation.ties)
        texts = [q.text for questions in self.question_sets.values() for q in questions]
        for method in self.methods:
            if identities[method] in self._scores:
                continue
            by_text = stage.rankings(method, texts)
            self._hand_on(stage, identities)  # before the next method: a fusion then binds remembering inputs
            with self.timer.stage("evaluate"):
                self._scores[identities[method]] = pd.concat(
                    [self._score_set(scorer, name, questions, by_text) for name, questions in self.question_sets.items()],
                    ignore_index=True,
                )
        return {method: (identities[method], self._scores[identities[method]]) for method in self.methods}

    def _forget_replaced(self, identities: dict[str, str]) -> None:
        """Drop the kept retrievers of a name that gets a new identity at this point: building the new
        one may replace their on-disk index (a Chroma collection is one per retriever name)."""
        renewed = {name for name, key in identities.items() if key not in self._retrievers}
        for key in [key for key, retriever in self._retrievers.items() if retriever.name in renewed]:
            del self._retrievers[key]

    def _hand_on(self, stage: RetrievalStage, identities: dict[str, str]) -> None:
        """Keep the stage's indexed retrievers, remembering their searches, for this and later points."""
        for name, retriever in stage.built.items():
            remembered = retriever if isinstance(retriever, RememberedSearches) else RememberedSearches(retriever)
            stage.built[name] = self._retrievers[identities[name]] = remembered

    @staticmethod
    def _score_set(scorer: RetrievalScorer, name: str, questions: Sequence, by_text: dict) -> pd.DataFrame:
        frame = scorer.score(questions, {q.qid: by_text[q.text] for q in questions})
        frame.index.name = "qid"
        frame = frame.reset_index()
        frame.insert(0, "question_set", name)
        return frame
