"""Answer-only baselines: methods whose context is not retrieved, to put the retrieval methods'
answers on a scale (closed book <= retrieval <= oracle).

Configured by name beside the retrievers (``baselines: [closed_book, oracle]``); each is one more
method in the run's tables, answering the same questions as the retrieval methods. They have no
retrieval metrics (NaN: nothing was ranked); answer metrics and ``answer_in_context`` (the oracle's)
are computed as for every method.

- ``closed_book``: the generator answers from the question alone; the prompt has no context section
  (the generator's closed-book templates).
- ``oracle``: the context is the chunks of the question's gold pages. Order: by position within the
  page first, then by gold order (gold groups in order, pages within a group in order), so every gold
  page contributes its first chunk before any contributes its second: page A chunk 0, page B chunk 0,
  page A chunk 1, ... The generator receives the first ``top_k``.

Adding a baseline means one class decorated with ``@BASELINES.register("name")``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar

from rag.registry import Registry
from rag.types import Chunk, Question


class Baseline(ABC):
    #: True: answered without any context (a closed-book request)
    closed_book: ClassVar[bool] = False

    @abstractmethod
    def context(self, question: Question, chunks_of_url: Mapping[str, Sequence[Chunk]]) -> list[str]:
        """Chunk ids of the context, in the order the generator reads them."""


BASELINES: Registry[Baseline] = Registry("baseline")


@BASELINES.register("closed_book")
class ClosedBook(Baseline):
    closed_book = True

    def context(self, question: Question, chunks_of_url: Mapping[str, Sequence[Chunk]]) -> list[str]:
        return []


@BASELINES.register("oracle")
class Oracle(Baseline):
    def context(self, question: Question, chunks_of_url: Mapping[str, Sequence[Chunk]]) -> list[str]:
        pages = list(dict.fromkeys(url for group in question.gold_urls for url in group))
        chunks = [(chunk.position, page, chunk.chunk_id) for page, url in enumerate(pages)
                  for chunk in chunks_of_url.get(url, [])]
        return [chunk_id for _, _, chunk_id in sorted(chunks)]
