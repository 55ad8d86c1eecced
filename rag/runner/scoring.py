"""The evaluation stage: retrieval metrics per question (URL and chunk level).

Every method keeps ``depth`` chunks per question (:mod:`rag.runner.retrieval`); metrics are computed
on those lists.

URL level (seed 003's "URL-level", the headline): each chunk maps to its document URL; a metric
with cut-off k is computed on the pages among the **first k chunks** (what a generator given k
chunks sees), deduplicated in order of their best chunk; a metric without cut-off on the pages of
all ``depth`` chunks. Relevant = the question's gold URLs (with their grades, if graded).
Chunk level: a chunk is relevant when it belongs to a gold document, with that document's grade;
each gold URL group is one group of its chunks (so ``autorag`` and ``complete`` read "any chunk of
each gold page"). Chunk-level columns carry the prefix ``chunk:``.

Ties: with ``ties="id"`` the lists are evaluated exactly in the order the retriever returned them
(the one tie rule, :mod:`rag.retrievers.ranking`); with ``ties="expected"`` every metric is the
expected value over all orders of equally scored items (McSherry & Najork 2008, see
:mod:`evaluation.ties`); a page's score is its best chunk's score.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import pandas as pd

from evaluation import evaluate_run
from evaluation.metrics import parse_metric
from evaluation.runs import ranked_lists_to_run
from evaluation.ties import ties_crossing
from rag.types import Chunk, Question, RankedChunks, gold_grades, url_ranking

CHUNK_PREFIX = "chunk:"


class RetrievalScorer:
    """Scores the ranked chunk lists of a question set at the configured levels."""

    def __init__(self, chunks: Sequence[Chunk], metrics: Sequence[str], levels: Sequence[str], convention: str,
                 ties: str = "id"):
        self.chunk_url = {chunk.chunk_id: chunk.url for chunk in chunks}
        self.chunks_of_url: dict[str, list[str]] = defaultdict(list)
        for chunk in chunks:
            self.chunks_of_url[chunk.url].append(chunk.chunk_id)
        self.metrics = list(metrics)
        self.levels = list(levels)
        self.convention = convention
        self.ties = ties

    def columns(self) -> list[str]:
        return [f"{'' if level == 'url' else CHUNK_PREFIX}{metric}" for level in self.levels for metric in self.metrics]

    def cutoffs(self) -> list[int | None]:
        """The distinct cut-offs of the configured metrics (None = the whole list), in config order."""
        return list(dict.fromkeys(parse_metric(metric).k for metric in self.metrics))

    def url_ground_truth(self, question: Question) -> object:
        """URL-level ground truth: graded ``{url: grade}`` (trec, graded question) or the URL groups."""
        if question.relevance and self.convention == "trec":
            return dict(question.relevance)
        return question.gold_urls

    def chunk_ground_truth(self, question: Question) -> object:
        """Chunk-level ground truth: per gold URL group, the chunks of its documents; graded
        questions (trec) give each chunk its document's grade."""
        if question.relevance and self.convention == "trec":
            return {chunk_id: grade for url, grade in gold_grades(question).items()
                    for chunk_id in self.chunks_of_url.get(url, [])}
        groups = [[c for url in group for c in self.chunks_of_url.get(url, [])] for group in question.gold_urls]
        return [group for group in groups if group]

    def url_run(self, rankings: Mapping[str, RankedChunks], k: int | None) -> dict[str, dict[str, float]]:
        """The pages among each question's first k chunks (all chunks when k is None). Ordered as the
        chunks (``ties="id"``) or scored by their best chunk (``ties="expected"``)."""
        if self.ties == "expected":
            run: dict[str, dict[str, float]] = {}
            for qid, ranking in rankings.items():
                pages: dict[str, float] = {}
                for chunk_id, score in zip(ranking.chunk_ids[:k], ranking.scores[:k]):
                    pages.setdefault(self.chunk_url[chunk_id], score)
                run[qid] = pages
            return run
        return ranked_lists_to_run({qid: url_ranking(r.chunk_ids[:k], self.chunk_url) for qid, r in rankings.items()})

    def chunk_run(self, rankings: Mapping[str, RankedChunks]) -> dict[str, dict[str, float]]:
        if self.ties == "expected":
            return {qid: dict(zip(r.chunk_ids, r.scores)) for qid, r in rankings.items()}
        return ranked_lists_to_run({qid: r.chunk_ids for qid, r in rankings.items()})

    def score(self, questions: Sequence[Question], rankings: Mapping[str, RankedChunks]) -> pd.DataFrame:
        """One row per question id, one column per level x metric (NaN = undefined)."""
        rankings = {q.qid: rankings[q.qid] for q in questions}
        frames = []
        for level in self.levels:
            if level == "url":
                qrels = {q.qid: self.url_ground_truth(q) for q in questions}
                for k in self.cutoffs():
                    metrics = [m for m in self.metrics if parse_metric(m).k == k]
                    frames.append(evaluate_run(qrels, self.url_run(rankings, k), metrics,
                                               convention=self.convention, ties=self.ties))
            else:
                qrels = {q.qid: self.chunk_ground_truth(q) for q in questions}
                frame = evaluate_run(qrels, self.chunk_run(rankings), self.metrics, convention=self.convention,
                                     ties=self.ties)
                frames.append(frame.add_prefix(CHUNK_PREFIX))
        return pd.concat(frames, axis=1).loc[[q.qid for q in questions], self.columns()]


def count_ties_crossing(
    rankings: Mapping[str, Mapping[str, Mapping[str, RankedChunks]]], cutoffs: Sequence[int]
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
