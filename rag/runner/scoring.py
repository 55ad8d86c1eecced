"""The evaluation stage: retrieval metrics per question (URL and chunk level) and answer scores.

URL level (seed 003's "URL-level", the headline): each chunk maps to its document URL, the first
occurrence is kept, documents are ranked by their best chunk; relevant = the question's gold URLs.
Chunk level: a chunk is relevant when it belongs to a gold document; each gold URL is one group of
its chunks (so the "autorag" convention reads "any chunk of each gold page"). Columns of the chunk
level carry the prefix ``chunk:``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import pandas as pd

from evaluation import evaluate_run
from evaluation.runs import ranked_lists_to_run
from rag.types import Chunk, Question

CHUNK_PREFIX = "chunk:"


def url_ranking(chunk_ids: Sequence[str], chunk_url: Mapping[str, str]) -> list[str]:
    """Document URLs in rank order, each at the rank of its best (first) chunk."""
    return list(dict.fromkeys(chunk_url[chunk_id] for chunk_id in chunk_ids))


class RetrievalScorer:
    """Scores ranked chunk lists of a question set at the configured levels."""

    def __init__(self, chunks: Sequence[Chunk], metrics: Sequence[str], levels: Sequence[str], convention: str):
        self.chunk_url = {chunk.chunk_id: chunk.url for chunk in chunks}
        self.chunks_of_url: dict[str, list[str]] = defaultdict(list)
        for chunk in chunks:
            self.chunks_of_url[chunk.url].append(chunk.chunk_id)
        self.metrics = list(metrics)
        self.levels = list(levels)
        self.convention = convention

    def columns(self) -> list[str]:
        return [f"{'' if level == 'url' else CHUNK_PREFIX}{metric}" for level in self.levels for metric in self.metrics]

    def score(self, questions: Sequence[Question], ranked_chunks: Mapping[str, Sequence[str]]) -> pd.DataFrame:
        """One row per question id, one column per level x metric (NaN = undefined)."""
        run = ranked_lists_to_run({q.qid: ranked_chunks[q.qid] for q in questions})
        frames = []
        for level in self.levels:
            if level == "url":
                qrels = {q.qid: q.gold_urls for q in questions}
                frame = evaluate_run(
                    qrels, run, self.metrics, convention=self.convention, level="document", chunk_to_doc=self.chunk_url
                )
            else:
                qrels = {q.qid: self.chunk_groups(q) for q in questions}
                frame = evaluate_run(qrels, run, self.metrics, convention=self.convention, level="chunk")
                frame = frame.add_prefix(CHUNK_PREFIX)
            frames.append(frame)
        return pd.concat(frames, axis=1)

    def chunk_groups(self, question: Question) -> list[list[str]]:
        """Chunk-level ground truth: per gold URL group, the chunks of its documents."""
        groups = [[c for url in group for c in self.chunks_of_url.get(url, [])] for group in question.gold_urls]
        return [group for group in groups if group]
