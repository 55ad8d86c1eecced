"""The report's run facts: one sentence per thing a reader may need to trust or repeat a run (the
"Run facts" list of report.html): its settings, data, questions and their provenance, leak and
validity, skipped input, generation, answer-only baselines, ties crossing a cut-off, the LLM-backed
methods' sample, each approximate search's fidelity to exact search and each int8 embedder's to float32.

The runner fills :class:`RunFigures` from its stages' outputs; this module imports neither the
config nor the data packages (the results package stays above them)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.results.validity import Agreement, validity_fact

SKIPPED_LISTED = 20  # skipped records or files named in the report (the manifest lists more)


@dataclass(frozen=True)
class RunFigures:
    """What the facts state: the run's settings and what its stages measured."""

    name: str
    seed: int
    top_k: int
    depth: int  # bounded by the chunk count
    configured_depth: int
    documents: int
    chunks: int
    question_counts: Mapping[str, int]  # set -> questions (derived sample sets included)
    data_facts: Sequence[str]  # each made set's provenance line and the leak line (rag.data.questions)
    generator: str  # generator_label()
    failed_answers: int
    ties: str  # evaluation.ties
    tied: Mapping[str, Mapping[str, int]]  # method -> set -> lists with a tie crossing a cut-off
    files_read: int | None = None  # a folder of files: files read and skipped
    files_skipped: int | None = None
    set_aside: Mapping[str, int] = field(default_factory=dict)  # kind -> files left out or flagged (files_fact)
    skipped: Mapping[str, int] = field(default_factory=dict)  # records or files skipped as invalid, per kind
    skipped_examples: Sequence[str] = ()
    baselines: Sequence[str] = ()
    agreements: Sequence[Agreement] = ()
    generation_facts: Sequence[str] = ()
    sample_lines: Sequence[str] = ()  # rag.runner.sample.SampledSets.plan_lines
    fidelity: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # method -> HNSW vs exact
    int8_fidelity: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # method -> int8 vs float32


def run_facts(f: RunFigures) -> list[str]:
    """The run facts, in report order (not yet redacted: the caller redacts each line)."""
    return [
        f"config {f.name}, seed {f.seed}, top_k {f.top_k}, depth {f.depth}"
        + (f" (configured {f.configured_depth})" if f.configured_depth != f.depth else "") + ", "
        f"{f.documents} documents, {f.chunks} chunks",
        "questions: " + ", ".join(f"{name} {n}" for name, n in f.question_counts.items()),
        *f.data_facts,
        *([validity_fact(f.agreements)] if f.agreements else []),
        *skipped_facts(f),
        f"generation: {f.generator}; failures: {f.failed_answers}",
        *f.generation_facts,
        *([f"answer-only baselines {', '.join(f.baselines)}: no retrieval, so no retrieval metrics (– in "
           "the tables); closed_book answers without context, oracle from the gold pages' chunks (docs/evaluation.md)"]
          if f.baselines else []),
        "ranked lists in which a tie crosses a metric cut-off (their metrics depend on how ties are broken; "
        f"evaluation.ties: {f.ties}): "
        + "; ".join(f"{method} " + ", ".join(f"{name} {n}" for name, n in by_set.items()) for method, by_set in f.tied.items()),
        *(f"LLM-backed method (runs on the sampled questions only, docs/evaluation.md): {line}" for line in f.sample_lines),
        *(f"HNSW vs exact search ({name}, {x['questions']} sampled questions): recall@{x['k']} "
          f"{x['recall_vs_exact']:.4f}, identical top-{x['k']} lists {x['identical_top_k']:.1%} "
          "(HNSW builds are not bit-reproducible; search: exact is)" for name, x in f.fidelity.items()),
        *(int8_fidelity_fact(name, x) for name, x in f.int8_fidelity.items()),
    ]


def int8_fidelity_fact(name: str, record: Mapping[str, Any]) -> str:
    """One line: an int8 retriever's top-k overlap with float32, identical lists and cosine errors, with
    its sample sizes (:mod:`rag.retrievers.precision_fidelity`)."""
    return (f"int8 vs float32 embeddings ({name}, {record['questions']} sampled questions, exact search over "
            f"{record['chunks']} sampled chunks): top-{record['k']} overlap {record['top_k_overlap']:.4f}, "
            f"identical top-{record['k']} lists {record['identical_top_k']:.1%}, query cosine error mean "
            f"{record['query_cosine_error_mean']:.1e} (max {record['query_cosine_error_max']:.1e}), chunk cosine "
            f"error mean {record['chunk_cosine_error_mean']:.1e}")


def skipped_facts(f: RunFigures) -> list[str]:
    """Files read and skipped, and the records or files skipped as invalid (the first :data:`SKIPPED_LISTED` named)."""
    return [
        *([files_fact(f.files_read, f.files_skipped, f.set_aside, f.chunks)] if f.files_read is not None else []),
        "skipped as invalid (records or files): " + (json.dumps(dict(f.skipped)) if f.skipped else "none"),
        *(f"skipped: {example}" for example in f.skipped_examples[:SKIPPED_LISTED]),
        *([f"... and {len(f.skipped_examples) - SKIPPED_LISTED} more (manifest.json lists them)"]
          if len(f.skipped_examples) > SKIPPED_LISTED else []),
    ]


def set_aside(data: Mapping[str, Any]) -> Counter[str]:
    """Files left out or flagged, by kind, from the manifest's ``data`` record of a folder of files:
    ``generated`` (its ``generated`` map, :mod:`rag.data.generated`), ``twin`` and ``compilation``
    (the kinds of its ``near_duplicates``, :mod:`rag.data.near_duplicates`)."""
    return (Counter(entry["kind"] for entry in data.get("near_duplicates", {}).values())
            + Counter(generated=len(data.get("generated", {}))))


def files_fact(read: int, skipped: int, set_aside: Mapping[str, int], chunks: int | None) -> str:
    """``files: 66 read, 3 skipped, 29 left out as generated by a documentation tool, 62 left out as the same page in
    another format, 1 holding several others (manifest: data.generated, data.near_duplicates), 2228
    chunks``; ``set_aside``: kind -> files (``generated``, :mod:`rag.data.generated`; ``twin`` and
    ``compilation``, :mod:`rag.data.near_duplicates`)."""
    phrases = {"generated": "left out as generated by a documentation tool", "twin": "left out as the same page in another format",
               "compilation": "holding several others"}
    found = [f"{set_aside[kind]} {phrase}" for kind, phrase in phrases.items() if set_aside.get(kind)]
    keys = [*(["data.generated"] if set_aside.get("generated") else []),
            *(["data.near_duplicates"] if set_aside.get("twin") or set_aside.get("compilation") else [])]
    return (f"files: {read} read, {skipped} skipped, "
            + (", ".join(found) + f" (manifest: {', '.join(keys)}), " if found else "") + f"{chunks} chunks")


def generator_label(generator_type: str | None, model: str | None, questions_per_set: int | None) -> str:
    """``local (SmolLM2...), 28 sampled questions per set``; ``off`` without generation (type None)."""
    if generator_type is None:
        return "off"
    return f"{generator_type} ({model or 'no LLM'}), " + (
        f"{questions_per_set} sampled questions per set" if questions_per_set else "all questions")
