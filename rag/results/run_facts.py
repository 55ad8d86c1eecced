"""The report's run facts: one sentence per thing a reader may need to trust or repeat a run (the
"Run facts" list of report.html): its settings, data, questions and their provenance, leak and
validity, skipped input, generation, answer-only baselines, ties crossing a cut-off, the LLM-backed
methods' sample, and each approximate search's fidelity to exact search."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.config import RunConfig
from rag.data import Dataset
from rag.data.questions.leak import leak_fact
from rag.data.questions.provenance import provenance_fact
from rag.results.validity import Agreement, validity_fact

SKIPPED_LISTED = 20  # skipped records or files named in the report (the manifest lists more)


@dataclass(frozen=True)
class RunFigures:
    """What the stages measured that the facts state (each stage's own record, read as is)."""

    configured_depth: int  # depth as configured, before bounding by the chunk count
    chunks: int
    question_counts: Mapping[str, int]  # set -> questions (derived sample sets included)
    set_leaks: Mapping[str, Mapping[str, Any]]  # the manifest's data.question_sets (set -> {"leak": summary})
    failed_answers: int
    tied: Mapping[str, Mapping[str, int]]  # method -> set -> lists with a tie crossing a cut-off
    fidelity: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # method -> HNSW vs exact
    agreements: Sequence[Agreement] = ()
    generation_facts: Sequence[str] = ()
    sample_lines: Sequence[str] = ()  # rag.runner.sample.SampledSets.plan_lines


def run_facts(config: RunConfig, dataset: Dataset, figures: RunFigures) -> list[str]:
    """The run facts, in report order (not yet redacted: the caller redacts each line)."""
    f = figures
    return [
        f"config {config.name}, seed {config.seed}, top_k {config.top_k}, depth {config.depth}"
        + (f" (configured {f.configured_depth})" if f.configured_depth != config.depth else "") + ", "
        f"{len(dataset.documents)} documents, {f.chunks} chunks",
        "questions: " + ", ".join(f"{name} {n}" for name, n in f.question_counts.items()),
        *(provenance_fact(name, made) for name, made in dataset.question_provenance.items() if name in f.question_counts),
        leak_fact({name: entry["leak"] for name, entry in f.set_leaks.items()}),
        *([validity_fact(f.agreements)] if f.agreements else []),
        *skipped_facts(dataset, f.chunks),
        f"generation: {generator_label(config)}; failures: {f.failed_answers}",
        *f.generation_facts,
        *([f"answer-only baselines {', '.join(config.baselines)}: no retrieval, so no retrieval metrics (– in "
           "the tables); closed_book answers without context, oracle from the gold pages' chunks (docs/evaluation.md)"]
          if config.baselines else []),
        "ranked lists in which a tie crosses a metric cut-off (their metrics depend on how ties are broken; "
        f"evaluation.ties: {config.evaluation.ties}): "
        + "; ".join(f"{method} " + ", ".join(f"{name} {n}" for name, n in by_set.items()) for method, by_set in f.tied.items()),
        *(f"LLM-backed method (runs on the sampled questions only, docs/evaluation.md): {line}" for line in f.sample_lines),
        *(f"HNSW vs exact search ({name}, {x['questions']} sampled questions): recall@{x['k']} "
          f"{x['recall_vs_exact']:.4f}, identical top-{x['k']} lists {x['identical_top_k']:.1%} "
          "(HNSW builds are not bit-reproducible; search: exact is)" for name, x in f.fidelity.items()),
    ]


def skipped_facts(dataset: Dataset, chunks: int) -> list[str]:
    """Files read and skipped, and the records or files skipped as invalid (the first :data:`SKIPPED_LISTED` named)."""
    return [
        *([f"files: {dataset.files_read} read, {dataset.files_skipped} skipped, {chunks} chunks"]
          if dataset.files_read is not None else []),
        "skipped as invalid (records or files): " + (json.dumps(dict(dataset.skipped)) if dataset.skipped else "none"),
        *(f"skipped: {example}" for example in dataset.skipped_examples[:SKIPPED_LISTED]),
        *([f"... and {len(dataset.skipped_examples) - SKIPPED_LISTED} more (manifest.json lists them)"]
          if len(dataset.skipped_examples) > SKIPPED_LISTED else []),
    ]


def generator_label(config: RunConfig) -> str:
    """``local (SmolLM2...), 28 sampled questions per set``, or ``off`` without generation."""
    if config.generation is None:
        return "off"
    generator = config.generation.generator
    sample = config.generation.questions_per_set
    return f"{generator.type} ({getattr(generator, 'model', 'no LLM')}), " + (
        f"{sample} sampled questions per set" if sample else "all questions"
    )
