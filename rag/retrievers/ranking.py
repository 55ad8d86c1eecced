"""The one tie rule of the project, shared by every retriever, every fusion and the evaluation.

A ranked list is ordered by

1. score descending, compared as 32-bit floats (scores are rounded to float32 once, where a
   retriever hands them out, exactly as trec_eval and pytrec_eval store them: a TREC file we write
   is read back with the very same values and ties);
2. for fusions and reranks only, the best (smallest) rank the item had in any fused or reranked
   input: an item an input put higher goes first (:mod:`rag.retrievers.fusion`,
   :mod:`rag.retrievers.rerank`);
3. chunk id descending — trec_eval's rule (``evaluation.runs.ranked_ids``) — with ids compared in
   the form they have in a TREC file (:func:`evaluation.encode_trec_id`: the id itself unless it
   holds white space, control characters or a backslash, which are escaped).

So, except for rule 2, re-ranking our exported runs by their scores with trec_eval, pytrec_eval or
:func:`evaluation.ranked_ids` gives back our lists. Retrievers keep their corpus sorted by
:func:`id_order_key`, so "chunk id descending" is "array index descending" for :func:`top_k_indices`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from evaluation import encode_trec_id
from rag.errors import BenchError
from rag.types import Chunk, Ranking

#: The key that orders chunk ids in the id rule (rule 3): the id as written in a TREC file.
id_order_key = encode_trec_id


def sorted_by_id(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks in id-rule order (:func:`id_order_key` ascending); a duplicate id is an error."""
    ordered = sorted(chunks, key=lambda chunk: id_order_key(chunk.chunk_id))
    for previous, current in zip(ordered, ordered[1:]):
        if previous.chunk_id == current.chunk_id:
            raise BenchError(f"duplicate chunk id {current.chunk_id!r} in the corpus given to a retriever")
    return ordered


def ranking_scores(scores: np.ndarray) -> np.ndarray:
    """Scores as they are ranked, exported and evaluated: rounded to float32 (rule 1)."""
    with np.errstate(over="ignore"):
        return np.asarray(scores).astype(np.float32)


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best entries of a 1-d float32 score array: score desc, then index desc.

    ``np.argpartition`` finds the k-th best score in O(n); every entry scoring at least that much
    is then sorted. Exact even when ties straddle the cut-off.
    """
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        threshold = scores[np.argpartition(-scores, k - 1)[:k]].min()
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(n)
    descending_ids = candidates[::-1]  # a stable sort by score keeps ties in this order: index descending
    return descending_ids[np.argsort(-scores[descending_ids], kind="stable")][:k]


def ranking_from_scores(scores: np.ndarray, chunk_ids: Sequence[str], k: int) -> Ranking:
    """The top-``k`` :class:`Ranking` of a score array aligned with id-sorted ``chunk_ids``."""
    rounded = ranking_scores(scores)
    best = top_k_indices(rounded, k)
    return Ranking(chunk_ids=[chunk_ids[i] for i in best], scores=rounded[best].astype(np.float64).tolist())


def ranking_from_pairs(
    pairs: Iterable[tuple[str, float]], k: int, tie_break: Callable[[str], float] | None = None
) -> Ranking:
    """The top-``k`` :class:`Ranking` of (chunk id, score) pairs: float32 score desc, then
    ``tie_break(chunk id)`` ascending (if given), then chunk id desc."""
    rounded = [(chunk_id, float(np.float32(score))) for chunk_id, score in pairs]
    by_id = sorted(rounded, key=lambda pair: id_order_key(pair[0]), reverse=True)
    if tie_break is None:
        ordered = sorted(by_id, key=lambda pair: -pair[1])
    else:
        ordered = sorted(by_id, key=lambda pair: (-pair[1], tie_break(pair[0])))
    top = ordered[: max(k, 0)]
    return Ranking(chunk_ids=[chunk_id for chunk_id, _ in top], scores=[score for _, score in top])
