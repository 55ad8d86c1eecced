"""Multi-query retrieval (LangChain's ``MultiQueryRetriever``), fused with RRF (as RAG-Fusion), for a
BM25 or dense retriever.

For a question q the LLM is asked once (LangChain's prompt: "generate n different versions of the
given user question ... separated by newlines"; :mod:`rag.retrievers.query_transforms.llm`); its reply is split
into lines (LangChain's ``LineListOutputParser``), each stripped of a leading list marker ("1.", "2)",
"-", "*") and white space; empty lines, repeats and lines equal to q (case-insensitive) are dropped
and the first ``n`` kept. q and each paraphrase are searched by the retriever to depth k, and the
lists are fused with the project's RRF (:func:`rag.retrievers.fusion.rrf_scores`, weights 1,
constant ``rrf_k`` = 60, and the fusion tie rule), where LangChain takes the unique union of the
documents instead. A reply with no usable line (``1.\n2.\n-``, or q echoed) is a failed stage for
q (:data:`NO_USABLE_LINE`): no ranking, and the method's results on q's set withheld
(docs/evaluation.md, "Failed stages"), never the plain retriever's ranking under this method's name.

Cost: one request per question of at most ``max_tokens`` (96) tokens, then 1 + n searches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from rag.retrievers.query_transforms.base import QUERY_TRANSFORMS, QueryTransform
from rag.retrievers.query_transforms.config import MultiQueryParams
from rag.retrievers.query_transforms.llm import ask
from rag.retrievers.fusion import fused_ranking, rrf_scores
from rag.types import Ranking

_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*")
_WORD = re.compile(r"\w+")
#: Why a question's stage failed when its reply holds no usable line (Ranking.failed).
NO_USABLE_LINE = "multi_query: the reply holds no usable line (each is empty, a list marker or the question itself)"


def paraphrases(reply: str, question: str, n: int) -> list[str]:
    """The usable lines of a reply (module docstring), at most ``n``."""
    seen = {words(question)}
    found = []
    for line in reply.splitlines():
        text = _LIST_MARKER.sub("", line).strip()
        if words(text) and words(text) not in seen:
            seen.add(words(text))
            found.append(text)
    return found[:n]


def words(text: str) -> str:
    """``text``'s words, case-folded, one space apart: a line that differs from the question (or from
    another line) only in case, punctuation or spacing is the same line."""
    return " ".join(_WORD.findall(text.casefold()))


@QUERY_TRANSFORMS.register("multi_query")
class MultiQuery(QueryTransform):
    """Multi-query over any retriever with ``search_plain`` (module docstring)."""

    Params = MultiQueryParams
    params: MultiQueryParams

    def search(self, retriever, queries: Sequence[str], k: int) -> list[Ranking]:
        if not queries:
            return []
        replies = ask(self, queries, 1, self.params.temperature)
        groups = [[question, *paraphrases("\n".join(texts), question, self.params.n)]
                  for question, texts in zip(queries, replies.texts)]
        searched = retriever.search_plain([text for group in groups for text in group], k)
        fused, start = [], 0
        for group, calls, tokens in zip(groups, replies.calls, replies.tokens):
            lists = searched[start : start + len(group)]
            start += len(group)
            if len(group) == 1:  # no paraphrase: the plain retriever's list is not this method's
                fused.append(Ranking([], [], calls, tokens, failed=NO_USABLE_LINE))
                continue
            ranking = fused_ranking(lists, rrf_scores(lists, [1.0] * len(lists), self.params.rrf_k), k)
            fused.append(replace(ranking, llm_calls=calls, llm_tokens=tokens))
        return fused
