"""The files of a run's results: ``per_query.csv``, ``comparison.{csv,md,json}``, ``pairwise.csv``
and the TREC files under ``runs/`` (docs/evaluation.md says how each number is reproduced from them).
Every CSV is written by :func:`rag.results.csv_files.write_csv` (text cells safe for spreadsheets)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from evaluation.runs import ranked_lists_to_run
from evaluation.trec_io import encode_trec_id, write_qrels, write_run
from rag.io_utils import atomic_write_json, atomic_write_text
from rag.results.comparison import Comparison, headline_metrics
from rag.results.csv_files import write_csv
from rag.topics import trec_query_id
from rag.results.format import display_table, legend, lift_lines, markdown, recommendation_lines, signed, verdict_lines
from rag.types import Question, RankedChunks, gold_grades, url_ranking


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts (NaN -> None)."""
    return json.loads(frame.to_json(orient="records", force_ascii=False)) if not frame.empty else []


def pairwise_matrix(comparison: Comparison, question_set: str, metric: str) -> pd.DataFrame:
    """Methods x methods: mean(row - column) on the shared questions, ``*`` when significant."""
    methods = comparison.methods
    pairs = comparison.pairwise
    part = pairs[(pairs["question_set"] == question_set) & (pairs["metric"] == metric)] if not pairs.empty else pairs
    cells = {(a, b): "" for a in methods for b in methods}
    for row in part.itertuples():
        star = "*" if row.significant else ""
        cells[(row.method_a, row.method_b)] = f"{signed(row.mean_diff)}{star}"
        cells[(row.method_b, row.method_a)] = f"{signed(-row.mean_diff)}{star}"
    return pd.DataFrame({"vs": methods, **{b: [cells[(a, b)] for a in methods] for b in methods}})


def write_comparison(comparison: Comparison, run_dir: Path, convention: str, level: str) -> None:
    """``comparison.csv`` (numbers), ``pairwise.csv`` (every test), ``comparison.json`` (the
    recommendation with the rule's inputs, numbers, verdicts, answer lifts, tests) and ``comparison.md``
    (recommendation, answer lifts, verdicts, the table with CIs, the test matrices)."""
    write_csv(comparison.table, run_dir / "comparison.csv")
    write_csv(comparison.pairwise, run_dir / "pairwise.csv")
    atomic_write_json(run_dir / "comparison.json", {
        "convention": convention,
        "level": level,
        "statistics": vars(comparison.settings),
        "letters": comparison.letters,
        "recommendation": comparison.recommendation.as_dict() if comparison.recommendation else None,
        "verdict": records(comparison.verdicts),
        "answer_lift": records(comparison.lifts),
        "rows": records(comparison.table),
        "differences_from_baseline": records(comparison.differences),
        "pairwise": records(comparison.pairwise),
    })
    matrices = []
    for question_set in dict.fromkeys(comparison.table["question_set"]):
        for metric in headline_metrics(comparison.metrics):
            matrices.append(f"**{question_set} · {metric}** (row − column; * significant)\n\n"
                            f"{markdown(pairwise_matrix(comparison, question_set, metric))}")
    def bullets(lines: Sequence[str]) -> str:
        return "\n".join(f"- {line.strip()}" if not line.startswith("  ") else f"  - {line.strip()}" for line in lines)

    verdicts = bullets(verdict_lines(comparison, width=10_000))
    recommendation = bullets(recommendation_lines(comparison, width=10_000) + lift_lines(comparison, width=10_000))
    atomic_write_text(
        run_dir / "comparison.md",
        f"# Comparison\n\n## Recommendation\n\n{recommendation}\n\n## Verdict per metric\n\n{verdicts}\n\n"
        f"## Table\n\n{markdown(display_table(comparison))}\n\n"
        f"{legend(comparison, convention, level)}\n\n## Paired tests ({comparison.test_name})\n\n"
        + "\n\n".join(matrices) + "\n\nEvery test with its p-values: pairwise.csv.\n",
    )


def write_trec_files(runs_dir: Path, question_sets: Mapping[str, Sequence[Question]],
                     rankings: Mapping[str, Mapping[str, Mapping[str, RankedChunks]]],
                     chunk_url: Mapping[str, str], chunks_of_url: Mapping[str, Sequence[str]],
                     cutoffs: Sequence[int | None]) -> None:
    """Under ``runs_dir``:

    - ``<method>.trec``: every question's chunk list at full ``depth`` with the method's real
      (float32) scores — fused scores for fusions — in our rank order;
    - ``<method>.url.trec``: the pages of the whole list, and ``<method>.url@k.trec`` for each
      metric cut-off k: the pages among the first k chunks (the URL level's meaning), in order of
      their best chunk (scores = list length - position, so every evaluator keeps that order);
    - ``qrels.url.txt`` (gold URLs with their grades) and ``qrels.chunk.txt`` (the chunks of the
      gold pages, with the page's grade).

    TREC query ids are ``<set>/<qid>``; every id is written with :func:`evaluation.encode_trec_id`
    (unchanged unless it holds white space, a control character or a backslash; never two ids in one)."""

    query_id = trec_query_id

    def pages(chunk_ids: Sequence[str]) -> list[str]:
        return [encode_trec_id(url) for url in url_ranking(chunk_ids, chunk_url)]

    url_qrels, chunk_qrels = {}, {}
    for set_name, questions in question_sets.items():
        for q in questions:
            grades = gold_grades(q)
            url_qrels[query_id(set_name, q.qid)] = {encode_trec_id(url): grade for url, grade in grades.items()}
            chunk_qrels[query_id(set_name, q.qid)] = {encode_trec_id(c): g for c, g in q.chunk_relevance.items()} if (
                q.chunk_relevance) else {encode_trec_id(chunk_id): grade for url, grade in grades.items()
                                         for chunk_id in chunks_of_url.get(url, [])}
    write_qrels(url_qrels, runs_dir / "qrels.url.txt")
    write_qrels(chunk_qrels, runs_dir / "qrels.chunk.txt")
    for method, by_set in rankings.items():
        lists = {query_id(set_name, qid): ranking for set_name, by_qid in by_set.items() for qid, ranking in by_qid.items()}
        chunk_run = {qid: {encode_trec_id(c): score for c, score in zip(r.chunk_ids, r.scores)} for qid, r in lists.items()}
        write_run(chunk_run, runs_dir / f"{method}.trec", tag=method, keep_order=True)
        for k in dict.fromkeys([None, *cutoffs]):
            name = f"{method}.url.trec" if k is None else f"{method}.url@{k}.trec"
            write_run(ranked_lists_to_run({qid: pages(r.chunk_ids[:k]) for qid, r in lists.items()}), runs_dir / name,
                      tag=method)
