"""What each method's generator reads, and whether a reference answer is in it.

Every method of a run has, per question, a chunk list: a retrieval method its ranking (``depth``
long), an answer-only baseline (:mod:`rag.baselines`) its own list. The generator receives the first
``top_k``; ``answer_in_context@k`` reads the first k (:func:`evaluation.answers.answer_in_context`,
each chunk's containment form computed once per run). A closed-book baseline has no context, so its
``answer_in_context`` is undefined (NaN), like a question without reference answers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

import pandas as pd

from evaluation.answers import answer_in_context_at, containment_form, first_containing, reference_forms
from rag.baselines import BASELINES
from rag.generation.base import GenerationRequest
from rag.runner.answers import request_key
from rag.runner.retrieval import CachedRanking
from rag.types import Chunk, Question

Rankings = Mapping[str, Mapping[str, Mapping[str, CachedRanking]]]  # method -> question set -> qid -> list


def closed_book_methods(baselines: Sequence[str]) -> set[str]:
    return {name for name in baselines if BASELINES.get(name).closed_book}


def baseline_rankings(
    baselines: Sequence[str], question_sets: Mapping[str, Sequence[Question]], chunks: Sequence[Chunk]
) -> dict[str, dict[str, dict[str, CachedRanking]]]:
    """Each baseline's chunk list per question, as rankings (scores n..1 in list order, no search time)."""
    chunks_of_url: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        chunks_of_url[chunk.url].append(chunk)
    result: dict[str, dict[str, dict[str, CachedRanking]]] = {}
    for name in baselines:
        baseline = BASELINES.get(name)()
        result[name] = {}
        for set_name, questions in question_sets.items():
            result[name][set_name] = {}
            for q in questions:
                ids = baseline.context(q, chunks_of_url)
                result[name][set_name][q.qid] = CachedRanking(ids, [float(len(ids) - i) for i in range(len(ids))],
                                                              float("nan"))
    return result


def generation_requests(
    rankings: Rankings,
    question_sets: Mapping[str, Sequence[Question]],
    asked: Mapping[str, Collection[str]],
    top_k: int,
    chunk_text: Mapping[str, str],
    closed_book: Collection[str] = (),
) -> list[GenerationRequest]:
    """One request per method x asked question: the first ``top_k`` chunks of the method's list
    (a closed-book method: none, and the closed-book prompt). A method without rankings for a set
    asks nothing there."""
    return [
        GenerationRequest(
            key=request_key(method, set_name, q.qid),
            question=q.text,
            contexts=[chunk_text[c] for c in by_set[set_name][q.qid].chunk_ids[:top_k]],
            closed_book=method in closed_book,
        )
        for method, by_set in rankings.items()
        for set_name, questions in question_sets.items()
        if set_name in by_set
        for q in questions
        if q.qid in asked[set_name]
    ]


def answer_in_context_columns(
    per_query: pd.DataFrame,
    rankings: Rankings,
    question_sets: Mapping[str, Sequence[Question]],
    chunk_text: Mapping[str, str],
    ks: Sequence[int],
    normalization: str,
    closed_book: Collection[str] = (),
) -> pd.DataFrame:
    """``per_query`` with one ``answer_in_context@k`` column per k (rows matched by question set,
    method and question id)."""
    depth = max(ks)
    forms: dict[str, str] = {}

    def form(chunk_id: str) -> str:
        if chunk_id not in forms:
            forms[chunk_id] = containment_form(chunk_text[chunk_id], normalization)
        return forms[chunk_id]

    questions = {(set_name, q.qid): q for set_name, qs in question_sets.items() for q in qs}
    references = {key: reference_forms(q.answers, normalization) if q.answers else [] for key, q in questions.items()}
    ranks = [
        float("nan") if row.method in closed_book else first_containing(
            [form(c) for c in rankings[row.method][row.question_set][row.qid].chunk_ids[:depth]],
            references[(row.question_set, row.qid)],
        )
        for row in per_query[["question_set", "method", "qid"]].itertuples()
    ]
    return per_query.assign(**answer_in_context_at(ranks, ks))
