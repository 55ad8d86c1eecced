"""The report stage: the headline, each set's figures, the files of a run directory (comparison,
per_query.csv, TREC runs, curves, report.html) and the manifest's last word."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag.config import RunConfig
from rag.data import Dataset
from rag.data.questions.leak import leak_fact
from rag.data.questions.provenance import provenance_fact
from rag.results import schema
from rag.results.csv_files import write_csv
from rag.results.curves import curves
from rag.results.format import legend
from rag.results.headline import (AnswerFailures, QuestionFigures, StageFailures, cannot_judge, figure_lines,
                                  headline)
from rag.results.html import write_html_report
from rag.results.recommendation import recommend
from rag.results.run_facts import RunFigures, generator_label, run_facts, set_aside
from rag.results.validity import Agreement
from rag.results.writers import write_comparison, write_trec_files
from rag.data.records import is_unjudged
from rag.judging.pool import POOL_FILE, PoolChunk, PoolQuestion, write_pool
from rag.types import Question
from rag.runner.scoring import RetrievalScorer
from rag.runner.state import Chunked, Compared, Evaluated, Generated, Retrieved, RunContext, RunResult


def report_stage(run: RunContext, chunked: Chunked, retrieved: Retrieved, generated: Generated,
                 evaluated: Evaluated, compared: Compared) -> RunResult:
    """Write the run's files and finish its manifest (``partial`` when an answer failed)."""
    config, comparison, per_query, path = chunked.config, compared.comparison, evaluated.per_query, run.run_dir.path
    sets = retrieved.sampled.sets
    with run.timer.stage("report"):
        answers = AnswerFailures.of(per_query)
        stages = StageFailures.of(per_query)
        warnings, set_figures = judged_headline(run, retrieved, compared, answers, stages)
        level = "+".join(config.evaluation.levels)
        write_comparison(comparison, path, config.evaluation.convention, level)
        write_csv(per_query, path / "per_query.csv")
        scorer = evaluated.scorer
        write_trec_files(path / "runs", sets, retrieved.rankings, scorer.chunk_url, scorer.chunks_of_url, scorer.cutoffs())
        judging = write_judging_pool(run, chunked, retrieved, comparison.recommendation.primary
                                     if comparison.recommendation else None)
        curve_table = curves(sets, retrieved.rankings, scorer.chunk_url, config.depth)
        write_csv(curve_table, path / "curves.csv")
        facts = run_facts(run_figures(run, chunked, retrieved, [*generated.facts, *evaluated.facts], evaluated.tied,
                                      compared.agreements, answers.failed))
        write_html_report(
            path / "report.html", f"Retrieval benchmark: {data_label(config, run.dataset)}", comparison, per_query,
            curve_table, legend(comparison, config.evaluation.convention, level),
            [run.redactor.text(f) for f in facts],
            hit_metric=hit_column(scorer, config.top_k), chunk_text=chunked.chunk_text,
            chunk_url=scorer.chunk_url, top_k=config.top_k, headline=warnings, question_figures=set_figures,
        )
    run.manifest.finish(
        "partial" if answers.failed or stages.by_method_set else "complete", timings=run.timer.seconds,
        methods=retrieved.methods,
        generation={"requests": len(generated.generations), **answers.as_dict(), **generated.generator_facts},
        stages=stages.as_dict(), headline=warnings, judging=judging,
    )
    return RunResult(path, comparison, per_query, dict(run.timer.seconds), run.manifest.data, answers, warnings,
                     set_figures)


def unjudged_sets(sets: Mapping[str, Sequence[Question]]) -> list[str]:
    """The question sets without any gold (:func:`rag.data.records.is_unjudged`)."""
    return [name for name, questions in sets.items() if is_unjudged(questions)]


def write_judging_pool(run: RunContext, chunked: Chunked, retrieved: Retrieved, primary: str | None) -> dict:
    """``pool.json`` (:mod:`rag.judging.pool`) for every set, labelled ones too (a person can grade what
    the gold did not cover, as TREC judges a pool to find the gold's holes); what the manifest records
    of it (``judging``)."""
    config = chunked.config
    sets = retrieved.sampled.sets
    unjudged = unjudged_sets(sets)
    chosen = list(sets)
    if not chosen:
        return {"unjudged_sets": [], "pool": None}
    by_id = {c.chunk_id: c for c in chunked.chunks}
    questions = [PoolQuestion(name, q.qid, q.text, {m: list(ranked.chunk_ids[:config.top_k]) for m in retrieved.methods
                                                    if (ranked := retrieved.rankings[m].get(name, {}).get(q.qid))})
                 for name in chosen for q in sets[name]]
    pooled = {c: PoolChunk(c, by_id[c].url, by_id[c].section, by_id[c].text) for q in questions for c in q.pooled()}
    primary = primary or config.evaluation.primary or f"ndcg@{config.top_k}"
    write_pool(run.run_dir.path / POOL_FILE, config.top_k, primary, config.seed, retrieved.methods, questions, pooled,
               [d.url for d in run.dataset.documents])
    return {"unjudged_sets": unjudged, "pool": POOL_FILE, "pooled_sets": chosen,
            "pooled_chunks": sum(len(q.pooled()) for q in questions)}


