"""Deterministic top-k selection shared by every retriever.

The rank order is: score descending, then chunk id ascending (so equal scores never depend on
insertion order, hash seeds or the ANN graph). Retrievers keep their corpus sorted by chunk id, so
"chunk id ascending" is "array index ascending" for :func:`top_k_indices`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from rag.errors import BenchError
from rag.types import Chunk, Ranking


def sorted_by_id(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks ordered by chunk id; a duplicate id is an error (ids must identify chunks)."""
    ordered = sorted(chunks, key=lambda chunk: chunk.chunk_id)
    for previous, current in zip(ordered, ordered[1:]):
        if previous.chunk_id == current.chunk_id:
            raise BenchError(f"duplicate chunk id {current.chunk_id!r} in the corpus given to a retriever")
    return ordered


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best entries of a 1-d score array: score desc, then index asc.

    ``np.argpartition`` finds the k-th best score in O(n); every entry scoring at least that much
    is then sorted (stable, so equal scores keep index order). Exact even when ties straddle the
    cut-off.
    """
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        threshold = scores[np.argpartition(-scores, k - 1)[:k]].min()
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(n)
    return candidates[np.argsort(-scores[candidates], kind="stable")][:k]


def ranking_from_scores(scores: np.ndarray, chunk_ids: Sequence[str], k: int) -> Ranking:
    """The top-``k`` :class:`Ranking` of a score array aligned with id-sorted ``chunk_ids``."""
    best = top_k_indices(scores, k)
    return Ranking(chunk_ids=[chunk_ids[i] for i in best], scores=[float(scores[i]) for i in best])


def ranking_from_pairs(pairs: Iterable[tuple[str, float]], k: int) -> Ranking:
    """The top-``k`` :class:`Ranking` of (chunk id, score) pairs: score desc, then chunk id asc."""
    ordered = sorted(pairs, key=lambda pair: (-pair[1], pair[0]))[: max(k, 0)]
    return Ranking(chunk_ids=[chunk_id for chunk_id, _ in ordered], scores=[score for _, score in ordered])
