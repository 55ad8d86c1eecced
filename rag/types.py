"""Typed records that cross module boundaries: documents, chunks, questions, rankings.

Every other module speaks in these types, so the data loaders, the retrievers, the generator and
the evaluation engine can be developed and tested independently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    """A retrievable piece of a document. ``chunk_id`` is stable: derived from doc id and position."""

    chunk_id: str
    doc_id: str
    url: str
    text: str
    position: int
    n_tokens: int


@dataclass(frozen=True)
class Question:
    """A benchmark question.

    ``gold_urls`` uses the group semantics of docs/metrics-spec.md: a list of groups, OR inside a
    group, AND across groups. ``[["u1"]]`` is a single-document question, ``[["u1"], ["u2"]]``
    needs both documents.
    """

    qid: str
    text: str
    gold_urls: list[list[str]]
    answers: list[str]
    qtype: str
    question_set: str = ""
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Ranking:
    """The ranked result of one query: chunk ids in rank order (rank 1 first) and their scores."""

    chunk_ids: list[str]
    scores: list[float]

    def __len__(self) -> int:
        return len(self.chunk_ids)
