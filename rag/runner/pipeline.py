"""The benchmark pipeline: load -> chunk -> retrieve -> generate -> evaluate -> judge -> statistics
-> report, each stage timed, with progress bars, caches, and a manifest that records how it ended.
Loading happens here, before the run directory exists (bad data leaves no directory behind); the
other stages are :mod:`rag.runner.stages`.

Caches (under ``config.cache_dir``): chunks (keyed by the documents and the chunking settings),
retriever indexes, retrieval results per query, the generator's answers, and the statistics. A warm re-run and a
``--resume`` recompute nothing that is cached; a resumed run re-sends only unanswered requests.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag.chunking import documents_fingerprint
from rag.config import RunConfig, config_record, portable_path
from rag.data import Dataset, load_dataset
from rag.data.questions.leak import leak
from rag.errors import ConfigError
from rag.generation import build_generator
from rag.generation.llm import check_endpoint_keys
from rag.io_utils import sha256_file, sha256_strings
from rag.manifest import Manifest
from rag.runner.answers import answer_power_warning, answered_questions
from rag.runner.contexts import closed_book_methods
from rag.runner.rundir import open_run_directory, resumable
from rag.runner.sample import SampledSets
from rag.runner.stages import run_stages
from rag.runner.state import GeneratorFactory, RunContext, RunOptions, RunResult
from rag.runner.timing import StageTimer
from rag.secrets import Redactor
from rag.types import Question

__all__ = ["RunOptions", "RunResult", "run_benchmark", "select_question_sets"]
log = logging.getLogger(__name__)


def run_benchmark(
    config: RunConfig,
    options: RunOptions = RunOptions(),
    generator_factory: GeneratorFactory = build_generator,
    environ: Mapping[str, str] | None = None,
) -> RunResult:
    """Run the whole benchmark into a run directory (see :mod:`rag.runner.rundir`)."""
    redactor = Redactor.for_config(config, environ)
    check_endpoint_keys(config, environ)  # a remote endpoint without a usable key: fail before any work
    timer = StageTimer()
    timer.seconds.update(options.earlier_stages)
    with timer.stage("load"):  # before the run directory exists: bad data leaves no directory behind
        dataset = load_dataset(config.dataset, skip_invalid=options.skip_invalid)
        question_sets = select_question_sets(dataset, config.question_sets, config.limit)
    if config.generation is not None and (warning := answer_power_warning(
            {name: len(ids) for name, ids in answered_questions(config, question_sets).items()},
            len(config.methods or config.retrievers) + len(config.baselines),
            bool(closed_book_methods(config.baselines)), config.evaluation.alpha, config.evaluation.n_resamples,
            None if config.evaluation.correction == "none" else config.evaluation.correction)):
        log.warning(warning)
    for line in SampledSets.of(config, config.methods or [spec.name for spec in config.retrievers],
                               question_sets).plan_lines(config.cache_dir):
        log.warning("plan: %s", line)  # the CLI prints warnings: the LLM-backed methods' cost, before any work
    plan = redactor.deep({"config": config_record(config), "skip_invalid": options.skip_invalid})
    run_dir = open_run_directory(config.output_dir, config.name, plan, options.output_dir, options.resume)
    with resumable(run_dir.path):
        manifest = Manifest(
            run_dir.path, redactor, config=plan["config"], seed=config.seed, resumed=run_dir.resumed,
            options={"skip_invalid": options.skip_invalid, "resume": options.resume},
            retrievers_resolved={spec.name: spec.params.model_dump(mode="json") for spec in config.retrievers},
            data=data_summary(dataset, question_sets),
        )
        manifest.write()
        timer.on_stage_end = lambda seconds: (manifest.update(timings=seconds), manifest.write())
        try:
            return run_stages(RunContext(config, options, run_dir, dataset, question_sets, timer, manifest,
                                         generator_factory, redactor))
        except KeyboardInterrupt:
            manifest.finish("interrupted", timings=timer.seconds)
            raise
        except BaseException as exc:
            manifest.finish("failed", timings=timer.seconds, error=f"{type(exc).__name__}: {exc}")
            raise


def data_summary(dataset: Dataset, question_sets: Mapping[str, Sequence[Question]]) -> dict[str, Any]:
    """What the manifest records about the data: file and content hashes, counts, skipped records, and
    how each made question set was made (its provenance sidecar), and each set's leak
    (:mod:`rag.data.questions.leak`)."""
    documents = {document.url: document for document in dataset.documents}
    return {
        "name": dataset.name,
        "source_files": {source_name(path, dataset.source_root): sha256_file(path) for path in dataset.source_files},
        **({"files": {"read": dataset.files_read, "skipped": dataset.files_skipped}} if dataset.files_read is not None else {}),
        **({"duplicates": dict(dataset.duplicates), "cleaning": dict(dataset.cleaning),
            "boilerplate_lines": list(dataset.boilerplate)} if dataset.files_read is not None else {}),
        "documents": len(dataset.documents),
        "documents_sha256": documents_fingerprint(dataset.documents),
        "question_sets": {
            name: {"questions": len(qs), "sha256": questions_fingerprint(qs), "leak": leak(qs, documents).summary()}
            for name, qs in question_sets.items()
        },
        "skipped_invalid": dict(dataset.skipped),
        "skipped_examples": list(dataset.skipped_examples),
        "question_provenance": {name: made for name, made in dataset.question_provenance.items() if name in question_sets},
    }


def source_name(path: Path, root: Path | None) -> str:
    """How the manifest names a source file: relative to the data set's folder (POSIX form) when it
    has one, so no absolute path of the user's machine is written for a folder of files."""
    return portable_path(path, root) if root is not None else str(path)


# --------------------------------------------------------------------------------------------------


def select_question_sets(
    dataset: Dataset, wanted: Sequence[str] | None, limit: int | None
) -> dict[str, list[Question]]:
    """The configured question sets (all when ``wanted`` is None), each cut to its first ``limit``."""
    available = dataset.question_sets
    if not available:
        raise ConfigError("dataset.questions", "the data set has no questions; expected a question file "
                          "(our JSONL format, docs/data.md), or a mapping set name -> file")
    names = list(wanted) if wanted is not None else list(available)
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ConfigError("question_sets", f"unknown question set(s) {unknown}; expected among {sorted(available)}")
    return {name: list(available[name])[:limit] if limit else list(available[name]) for name in names}


def questions_fingerprint(questions: Sequence[Question]) -> str:
    return sha256_strings(
        json.dumps([q.qid, q.text, q.gold_urls, q.answers, q.qtype], ensure_ascii=False) for q in questions
    )
