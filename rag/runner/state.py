"""What the runner's stages hand each other (:mod:`rag.runner.stages`): the run's fixed context and
each stage's typed output, and the run's options and result."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rag.config import RunConfig
from rag.data import Dataset
from rag.generation.base import GenerationResult, Generator
from rag.manifest import Manifest
from rag.results.comparison import Comparison, StatisticsSettings
from rag.results.headline import AnswerFailures
from rag.results.validity import Agreement
from rag.runner.contexts import Rankings
from rag.runner.rundir import RunDirectory
from rag.runner.sample import SampledSets
from rag.runner.scoring import RetrievalScorer
from rag.runner.timing import StageTimer
from rag.secrets import Redactor
from rag.types import Chunk, Question

GeneratorFactory = Callable[[Any, Path], AbstractContextManager[Generator]]


@dataclass(frozen=True)
class RunOptions:
    """Options that are not part of the experiment itself."""

    output_dir: Path | None = None
    resume: bool = False
    skip_invalid: bool = False
    progress: bool = True
    earlier_stages: Mapping[str, float] = field(default_factory=dict)  # seconds of stages run before (questions)
    judgments: Path | None = None  # score against these judgments (rag.judging.apply), not the sets' gold
    trust_llm: bool = False  # an LLM judge's grades count (where no person graded)
    judges: tuple[str, ...] | None = None  # only these judges' grades count
    pool: Path | None = None  # the judged run's directory: its pool says which ungraded questions no grade can change


@dataclass
class RunResult:
    run_dir: Path
    comparison: Comparison
    per_query: pd.DataFrame
    timings: dict[str, float]
    manifest: dict[str, Any]
    answers: AnswerFailures = field(default_factory=lambda: AnswerFailures(requested=0, failed=0))
    headline: list[str] = field(default_factory=list)  # the warnings printed first (rag.results.headline)
    question_figures: list[str] = field(default_factory=list)  # each set's figures, beside the recommendation


@dataclass(frozen=True)
class RunContext:
    """What every stage may read: the run as configured and loaded, and where it records itself."""

    config: RunConfig
    options: RunOptions
    run_dir: RunDirectory
    dataset: Dataset
    question_sets: dict[str, list[Question]]  # the run's own sets (no derived sample set)
    timer: StageTimer
    manifest: Manifest
    generator_factory: GeneratorFactory
    redactor: Redactor


@dataclass(frozen=True)
class Chunked:
    chunks: list[Chunk]
    fingerprint: str
    config: RunConfig  # depth bounded by the chunk count (rag.config.bounded_by_chunks)
    configured_depth: int

    @property
    def chunk_text(self) -> dict[str, str]:
        return {chunk.chunk_id: chunk.text for chunk in self.chunks}


@dataclass(frozen=True)
class Retrieved:
    methods: list[str]
    sampled: SampledSets  # the evaluated sets (the run's and the derived samples) and where each method runs
    rankings: Rankings
    fidelity: dict[str, dict[str, Any]]  # method -> HNSW vs exact search
    int8_fidelity: dict[str, dict[str, Any]]  # method -> int8 vs float32 embeddings (rag.retrievers.precision_fidelity)
    cost_noise: dict[str, float] = field(default_factory=dict)  # method -> ms per question (rag.runner.costs)


@dataclass(frozen=True)
class Generated:
    contexts: Rankings  # the retrieval methods' rankings and the answer-only baselines' lists
    closed_book: set[str]
    generations: dict[str, GenerationResult]
    asked: dict[str, set[str]]  # the run's own set -> ids of the questions answered
    facts: list[str]
    generator_facts: dict[str, Any]  # the generator's own record (the managed server's settings)


@dataclass(frozen=True)
class Evaluated:
    per_query: pd.DataFrame
    scorer: RetrievalScorer
    answer_in_context_ks: list[int]
    tied: dict[str, dict[str, int]]
    judged: bool = False
    facts: tuple[str, ...] = ()  # the judge's agreement line


@dataclass(frozen=True)
class Compared:
    comparison: Comparison
    settings: StatisticsSettings
    agreements: list[Agreement]
