"""The runner's stages, in order: chunk -> retrieve (with the HNSW fidelity check) -> generate ->
evaluate -> judge -> statistics -> report (loading comes first, in :func:`rag.runner.pipeline.run_benchmark`,
before the run directory exists). Each stage times itself, records what it measured in the manifest
and hands a typed output (:mod:`rag.runner.state`) to the next; :func:`run_stages` is the sequence.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pandas as pd

from evaluation import ANSWER_METRICS
from rag.chunking import cached_chunks
from rag.config import RunConfig, bounded_by_chunks, bounded_settings
from rag.judging.apply import JUDGED, with_page_chunks
from rag.generation.config import LocalGeneratorConfig
from rag.generation.judge import agreement, agreement_line, judge_generator_config, judge_per_query
from rag.generation.sizing import size_generator
from rag.results import schema
from rag.results.comparison import StatisticsSettings
from rag.errors import BenchError
from rag.results.headline import StageFailures, distinct_answers
from rag.results.recommendation import default_primary
from rag.results.validity import agreement_rows, run_validity
from rag.services import StageServices
from rag.topics import question_ids
from rag.runner.answers import answered_questions, generate_answers
from rag.runner.costs import cost_noise
from rag.runner.contexts import answer_in_context_columns, baseline_rankings, closed_book_methods, generation_requests
from rag.runner.generation_stats import GenerationCounts
from rag.runner.report import report_stage
from rag.runner.rows import build_per_query
from rag.runner.sample import SampledSets
from rag.runner.scoring import RetrievalScorer, count_ties_crossing
from rag.runner.retrieval import CachedRanking, RetrievalStage
from rag.runner.state import Chunked, Compared, Evaluated, Generated, Retrieved, RunContext, RunResult
from rag.runner.statistics_cache import cached_comparison
from rag.types import Question

log = logging.getLogger(__name__)


def run_stages(run: RunContext) -> RunResult:
    """Every stage after loading, in order."""
    chunked = chunk_stage(run)
    if run.options.judgments is not None:  # judged chunks checked against the chunks; pages graded whole
        run = replace(run, question_sets=with_page_chunks(run.question_sets, chunked.chunks, run.options.judgments))
    retrieved = retrieve_stage(run, chunked)
    generated = generate_stage(run, chunked, retrieved)
    evaluated = judge_stage(run, retrieved, evaluate_stage(run, chunked, retrieved, generated))
    compared = statistics_stage(run, chunked, evaluated)
    return report_stage(run, chunked, retrieved, generated, evaluated, compared)


def chunk_stage(run: RunContext) -> Chunked:
    """The chunks (cached), and the config with ``depth`` bounded by their count (warned when the
    configured depth was not the default)."""
    config = run.config
    with run.timer.stage("chunk"):
        chunks, fingerprint = cached_chunks(run.dataset.documents, config.chunking, config.cache_dir, run.options.progress)
    run.manifest.update(chunks={"count": len(chunks), "sha256": fingerprint})
    bounded = bounded_by_chunks(config, len(chunks))
    if config.depth > bounded.depth and config.depth != RunConfig.model_fields["depth"].default:
        log.warning("depth %d exceeds the %d chunks of the corpus; every method keeps all of them (depth %d)",
                    config.depth, len(chunks), bounded.depth)
    for line in bounded_settings(config, bounded):
        log.warning("%s", line)
    run.manifest.update(depth=bounded.depth)
    return Chunked(chunks, fingerprint, bounded, config.depth)


def stage_services(run: RunContext) -> StageServices:
    """What retrievers' stages may use (:class:`StageServices`): the run's generator factory, its
    generator (else the local SmolLM2 server's default settings), cache directory, and the TREC id and
    text of every question of the data set (a run file answers them by id)."""
    generation = run.config.generation
    return StageServices(run.generator_factory,
                         generation.generator if generation is not None else LocalGeneratorConfig(),
                         run.config.cache_dir, question_ids(run.dataset.question_sets))


def retrieve_stage(run: RunContext, chunked: Chunked) -> Retrieved:
    """Every method's ranking of every question of the sets it runs on (:mod:`rag.runner.sample`:
    LLM-backed methods on the sample only; a derived set reuses its base set's rankings), each
    HNSW retriever's fidelity to exact search and each int8 retriever's to float32 (not an LLM-backed
    one's: its 200-question sample would send that many more questions to the LLM), and each method's
    timing noise (:mod:`rag.runner.costs`)."""
    config = chunked.config
    methods = config.methods or [spec.name for spec in config.retrievers]
    sampled = SampledSets.of(config, methods, run.question_sets)
    for line in sampled.plan_lines(config.cache_dir):  # depths bounded by the chunks (chunk_stage)
        log.warning("plan: %s", line)  # the CLI prints warnings: the LLM-backed methods' cost, before any request
    retrieval = RetrievalStage(config, chunked.chunks, chunked.fingerprint, run.timer, run.options.progress,
                               stage_services(run))
    rankings: dict[str, dict[str, dict[str, CachedRanking]]] = {}
    for method in methods:
        rankings[method] = {}
        for set_name in sampled.sets_of(method):
            questions = sampled.sets[set_name]
            by_text = retrieval.rankings(method, [q.text for q in questions])
            rankings[method][set_name] = {q.qid: by_text[q.text] for q in questions}
    plain = [m for m in methods if m not in sampled.llm_methods]
    all_questions = [q.text for questions in run.question_sets.values() for q in questions]
    with run.timer.stage("hnsw fidelity"):
        fidelity = {m: f for m in plain if (f := retrieval.hnsw_fidelity(m, all_questions)) is not None}
    if not fidelity:
        run.timer.discard("hnsw fidelity")
    run.manifest.update(hnsw_vs_exact=fidelity, dense_search=dense_search(config))
    with run.timer.stage("int8 fidelity"):
        int8 = {m: f for m in plain if (f := retrieval.int8_fidelity(m, all_questions)) is not None}
    if not int8:
        run.timer.discard("int8 fidelity")
    run.manifest.update(int8_vs_float32=int8)
    with run.timer.stage("cost noise"):
        noise = cost_noise(retrieval, methods, sampled.llm_methods, all_questions)
    run.manifest.update(retrieval_ms_noise={m: None if math.isnan(v) else v for m, v in noise.items()})
    if sampled.llm_methods:
        run.manifest.update(llm_sample={"methods": sampled.llm_methods,
                                        "sets": {name: len(sampled.sets[name]) for name in sampled.llm_sets}})
    return Retrieved(methods, sampled, rankings, fidelity, int8, noise)


def dense_search(config: RunConfig) -> dict[str, str]:
    """How each dense method searches, as the manifest states it: exact search repeats bit for bit, an
    approximate store's search may not (Chroma builds its HNSW graph with several threads)."""
    said = {"exact": "exact: every chunk scored (numpy); the same inputs give the same rankings, bit for bit",
            "hnsw": "hnsw: the store's approximate search (Chroma's HNSW graph is built by several threads: two "
                    "cold builds may differ below the first ranks; hnsw_vs_exact measures it)"}
    return {spec.name: said[spec.params.search] for spec in config.retrievers if spec.type == "dense"}


def generate_stage(run: RunContext, chunked: Chunked, retrieved: Retrieved) -> Generated:
    """Answers from each method's top_k chunks (and the baselines'), for the answer sample of the
    run's own sets; a derived set shows its base set's answers (an LLM-backed method's are asked
    under its base set's name, from its rankings of the sample)."""
    config = chunked.config
    contexts = {**retrieved.rankings, **baseline_rankings(config.baselines, retrieved.sampled.sets, chunked.chunks)}
    closed_book = closed_book_methods(config.baselines)
    asked: dict[str, set[str]] = {name: set() for name in run.question_sets}
    if config.generation is None:
        return Generated(contexts, closed_book, {}, asked, [], {})
    asked = answered_questions(config, run.question_sets)
    by_base = {method: {schema.base_set(name): ranked for name, ranked in reversed(by_set.items())}
               for method, by_set in contexts.items()}  # reversed: a set's own rankings win over its sample's
    requests = generation_requests(by_base, run.question_sets, asked, config.top_k, chunked.chunk_text, closed_book)
    generator_config = size_generator(config.generation.generator, config.top_k, config.chunking.max_tokens)
    with run.timer.stage("generate"):
        with run.generator_factory(generator_config, config.cache_dir / "generation") as generator:
            generations = generate_answers(generator, requests, run.options.progress)
            generator_facts = generator.run_facts()
    counts = GenerationCounts.of(generations.values())
    run.manifest.update(generator_resolved=generator_config.model_dump(mode="json"), generation_counts=counts.as_dict())
    facts = counts.facts(getattr(generator_config, "context_token_budget", None))
    return Generated(contexts, closed_book, generations, asked, facts, generator_facts)


def judged_nothing_relevant(per_query: pd.DataFrame, sets: Mapping[str, Sequence[Question]], columns: Sequence[str],
                            methods: Sequence[str]) -> pd.DataFrame:
    """``per_query`` with every undefined retrieval metric of a judged question (:data:`JUDGED`: its
    gold from judgments, nothing relevant found) set to 0 for the retrieval methods (rag.judging.apply)."""
    judged = {(name, q.qid) for name, questions in sets.items() for q in questions if q.metadata.get(JUDGED)}
    if not judged:
        return per_query
    rows = pd.Series([(s, q) in judged for s, q in zip(per_query[schema.QUESTION_SET], per_query[schema.QID])],
                     index=per_query.index) & per_query[schema.METHOD].isin(list(methods))
    filled = per_query.copy()
    present = [c for c in columns if c in filled]
    filled.loc[rows, present] = filled.loc[rows, present].fillna(0.0)
    return filled


def evaluate_stage(run: RunContext, chunked: Chunked, retrieved: Retrieved, generated: Generated) -> Evaluated:
    """The per-query table (:mod:`rag.runner.rows`), its answer-in-context columns, and the lists in
    which a tie crosses a metric cut-off."""
    config = chunked.config
    sets = retrieved.sampled.sets
    with run.timer.stage("evaluate"):
        scorer = RetrievalScorer(chunked.chunks, config.evaluation.metrics, config.evaluation.levels,
                                 config.evaluation.convention, config.evaluation.ties)
        per_query = build_per_query(config, sets, [*retrieved.methods, *config.baselines], generated.contexts,
                                    generated.generations, generated.asked, scorer, run.redactor,
                                    answer_only=config.baselines)
        ks = config.evaluation.answer_in_context or [config.top_k]
        per_query = answer_in_context_columns(per_query, generated.contexts, sets, chunked.chunk_text, ks,
                                              config.evaluation.answer_normalization, generated.closed_book)
        per_query[schema.RETRIEVAL_MS_NOISE] = per_query[schema.METHOD].map(retrieved.cost_noise).astype(float)
        per_query = judged_nothing_relevant(per_query, sets, scorer.columns(), retrieved.methods)
        tied = count_ties_crossing(retrieved.rankings, [k for k in scorer.cutoffs() if k is not None])
    run.manifest.update(lists_with_tie_crossing_cutoff=tied)
    return Evaluated(per_query, scorer, ks, tied)


def judge_stage(run: RunContext, retrieved: Retrieved, evaluated: Evaluated) -> Evaluated:
    """With generation and ``evaluation.judge``: the LLM judge's verdict on each answer (an answer
    a derived set shows again is judged once: the judge sends each distinct prompt once), and its
    agreement with the string metrics over the distinct answers; otherwise ``evaluated`` as is."""
    config = run.config
    if config.generation is None or config.evaluation.judge is None:
        return evaluated
    with run.timer.stage("judge"):
        references = {(name, q.qid): q.answers for name, qs in retrieved.sampled.sets.items() for q in qs if q.answers}
        with run.generator_factory(judge_generator_config(config.evaluation.judge), config.cache_dir / "judge") as judge:
            per_query = judge_per_query(evaluated.per_query, references, judge)
    judge_agreement = agreement(distinct_answers(per_query))
    run.manifest.update(judge_agreement=judge_agreement)
    return Evaluated(per_query, evaluated.scorer, evaluated.answer_in_context_ks, evaluated.tied, True,
                     (agreement_line(judge_agreement),))


def statistics_stage(run: RunContext, chunked: Chunked, evaluated: Evaluated) -> Compared:
    """The comparison (cached: :mod:`rag.runner.statistics_cache`) and the validity of the made
    question sets against the given ones (the run's own sets)."""
    config = chunked.config
    stages = StageFailures.of(evaluated.per_query)
    if stages.by_method_set and bool(stages.withheld(evaluated.per_query).all()):
        raise BenchError(f"no result stands: every method is withheld on every set; {stages.line()}")
    with run.timer.stage("statistics"):
        settings = StatisticsSettings(
            confidence=config.evaluation.confidence, n_resamples=config.evaluation.n_resamples,
            alpha=config.evaluation.alpha, seed=config.seed, margin=config.evaluation.margin,
            correction=None if config.evaluation.correction == "none" else config.evaluation.correction,
        )
        metric_columns = evaluated.scorer.columns() + [f"answer_in_context@{k}" for k in evaluated.answer_in_context_ks] + (
            list(ANSWER_METRICS) if config.generation is not None else []) + ([schema.JUDGE] if evaluated.judged else [])
        control = next(iter(sorted(closed_book_methods(config.baselines))), None)
        primary = config.evaluation.primary or default_primary(metric_columns, config.top_k)
        comparison = cached_comparison(evaluated.per_query, metric_columns, settings, config.cache_dir, primary, control)
        made = [name for name in run.question_sets if name in run.dataset.question_provenance]
        agreements = run_validity(evaluated.per_query, made, [name for name in run.question_sets if name not in made],
                                  primary, settings) if primary in evaluated.per_query else []
        if agreements:
            run.manifest.update(question_validity=agreement_rows(agreements))
    return Compared(comparison, settings, agreements)