def judged_fact(judged: Mapping) -> str:
    """What a verdict from judgments stands on (:mod:`rag.judging.apply`), for the report's facts."""
    judges = ", ".join(f"{name} ({kind})" for name, kind in judged.get("judges", {}).items()) or "none"
    sets = "; ".join(f"{name}: {n} questions judged" + (f", {judged['questions_left_out'][name]} without a grade left out"
                                                        if judged.get("questions_left_out", {}).get(name) else "")
                     for name, n in judged.get("questions_judged", {}).items())
    return (f"gold from judgments: judges {judges}; {judged.get('judgments', 0)} judgments "
            f"({judged.get('cant_tell', 0)} can't tell, {judged.get('rejudged', 0)} re-judged); {sets}")


def run_figures(run: RunContext, chunked: Chunked, retrieved: Retrieved, generation_facts: Sequence[str],
                tied: Mapping[str, Mapping[str, int]], agreements: Sequence[Agreement], failed: int) -> RunFigures:
    """What the run facts state (:mod:`rag.results.run_facts`), from the stages' outputs."""
    config, dataset = chunked.config, run.dataset
    set_leaks = run.manifest.data["data"]["question_sets"]  # measured once, by data_summary
    generation = config.generation
    return RunFigures(
        name=config.name, seed=config.seed, top_k=config.top_k, depth=config.depth,
        configured_depth=chunked.configured_depth, documents=len(dataset.documents), chunks=len(chunked.chunks),
        question_counts={name: len(qs) for name, qs in retrieved.sampled.sets.items()},
        data_facts=[*(provenance_fact(name, made) for name, made in dataset.question_provenance.items()
                      if name in run.question_sets),
                    leak_fact({name: entry["leak"] for name, entry in set_leaks.items()}),
                    *([judged_fact(run.manifest.data["judged"])] if run.manifest.data.get("judged") else [])],
        generator=generator_label(generation.generator.type if generation else None,
                                  getattr(generation.generator, "model", None) if generation else None,
                                  generation.questions_per_set if generation else None),
        failed_answers=failed, ties=config.evaluation.ties, tied=tied,
        files_read=dataset.files_read, files_skipped=dataset.files_skipped, set_aside=set_aside(run.manifest.data["data"]),
        skipped=dict(dataset.skipped),
        skipped_examples=list(dataset.skipped_examples), baselines=config.baselines, agreements=agreements,
        generation_facts=generation_facts, fidelity=retrieved.fidelity, int8_fidelity=retrieved.int8_fidelity,
        sample_lines=retrieved.sampled.plan_lines(config.cache_dir) if retrieved.sampled.llm_methods else [],
    )


def judged_headline(run: RunContext, retrieved: Retrieved, compared: Compared,
                    answers: AnswerFailures, stages: StageFailures | None = None) -> tuple[list[str], list[str]]:
    """The headline's warnings and each set's figures; the overall recommendation is made again
    without the sets that cannot judge (:func:`rag.results.headline.cannot_judge`). A derived sample
    set has its base set's provenance and leak share."""
    comparison = compared.comparison
    primary = comparison.recommendation.primary if comparison.recommendation else None
    set_leaks = run.manifest.data["data"]["question_sets"]  # measured once, by data_summary
    figures = {name: QuestionFigures.of(len(qs), run.dataset.question_provenance.get(schema.base_set(name)),
                                        set_leaks[schema.base_set(name)]["leak"]["share"],
                                        set_leaks[schema.base_set(name)].get("gold_overlap"))
               for name, qs in retrieved.sampled.sets.items()}
    unjudged = cannot_judge(comparison.table, primary, figures, unjudged_sets(retrieved.sampled.sets))
    if unjudged and primary is not None:  # the overall rule reads only the sets that can judge
        comparison.recommendation = recommend(comparison.table, comparison.pairwise, primary,
                                              compared.settings.alpha, unjudged, compared.settings.margin)
    warnings = [run.redactor.text(line) for line in headline(answers, unjudged, stages)]
    return warnings, figure_lines(comparison.table, primary, figures)


def data_label(config: RunConfig, dataset: Dataset) -> str:
    """What the report's title names: the folder's name for a folder of files (``--docs DIR``), the
    data set's configured name, else the config's name."""
    if dataset.source_root is not None or getattr(config.dataset.root, "name", None):
        return dataset.name
    return config.name


def hit_column(scorer: RetrievalScorer, top_k: int) -> str:
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
