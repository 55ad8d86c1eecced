"""The benchmark pipeline: load -> chunk -> index -> retrieve -> generate -> evaluate -> statistics
-> report, each stage timed, with progress bars, caches, and a manifest that records how it ended.

Caches (under ``config.cache_dir``): chunks (keyed by the documents and the chunking settings),
retriever indexes, retrieval results per query, the generator's answers, and the statistics. A warm re-run and a
``--resume`` recompute nothing that is cached; a resumed run re-sends only unanswered requests.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from evaluation import ANSWER_METRICS, answer_scores
from evaluation.ties import ties_crossing
from rag.chunking import cached_chunks, documents_fingerprint
from rag.config import RunConfig, bounded_by_chunks, config_record, portable_path
from rag.data import Dataset, load_dataset
from rag.data.questions.leak import leak, leak_fact
from rag.data.questions.provenance import provenance_fact
from rag.errors import ConfigError
from rag.generation import build_generator
from rag.generation.base import GenerationResult, Generator
from rag.generation.judge import agreement, agreement_line, judge_generator_config, judge_per_query
from rag.generation.llm import check_endpoint_keys
from rag.generation.sizing import size_generator
from rag.io_utils import atomic_write_bytes, atomic_write_text, sha256_file, sha256_strings, sha256_text
from rag.manifest import Manifest
from rag.runner.answers import answer_power_warning, answer_sample, generate_answers, request_key
from rag.runner.contexts import answer_in_context_columns, baseline_rankings, closed_book_methods, generation_requests
from rag.runner.generation_stats import GenerationCounts
from rag.runner.retrieval import CachedRanking, RetrievalStage
from rag.runner.rundir import RunDirectory, open_run_directory, resumable
from rag.results.fidelity_facts import int8_fidelity_fact
from rag.results import schema
from rag.results.comparison import Comparison, StatisticsSettings, compare
from rag.results.csv_files import write_csv
from rag.results.recommendation import default_primary, recommend
from rag.results.curves import curves
from rag.results.format import legend
from rag.results.headline import AnswerFailures, QuestionFigures, cannot_judge, figure_lines, headline
from rag.results.html import write_html_report
from rag.results.validity import agreement_rows, run_validity, validity_fact
from rag.results.writers import write_comparison, write_trec_files
from rag.runner.scoring import RetrievalScorer, url_ranking
from rag.runner.statistics_cache import cached_comparison
from rag.runner.timing import StageTimer
from rag.secrets import Redactor
from rag.types import Question

log = logging.getLogger(__name__)
SKIPPED_LISTED = 20  # skipped records or files named in the report (the manifest lists more)
GeneratorFactory = Callable[[Any, Path], AbstractContextManager[Generator]]


@dataclass(frozen=True)
class RunOptions:
    """Options that are not part of the experiment itself."""

    output_dir: Path | None = None
    resume: bool = False
    skip_invalid: bool = False
    progress: bool = True
    earlier_stages: Mapping[str, float] = field(default_factory=dict)  # seconds of stages run before (questions)


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
            return _run_stages(config, options, run_dir, dataset, question_sets, timer, manifest, generator_factory,
                               redactor)
        except KeyboardInterrupt:
            manifest.finish("interrupted", timings=timer.seconds)
            raise
        except BaseException as exc:
            manifest.finish("failed", timings=timer.seconds, error=f"{type(exc).__name__}: {exc}")
            raise


def answered_questions(config: RunConfig, question_sets: Mapping[str, Sequence[Question]]) -> dict[str, set[str]]:
    """The ids of the questions that get generated answers, per set: a seeded sample of
    ``generation.questions_per_set`` in the sets of ``generation.question_sets`` (default every set)."""
    assert config.generation is not None
    chosen = config.generation.question_sets
    return {name: answer_sample(qs, config.generation.questions_per_set, config.seed, name)
            if chosen is None or name in chosen else set() for name, qs in question_sets.items()}


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


def _run_stages(
    config: RunConfig,
    options: RunOptions,
    run_dir: RunDirectory,
    dataset: Dataset,
    question_sets: dict[str, list[Question]],
    timer: StageTimer,
    manifest: Manifest,
    generator_factory: GeneratorFactory,
    redactor: Redactor,
) -> RunResult:
    with timer.stage("chunk"):
        chunks, chunks_fingerprint = cached_chunks(dataset.documents, config.chunking, config.cache_dir, options.progress)
    manifest.update(chunks={"count": len(chunks), "sha256": chunks_fingerprint})
    configured_depth = config.depth
    config = bounded_by_chunks(config, len(chunks))
    if configured_depth > config.depth and configured_depth != RunConfig.model_fields["depth"].default:
        log.warning("depth %d exceeds the %d chunks of the corpus; every method keeps all of them (depth %d)",
                    configured_depth, len(chunks), config.depth)
    manifest.update(depth=config.depth)

    methods = config.methods or [spec.name for spec in config.retrievers]
    retrieval = RetrievalStage(config, chunks, chunks_fingerprint, timer, options.progress)
    rankings: dict[str, dict[str, dict[str, CachedRanking]]] = {}
    for method in methods:
        rankings[method] = {}
        for set_name, questions in question_sets.items():
            by_text = retrieval.rankings(method, [q.text for q in questions])
            rankings[method][set_name] = {q.qid: by_text[q.text] for q in questions}

    all_questions = [q.text for questions in question_sets.values() for q in questions]
    with timer.stage("hnsw fidelity"):
        fidelity = {m: f for m in methods if (f := retrieval.hnsw_fidelity(m, all_questions)) is not None}
    manifest.update(hnsw_vs_exact=fidelity)
    with timer.stage("int8 fidelity"):
        int8 = {m: f for m in methods if (f := retrieval.int8_fidelity(m, all_questions)) is not None}
    manifest.update(int8_vs_float32=int8)

    chunk_text = {chunk.chunk_id: chunk.text for chunk in chunks}
    contexts = {**rankings, **baseline_rankings(config.baselines, question_sets, chunks)}  # + answer-only methods
    closed_book = closed_book_methods(config.baselines)
    generations: dict[str, GenerationResult] = {}
    generation_facts: list[str] = []
    generator_facts: dict[str, Any] = {}  # the generator's own record (the managed server's settings)
    asked: dict[str, set[str]] = {name: set() for name in question_sets}
    if config.generation is not None:
        asked = answered_questions(config, question_sets)
        requests = generation_requests(contexts, question_sets, asked, config.top_k, chunk_text, closed_book)
        generator_config = size_generator(config.generation.generator, config.top_k, config.chunking.max_tokens)
        with timer.stage("generate"):
            with generator_factory(generator_config, config.cache_dir / "generation") as generator:
                generations = generate_answers(generator, requests, options.progress)
                generator_facts = generator.run_facts()
        counts = GenerationCounts.of(generations.values())
        generation_facts = counts.facts(getattr(generator_config, "context_token_budget", None))
        manifest.update(generator_resolved=generator_config.model_dump(mode="json"), generation_counts=counts.as_dict())

    with timer.stage("evaluate"):
        scorer = RetrievalScorer(chunks, config.evaluation.metrics, config.evaluation.levels,
                                 config.evaluation.convention, config.evaluation.ties)
        per_query = build_per_query(
            config, question_sets, [*methods, *config.baselines], contexts, generations, asked, scorer, redactor,
            answer_only=config.baselines,
        )
        answer_in_context_ks = config.evaluation.answer_in_context or [config.top_k]
        per_query = answer_in_context_columns(per_query, contexts, question_sets, chunk_text, answer_in_context_ks,
                                              config.evaluation.answer_normalization, closed_book)
        tied = count_ties_crossing(rankings, [k for k in scorer.cutoffs() if k is not None])
    manifest.update(lists_with_tie_crossing_cutoff=tied)

    judged = config.generation is not None and config.evaluation.judge is not None
    if judged:
        with timer.stage("judge"):
            references = {(name, q.qid): q.answers for name, qs in question_sets.items() for q in qs if q.answers}
            with generator_factory(judge_generator_config(config.evaluation.judge), config.cache_dir / "judge") as judge:
                per_query = judge_per_query(per_query, references, judge)
        judge_agreement = agreement(per_query)
        manifest.update(judge_agreement=judge_agreement)
        generation_facts.append(agreement_line(judge_agreement))

    with timer.stage("statistics"):
        settings = StatisticsSettings(
            confidence=config.evaluation.confidence,
            n_resamples=config.evaluation.n_resamples,
            alpha=config.evaluation.alpha,
            correction=None if config.evaluation.correction == "none" else config.evaluation.correction,
            seed=config.seed,
        )
        metric_columns = scorer.columns() + [f"answer_in_context@{k}" for k in answer_in_context_ks] + (
            list(ANSWER_METRICS) if config.generation is not None else []) + ([schema.JUDGE] if judged else [])
        control = next(iter(sorted(closed_book)), None)
        primary = config.evaluation.primary or default_primary(metric_columns, config.top_k)
        comparison = cached_comparison(per_query, metric_columns, settings, config.cache_dir, primary, control)
        made_sets = [name for name in question_sets if name in dataset.question_provenance]
        agreements = run_validity(per_query, made_sets, [name for name in question_sets if name not in made_sets],
                                  primary, settings) if primary in per_query else []
        if agreements:
            manifest.update(question_validity=agreement_rows(agreements))

    with timer.stage("report"):
        level = "+".join(config.evaluation.levels)
        answers = AnswerFailures.of(per_query)
        primary = comparison.recommendation.primary if comparison.recommendation else None
        set_leaks = manifest.data["data"]["question_sets"]  # measured once, by data_summary
        figures = {name: QuestionFigures.of(len(qs), dataset.question_provenance.get(name), set_leaks[name]["leak"]["share"])
                   for name, qs in question_sets.items()}
        unjudged = cannot_judge(comparison.table, primary, figures)
        if unjudged and primary is not None:  # the overall rule reads only the sets that can judge
            comparison.recommendation = recommend(comparison.table, comparison.pairwise, primary, settings.alpha, unjudged)
        warnings = [redactor.text(line) for line in headline(answers, unjudged)]
        set_figures = figure_lines(comparison.table, primary, figures)
        evaluated = {method: rankings[method] for method in methods}
        write_comparison(comparison, run_dir.path, config.evaluation.convention, level)
        write_csv(per_query, run_dir.path / "per_query.csv")
        write_trec_files(run_dir.path / "runs", question_sets, evaluated, scorer.chunk_url, scorer.chunks_of_url,
                         scorer.cutoffs())
        curve_table = curves(question_sets, evaluated, scorer.chunk_url, config.depth)
        write_csv(curve_table, run_dir.path / "curves.csv")
        facts = [
            f"config {config.name}, seed {config.seed}, top_k {config.top_k}, depth {config.depth}"
            + (f" (configured {configured_depth})" if configured_depth != config.depth else "") + ", "
            f"{len(dataset.documents)} documents, {len(chunks)} chunks",
            "questions: " + ", ".join(f"{name} {len(qs)}" for name, qs in question_sets.items()),
            *(provenance_fact(name, made) for name, made in dataset.question_provenance.items() if name in question_sets),
            leak_fact({name: entry["leak"] for name, entry in set_leaks.items()}),
            *([validity_fact(agreements)] if agreements else []),
            *([f"files: {dataset.files_read} read, {dataset.files_skipped} skipped, {len(chunks)} chunks"]
              if dataset.files_read is not None else []),
            "skipped as invalid (records or files): " + (json.dumps(dict(dataset.skipped)) if dataset.skipped else "none"),
            *(f"skipped: {example}" for example in dataset.skipped_examples[:SKIPPED_LISTED]),
            *([f"... and {len(dataset.skipped_examples) - SKIPPED_LISTED} more (manifest.json lists them)"]
              if len(dataset.skipped_examples) > SKIPPED_LISTED else []),
            f"generation: {_generator_label(config)}; failures: {answers.failed}",
            *generation_facts,
            *([f"answer-only baselines {', '.join(config.baselines)}: no retrieval, so no retrieval metrics (– in "
               "the tables); closed_book answers without context, oracle from the gold pages' chunks (docs/evaluation.md)"]
              if config.baselines else []),
            "ranked lists in which a tie crosses a metric cut-off (their metrics depend on how ties are broken; "
            f"evaluation.ties: {config.evaluation.ties}): "
            + "; ".join(f"{method} " + ", ".join(f"{name} {n}" for name, n in by_set.items()) for method, by_set in tied.items()),
            *(f"HNSW vs exact search ({name}, {f['questions']} sampled questions): recall@{f['k']} "
              f"{f['recall_vs_exact']:.4f}, identical top-{f['k']} lists {f['identical_top_k']:.1%} "
              "(HNSW builds are not bit-reproducible; search: exact is)" for name, f in fidelity.items()),
            *(int8_fidelity_fact(name, f) for name, f in int8.items()),
        ]
        write_html_report(
            run_dir.path / "report.html", f"Retrieval benchmark: {data_label(config, dataset)}", comparison, per_query,
            curve_table, legend(comparison, config.evaluation.convention, level), [redactor.text(f) for f in facts],
            hit_metric=_hit_column(scorer, config.top_k), chunk_text=chunk_text,
            chunk_url=scorer.chunk_url, top_k=config.top_k, headline=warnings, question_figures=set_figures,
        )
    manifest.finish(
        "partial" if answers.failed else "complete",
        timings=timer.seconds,
        methods=methods,
        generation={"requests": len(generations), **answers.as_dict(), **generator_facts},
        headline=warnings,
    )
    return RunResult(run_dir.path, comparison, per_query, dict(timer.seconds), manifest.data, answers, warnings,
                     set_figures)


def data_label(config: RunConfig, dataset: Dataset) -> str:
    """What the report's title names: the folder's name for a folder of files (``--docs DIR``), the
    data set's configured name, else the config's name."""
    if dataset.source_root is not None or getattr(config.dataset.root, "name", None):
        return dataset.name
    return config.name


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




def count_ties_crossing(
    rankings: Mapping[str, Mapping[str, Mapping[str, CachedRanking]]], cutoffs: Sequence[int]
) -> dict[str, dict[str, int]]:
    """Per method and question set: how many chunk lists hold a group of equally scored (float32)
    chunks that straddles one of the cut-offs (:func:`evaluation.ties.ties_crossing`)."""
    return {
        method: {
            set_name: sum(ties_crossing({qid: dict(zip(r.chunk_ids, r.scores)) for qid, r in by_qid.items()}, cutoffs).values())
            for set_name, by_qid in by_set.items()
        }
        for method, by_set in rankings.items()
    }


def _generator_label(config: RunConfig) -> str:
    if config.generation is None:
        return "off"
    generator = config.generation.generator
    sample = config.generation.questions_per_set
    return f"{generator.type} ({getattr(generator, 'model', 'no LLM')}), " + (
        f"{sample} sampled questions per set" if sample else "all questions"
    )


def _hit_column(scorer: RetrievalScorer, top_k: int) -> str:
    """The column used to tell retrieval misses from answer misses: URL-level hit@top_k (a gold page
    among the chunks the generator saw) if configured, else another URL-level hit, recall or MRR."""
    columns = scorer.columns()
    if f"hit@{top_k}" in columns:
        return f"hit@{top_k}"
    for prefix in ("hit@", "recall@", "mrr"):
        for column in columns:
            if column.startswith(prefix):
                return column
    return columns[0]


def build_per_query(
    config: RunConfig,
    question_sets: Mapping[str, Sequence[Question]],
    methods: Sequence[str],
    rankings: Mapping[str, Mapping[str, Mapping[str, CachedRanking]]],
    generations: Mapping[str, GenerationResult],
    asked: Mapping[str, set[str]],
    scorer: RetrievalScorer,
    redactor: Redactor,
    answer_only: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per question x method: ids, gold and retrieved lists (the top_k the generator sees),
    the ranks of the gold pages and chunks within the whole ``depth`` list, every metric, the answer.
    ``answer_only`` methods (baselines) have NaN retrieval metrics: they rank nothing."""
    chunk_url = scorer.chunk_url
    normalization = config.evaluation.answer_normalization
    rows: list[dict[str, Any]] = []
    for set_name, questions in question_sets.items():
        for method in methods:
            scores = scorer.score(questions, rankings[method][set_name])
            if method in answer_only:
                scores.loc[:, :] = float("nan")
            for q in questions:
                ranking = rankings[method][set_name][q.qid]
                urls = url_ranking(ranking.chunk_ids, chunk_url)
                gold = {url for group in q.gold_urls for url in group}
                row: dict[str, Any] = {
                    "question_set": set_name,
                    "method": method,
                    "qid": q.qid,
                    "qtype": q.qtype,
                    "question": q.text,
                    "gold_urls": json.dumps(q.relevance or q.gold_urls, ensure_ascii=False),
                    "retrieved_urls": json.dumps(url_ranking(ranking.chunk_ids[: config.top_k], chunk_url), ensure_ascii=False),
                    "retrieved_chunks": json.dumps(ranking.chunk_ids[: config.top_k], ensure_ascii=False),
                    "gold_url_ranks": json.dumps([i + 1 for i, url in enumerate(urls) if url in gold]),
                    "gold_chunk_ranks": json.dumps(
                        [i + 1 for i, chunk_id in enumerate(ranking.chunk_ids) if chunk_url[chunk_id] in gold]
                    ),
                    **{column: scores.at[q.qid, column] for column in scorer.columns()},
                    "retrieval_ms": ranking.search_ms,
                    "reference": " | ".join(q.answers),
                    **answer_fields(generations.get(request_key(method, set_name, q.qid)), q, q.qid in asked[set_name],
                                    normalization, redactor),
                }
                rows.append(row)
    return pd.DataFrame(rows)


def answer_fields(
    result: GenerationResult | None, question: Question, requested: bool, normalization: str, redactor: Redactor
) -> dict[str, Any]:
    """The answer columns of a per-query row. A failed generation keeps NaN scores (never 0)."""
    nan = float("nan")
    if not requested or result is None:
        status = "not requested"
    else:
        status = "failed" if result.failed else "answered"
    scored = (
        answer_scores(result.answer, question.answers, normalization=normalization)
        if status == "answered" and question.answers
        else dict.fromkeys(ANSWER_METRICS, nan)
    )
    return {
        "generation_status": status,
        "answer": result.answer if result is not None and result.answer is not None else "",
        "error": redactor.text(f"{result.error_kind}: {result.error_message}") if status == "failed" else "",
        **{metric: float(scored[metric]) for metric in ANSWER_METRICS},
        "chunks_used": result.extra.get("chunks_used", nan) if result is not None else nan,
        "generation_s": result.latency_s if result is not None else nan,
        "prompt_tokens": result.prompt_tokens if result is not None else 0,
        "completion_tokens": result.completion_tokens if result is not None else 0,
        "attempts": result.attempts if result is not None else 0,
    }
