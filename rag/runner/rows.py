"""The per-query table's rows (:mod:`rag.results.schema`): one per question x method, with the
method's ranked lists, every metric, its costs and its answer.

A sampled question set (``<set>@sample``, :mod:`rag.runner.sample`) shows the answers made for its
base set: an answer is requested once per method and question, whichever sets show it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from evaluation import ANSWER_METRICS, answer_scores
from rag.config import RunConfig
from rag.generation.base import GenerationResult
from rag.results import schema
from rag.runner.answers import request_key
from rag.runner.retrieval import CachedRanking
from rag.runner.scoring import RetrievalScorer, url_ranking
from rag.secrets import Redactor
from rag.types import Question


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
    the ranks of the gold pages and chunks within the whole ``depth`` list, every metric, the costs
    (``retrieval_ms``, ``llm_calls``, ``llm_tokens``: :class:`CachedRanking`), the answer.
    ``answer_only`` methods (baselines) have NaN retrieval metrics: they rank nothing. A method
    without rankings in a set (an LLM-backed one outside its sample) has no rows there; answers and
    ``asked`` are looked up under the set's base (:func:`schema.base_set`)."""
    rows: list[dict[str, Any]] = []
    for set_name, questions in question_sets.items():
        base = schema.base_set(set_name)
        for method in methods:
            if set_name not in rankings[method]:
                continue
            scores = scorer.score(questions, rankings[method][set_name])
            if method in answer_only:
                scores.loc[:, :] = float("nan")
            for q in questions:
                ranking = rankings[method][set_name][q.qid]
                if ranking.failed:  # a failed stage ranks nothing: its scores are not 0 but withheld
                    scores.loc[q.qid, :] = float("nan")
                rows.append({
                    schema.QUESTION_SET: set_name, schema.METHOD: method, schema.QID: q.qid, schema.QTYPE: q.qtype,
                    schema.QUESTION: q.text,
                    **ranking_fields(ranking, q, scorer.chunk_url, config.top_k),
                    **{column: scores.at[q.qid, column] for column in scorer.columns()},
                    schema.RETRIEVAL_MS: ranking.search_ms,
                    schema.LLM_CALLS: ranking.llm_calls,
                    schema.LLM_TOKENS: ranking.llm_tokens,
                    schema.STAGE_ERROR: redactor.text(ranking.failed),
                    schema.REFERENCE: " | ".join(q.answers),
                    **answer_fields(generations.get(request_key(method, base, q.qid)), q, q.qid in asked[base],
                                    config.evaluation.answer_normalization, redactor),
                })
    return pd.DataFrame(rows)


def ranking_fields(ranking: CachedRanking, q: Question, chunk_url: Mapping[str, str], top_k: int) -> dict[str, str]:
    """The list columns of a row: gold URLs, the top_k retrieved URLs and chunks, and the ranks (1-based,
    within the whole list) of the gold pages and of the chunks of gold pages."""
    urls = url_ranking(ranking.chunk_ids, chunk_url)
    gold = {url for group in q.gold_urls for url in group}
    return {
        schema.GOLD_URLS: json.dumps(q.relevance or q.gold_urls, ensure_ascii=False),
        schema.RETRIEVED_URLS: json.dumps(url_ranking(ranking.chunk_ids[:top_k], chunk_url), ensure_ascii=False),
        schema.RETRIEVED_CHUNKS: json.dumps(ranking.chunk_ids[:top_k], ensure_ascii=False),
        schema.GOLD_URL_RANKS: json.dumps([i + 1 for i, url in enumerate(urls) if url in gold]),
        schema.GOLD_CHUNK_RANKS: json.dumps(
            [i + 1 for i, chunk_id in enumerate(ranking.chunk_ids) if chunk_url[chunk_id] in gold]),
    }


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
