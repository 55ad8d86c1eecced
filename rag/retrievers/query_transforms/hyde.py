"""HyDE, Hypothetical Document Embeddings (Gao, Ma, Lin & Callan 2022, "Precise Zero-Shot Dense
Retrieval without Relevance Labels"), for a dense retriever.

For a question q the LLM writes ``n`` hypothetical passages p_1..p_n (HyDE's instruction, "Please
write a passage to answer the question", one request each: :mod:`rag.retrievers.query_transforms.llm`); with
e(x) the retriever's unit embedding of x, the query vector is their mean with the question's,

    v = (e(q) + sum_i e(p_i)) / (n + 1)        (the paper's eq. 5, and its code's ``np.mean``)

divided by its length, so the scores stay cosines (the ranking is v's either way), and searched in
the dense index like any query vector. A reply that is empty or the question itself (up to case,
punctuation and spacing) is no passage and is left out; a question with no passage left is a failed
stage (:data:`NO_PASSAGE`; docs/evaluation.md, "Failed stages"), never plain dense retrieval under
this method's name. A generation failing for good stops the run (:mod:`.llm`).

Defaults for the 2-core CPU and SmolLM2-135M: n = 1 passage of at most 96 tokens at temperature 0
(the paper samples 8 at 0.7 from InstructGPT; ``n > 1`` samples at 0.7 unless told otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from rag.retrievers.query_transforms.base import QUERY_TRANSFORMS, QueryTransform
from rag.retrievers.query_transforms.config import HydeParams
from rag.retrievers.query_transforms.llm import ask
from rag.retrievers.query_transforms.multi_query import words
from rag.types import Ranking

#: Why a question's stage failed when no reply is a passage (Ranking.failed).
NO_PASSAGE = "hyde: no reply is a passage (each is empty or the question itself)"


def hyde_vector(vectors: np.ndarray) -> np.ndarray:
    """The mean of the question's and its passages' unit embeddings (rows), scaled to unit length."""
    mean = np.asarray(vectors, dtype=np.float64).mean(axis=0)
    return mean / np.linalg.norm(mean)


@QUERY_TRANSFORMS.register("hyde")
class Hyde(QueryTransform):
    """HyDE over a :class:`rag.retrievers.dense.DenseRetriever` (module docstring)."""

    Params = HydeParams
    params: HydeParams

    def search(self, retriever, queries: Sequence[str], k: int) -> list[Ranking]:
        if not queries:
            return []
        replies = ask(self, queries, self.params.n, self.params.sampling_temperature())
        texts = [[question, *(p for p in passages if words(p) and words(p) != words(question))]
                 for question, passages in zip(queries, replies.texts)]
        vectors = retriever.embed_queries([text for group in texts for text in group])
        starts = np.cumsum([0] + [len(group) for group in texts])
        query_vectors = np.stack([hyde_vector(vectors[start:stop]) for start, stop in zip(starts, starts[1:])])
        rankings = retriever.search_vectors(query_vectors, k)
        return [replace(ranking, llm_calls=calls, llm_tokens=tokens) if len(group) > 1 else
                Ranking([], [], calls, tokens, failed=NO_PASSAGE)
                for ranking, group, calls, tokens in zip(rankings, texts, replies.calls, replies.tokens)]
