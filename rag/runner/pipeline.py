"""The benchmark pipeline: load -> chunk -> retrieve -> generate -> evaluate -> judge -> statistics
-> report, each stage timed, with progress bars, caches, and a manifest that records how it ended.
Loading happens here, before the run directory exists (bad data leaves no directory behind); the
other stages are :mod:`rag.runner.stages`.

Caches (under ``config.cache_dir``): a folder's converted files (:mod:`rag.data.conversions`), chunks
(keyed by the documents and the chunking settings), retriever indexes, retrieval results per query, the
generator's answers, and the statistics. A warm re-run and a
``--resume`` recompute nothing that is cached; a resumed run re-sends only unanswered requests.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from rag.config import RunConfig, config_record, portable_path
from rag.io_utils import sha256_file
from rag.judging.apply import apply_judgments
from rag.judging.pool import POOL_FILE, read_pool
from rag.data import load_dataset
from rag.generation import build_generator
from rag.endpoints.keys import check_endpoint_keys
from rag.manifest import Manifest
from rag.runner.answers import answer_power_warning, answered_questions
from rag.runner.contexts import closed_book_methods
from rag.runner.load import data_summary, select_question_sets
from rag.runner.rundir import open_run_directory, resumable
from rag.runner.stages import run_stages
from rag.runner.state import GeneratorFactory, RunContext, RunOptions, RunResult
from rag.runner.timing import StageTimer
from rag.secrets import Redactor
from rag.topics import QUESTIONS_FILE, write_questions

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
        dataset = load_dataset(config.dataset, skip_invalid=options.skip_invalid, cache_dir=config.cache_dir)
        question_sets = select_question_sets(dataset, config.question_sets, config.limit)
        judged = None
        if options.judgments is not None:
            fixed = read_pool(options.pool).fixed_questions() \
                if options.pool is not None and (options.pool / POOL_FILE).is_file() else frozenset()
            judged = apply_judgments(options.judgments, question_sets, {d.url for d in dataset.documents},
                                     options.trust_llm, options.judges, fixed)
            question_sets = judged.question_sets
    if config.generation is not None and (warning := answer_power_warning(
            {name: len(ids) for name, ids in answered_questions(config, question_sets).items()},
            len(config.methods or config.retrievers) + len(config.baselines),
            bool(closed_book_methods(config.baselines)), config.evaluation.alpha, config.evaluation.n_resamples,
            None if config.evaluation.correction == "none" else config.evaluation.correction)):
        log.warning(warning)
    plan = redactor.deep({"config": config_record(config), "skip_invalid": options.skip_invalid,
                          **({"judgments": {"file": portable_path(options.judgments), "sha256": sha256_file(options.judgments),
                                            "trust_llm": options.trust_llm, "judges": options.judges}}
                             if options.judgments is not None else {})})
    run_dir = open_run_directory(config.output_dir, config.name, plan, options.output_dir, options.resume)
    with resumable(run_dir.path):
        manifest = Manifest(
            run_dir.path, redactor, config=plan["config"], seed=config.seed, resumed=run_dir.resumed,
            options={"skip_invalid": options.skip_invalid, "resume": options.resume},
            retrievers_resolved={spec.name: config_record(spec.params) for spec in config.retrievers},  # paths portable
            data=data_summary(dataset, question_sets),
        )
        if judged is not None:
            manifest.update(judged=judged.facts())
        manifest.write()
        write_questions(run_dir.path / QUESTIONS_FILE, question_sets)  # for any system to answer (rag.topics)
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
