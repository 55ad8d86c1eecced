"""Typed records that cross module boundaries: documents, chunks, questions, rankings.

Every other module speaks in these types, so the data loaders, the retrievers, the generator and
the evaluation engine can be developed and tested independently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Document:
    """One source document. ``url`` is the unit of URL-level (document-level) evaluation."""

    doc_id: str
    url: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Chunk:
    """A retrievable piece of a document. ``chunk_id`` is stable: derived from doc id and position.
    ``section`` names where it lies: ``"Title › Section › Subsection"`` (rag.text.sections)."""

    chunk_id: str
    doc_id: str
    url: str
    text: str
    position: int
    n_tokens: int
    section: str = ""


@dataclass(frozen=True)
class Question:
    """A benchmark question.

    ``gold_urls`` uses the group semantics of docs/evaluation.md: a list of groups, OR inside a
    group, AND across groups. ``[["u1"]]`` is a single-document question, ``[["u1"], ["u2"]]``
    needs both documents. ``relevance`` holds graded judgements ``{url: grade}`` when the source
    has them (BEIR qrels, a graded ``gold_urls`` object in our JSONL): grade > 0 is relevant and
    nDCG uses the grade as gain; empty means every gold URL has grade 1. ``chunk_relevance`` holds
    judged chunks' grades ``{chunk_id: grade}`` (``rag-bench judge``): at chunk level they replace
    "every chunk of a gold page". A question with none of the three is unjudged.
    """

    qid: str
    text: str
    gold_urls: list[list[str]]
    answers: list[str]
    qtype: str
    question_set: str = ""
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    relevance: dict[str, int] = field(default_factory=dict)
    chunk_relevance: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Ranking:
    """The ranked result of one query: chunk ids in rank order (rank 1 first) and their scores, and
    what making it cost beyond computation: ``llm_calls`` requests to an LLM or a model endpoint
    (a query transform's generations, a reranker's scoring requests) and their ``llm_tokens``
    (prompt + completion, as the server reports them; 0 where it reports none). ``failed``: why a
    stage of the method (a query transform, a reranker) gave nothing usable for this question ("" when
    it did): the ranking is then empty and the method's results on the question's set are withheld
    (docs/evaluation.md, "Failed stages"), never replaced by its input's ranking."""

    chunk_ids: list[str]
    scores: list[float]
    llm_calls: int = 0
    llm_tokens: int = 0
    failed: str = ""

    def __len__(self) -> int:
        return len(self.chunk_ids)


def gold_grades(question: Question) -> dict[str, int]:
    """``{url: grade}`` of a question's judged URLs: its graded ``relevance``, else grade 1 for every gold URL."""
    if question.relevance:
        return dict(question.relevance)
    return {url: 1 for group in question.gold_urls for url in group}


class RankedChunks(Protocol):
    """A method's result for one question: chunk ids in rank order and their (float32) scores."""

    chunk_ids: list[str]
    scores: list[float]


def url_ranking(chunk_ids: Sequence[str], chunk_url: Mapping[str, str]) -> list[str]:
    """Document URLs in rank order, each at the rank of its best (first) chunk."""
    return list(dict.fromkeys(chunk_url[chunk_id] for chunk_id in chunk_ids))
