"""The BM25 query kernel: many queries scored and ranked at once, compiled with numba.

For one query, every document's score is the sum, in query order, of score(t, d) over the query's
tokens t (repeats included), starting from 0 — rank-bm25's order of additions, so the float64 sums
are bit for bit rank-bm25's for variants whose tf = 0 score is 0 (okapi, bm25l; see
:mod:`rag.retrievers.bm25`). Only the documents a token's postings name are touched. Of the touched
documents, those with a positive float32 score are ranked by the one tie rule
(:mod:`rag.retrievers.ranking`: float32 score desc, index desc) with a size-k heap; fewer than k are
followed by the documents scoring 0 (untouched, or rounded to 0), index descending. A query that
would still need negative scores (possible only with negative idf) is left short, for the caller.

Queries run one after another with one score buffer, cleared through the touched documents only;
a search reading many postings (:data:`PARALLEL_POSTINGS`) is split into one contiguous share of
queries per thread (``prange``). Compiled once per machine (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange


@njit(cache=True, inline="always")
def _better(score_a, doc_a, score_b, doc_b) -> bool:
    return score_a > score_b or (score_a == score_b and doc_a > doc_b)


@njit(cache=True)
def _sift_down(scores, docs, size, position) -> None:
    """Restore the heap (its root is the worst kept entry) below ``position``."""
    while True:
        worst = position
        for child in (2 * position + 1, 2 * position + 2):
            if child < size and _better(scores[worst], docs[worst], scores[child], docs[child]):
                worst = child
        if worst == position:
            return
        scores[position], scores[worst] = scores[worst], scores[position]
        docs[position], docs[worst] = docs[worst], docs[position]
        position = worst


@njit(cache=True)
def _one_query(indptr, rows, values, terms, k, buffer, marked, touched, heap_scores, heap_docs, out_docs, out_scores) -> int:
    """Score one query (``terms``: term numbers in query order) into ``buffer``; write its ranked
    documents to ``out_*``: the positive scores, then the zero scores; return how many (at most k:
    fewer only when negative scores would come next)."""
    n_touched = 0
    for term in terms:
        for position in range(indptr[term], indptr[term + 1]):
            document = rows[position]
            if not marked[document]:
                marked[document] = True
                touched[n_touched] = document
                n_touched += 1
            buffer[document] += values[position]
    size = 0
    for i in range(n_touched):
        document = touched[i]
        score = np.float32(buffer[document])
        if not score > 0:
            continue
        if size < k:  # push, sift up
            position = size
            heap_scores[position], heap_docs[position] = score, document
            size += 1
            while position > 0:
                parent = (position - 1) // 2
                if _better(heap_scores[parent], heap_docs[parent], heap_scores[position], heap_docs[position]):
                    heap_scores[parent], heap_scores[position] = heap_scores[position], heap_scores[parent]
                    heap_docs[parent], heap_docs[position] = heap_docs[position], heap_docs[parent]
                    position = parent
                else:
                    break
        elif _better(score, document, heap_scores[0], heap_docs[0]):
            heap_scores[0], heap_docs[0] = score, document
            _sift_down(heap_scores, heap_docs, size, 0)
    count = size
    document = len(buffer) - 1
    while count < k and document >= 0:  # then the float32 zeros (untouched documents), index desc
        score = np.float32(buffer[document])
        if score == 0:
            out_scores[count], out_docs[count] = score, document
            count += 1
        document -= 1
    for i in range(n_touched):
        buffer[touched[i]], marked[touched[i]] = 0.0, False
    for slot in range(size - 1, -1, -1):  # pop the worst first: best ends up first
        out_scores[slot], out_docs[slot] = heap_scores[0], heap_docs[0]
        heap_scores[0], heap_docs[0] = heap_scores[slot], heap_docs[slot]
        _sift_down(heap_scores, heap_docs, slot, 0)
    return count


@njit(cache=True)
def _top_k_share(indptr, rows, values, n_docs, query_terms, query_starts, k, first, stop, docs, scores, counts) -> None:
    """Queries ``first`` to ``stop``, one after another, with one score buffer."""
    buffer = np.zeros(n_docs, dtype=np.float64)
    marked = np.zeros(n_docs, dtype=np.bool_)
    touched = np.empty(n_docs, dtype=np.int64)
    heap_scores = np.empty(k, dtype=np.float32)
    heap_docs = np.empty(k, dtype=np.int64)
    for query in range(first, stop):
        terms = query_terms[query_starts[query] : query_starts[query + 1]]
        counts[query] = _one_query(indptr, rows, values, terms, k, buffer, marked, touched, heap_scores, heap_docs,
                                   docs[query], scores[query])


@njit(cache=True, parallel=True)
def _top_k_parallel(indptr, rows, values, n_docs, query_terms, query_starts, k, n_shares, docs, scores, counts) -> None:
    n_queries = len(query_starts) - 1
    for share in prange(n_shares):
        _top_k_share(indptr, rows, values, n_docs, query_terms, query_starts, k, share * n_queries // n_shares,
                     (share + 1) * n_queries // n_shares, docs, scores, counts)


#: Postings a search must read before its queries are shared among threads: waking a thread pool
#: costs more than small searches take (measured: 10x slower at 10k chunks on a loaded 2-core machine).
PARALLEL_POSTINGS = 1 << 24


def top_k_many(indptr: np.ndarray, rows: np.ndarray, values: np.ndarray, n_docs: int,
               queries: list[list[int]], k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each query (term numbers, in order): its best documents (k columns, the first
    ``counts[i]`` valid), their float32 scores, and ``counts``."""
    starts = np.cumsum([0] + [len(query) for query in queries]).astype(np.int64)
    terms = np.fromiter((term for query in queries for term in query), dtype=np.int64, count=int(starts[-1]))
    k = max(k, 1)
    docs = np.empty((len(queries), k), dtype=np.int64)
    scores = np.empty((len(queries), k), dtype=np.float32)
    counts = np.zeros(len(queries), dtype=np.int64)
    reads = int(np.diff(indptr)[terms].sum())
    shares = min(get_num_threads(), len(queries)) if reads >= PARALLEL_POSTINGS else 1
    if shares > 1:
        _top_k_parallel(indptr, rows, values, n_docs, terms, starts, k, shares, docs, scores, counts)
    else:
        _top_k_share(indptr, rows, values, n_docs, terms, starts, k, 0, len(queries), docs, scores, counts)
    return docs, scores, counts
