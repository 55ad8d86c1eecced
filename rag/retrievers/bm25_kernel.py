"""The BM25 query kernel: many queries scored and ranked at once, compiled with numba.

For one query, every document's score is the sum, in query order, of w_t * score(t, d) over the
query's tokens t (repeats included), starting from 0, with w_t = 1 for a plain query (a weighted
query, :mod:`rag.retrievers.query_transforms.rm3`, lists each term once with its weight; x * 1.0 is x exactly)
— rank-bm25's order of additions, so the float64 sums of a plain query are bit for bit rank-bm25's for variants whose
tf = 0 score is 0 (okapi, bm25l; see
:mod:`rag.retrievers.bm25`). A query's postings are added into one float64 score buffer in two ways:

- *sparse* (a query reading fewer than n_docs / :data:`DENSE_READS` postings): each document is
  listed the first time a posting names it (a branch-free append), and only listed documents are
  ranked and cleared afterwards;
- *dense* (more postings): the postings are added without bookkeeping, and the whole buffer is
  scanned for positive scores (a branch-free append again) and cleared with one fill: listing the
  documents costs about as much as adding the postings, a scan far less (measured:
  docs/measurements.md#bm25-kernel).

Of the listed documents, those with a positive float32 score are ranked by the one tie rule
(:mod:`rag.retrievers.ranking`: float32 score desc, index desc) in a size-k min-heap of 64-bit keys
``float32 bits << 32 | index`` — for positive floats the bits order as the values, so one unsigned
comparison is the whole tie rule — sifted bottom-up (Floyd): the hole goes down along the smaller
children without a data-dependent branch, then the new key climbs (rarely far). A query's list holds
its positive scores only (at most k); with ``fill_zeros`` (rank-bm25's top-k over every document)
fewer than k are followed by the documents scoring 0 (untouched, or rounded to 0), index descending,
and a query that would then still need negative scores (possible only with negative idf) is left
short, for the caller. The caller (:class:`rag.retrievers.bm25.SparseBM25`) gives the kernel only
queries whose (weighted) postings are all positive in float32, so "positive score" is "holds a query
term".

Queries run one after another with one score buffer; a search reading many postings
(:data:`PARALLEL_POSTINGS`) is split into one contiguous share of queries per thread (``prange``).
Compiled once per machine (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

#: A query reading at least n_docs / DENSE_READS postings scans the whole score buffer (see above).
#: measured: docs/measurements.md#bm25-kernel
DENSE_READS = 4
_LOW_32 = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


@njit(cache=True, inline="always")
def _key(score, document):
    """The tie rule as one unsigned integer (larger is better), for a positive float32 score."""
    return (np.uint64(score.view(np.uint32)) << _SHIFT) | np.uint64(document)


@njit(cache=True, inline="always")
def _climb(heap, position, key) -> None:
    """Put ``key`` at ``position`` (a hole) or above it, moving larger ancestors down."""
    while position > 0:
        parent = (position - 1) // 2
        if heap[parent] > key:
            heap[position] = heap[parent]
            position = parent
        else:
            break
    heap[position] = key


@njit(cache=True)
def _replace_root(heap, size, key) -> None:
    """Put ``key`` in place of the heap's root (its smallest key) and restore the heap, bottom-up."""
    position = 0
    child = 1
    while child + 1 < size:  # the hole goes down along the smaller child
        smaller = child + (heap[child + 1] < heap[child])
        heap[position] = heap[smaller]
        position = smaller
        child = 2 * position + 1
    if child < size:
        heap[position] = heap[child]
        position = child
    _climb(heap, position, key)  # the key climbs back to its place


@njit(cache=True)
def _one_query(indptr, rows, values, terms, weights, k, dense_reads, fill_zeros, buffer, marked, listed, heap, out_docs,
               out_scores) -> int:
    """Score one query (``terms``: term numbers in query order, each posting times its ``weights``
    entry) into ``buffer``; write its ranked documents to ``out_*``: the positive scores, then
    (``fill_zeros``) the zero scores; return how many (at most k)."""
    n_docs = len(buffer)
    reads = 0
    for term in terms:
        reads += indptr[term + 1] - indptr[term]
    dense = reads * dense_reads >= n_docs
    n_listed = 0
    if dense:
        for j in range(len(terms)):
            term, weight = terms[j], weights[j]
            for position in range(indptr[term], indptr[term + 1]):
                buffer[rows[position]] += values[position] * weight
        for document in range(n_docs):
            listed[n_listed] = document
            n_listed += np.float32(buffer[document]) > 0
    else:
        for j in range(len(terms)):
            term, weight = terms[j], weights[j]
            for position in range(indptr[term], indptr[term + 1]):
                document = rows[position]
                listed[n_listed] = document
                n_listed += 1 - marked[document]
                marked[document] = 1
                buffer[document] += values[position] * weight
    size = 0
    for i in range(n_listed):
        document = listed[i]
        score = np.float32(buffer[document])
        if score > 0:
            key = _key(score, document)
            if size < k:  # push: the key climbs from the new leaf
                _climb(heap, size, key)
                size += 1
            elif key > heap[0]:
                _replace_root(heap, size, key)
    count = size
    document = n_docs - 1
    while fill_zeros and count < k and document >= 0:  # then the float32 zeros (untouched documents), index desc
        score = np.float32(buffer[document])
        if score == 0:
            out_scores[count], out_docs[count] = score, document
            count += 1
        document -= 1
    if dense:
        buffer[:] = 0.0
    else:
        for i in range(n_listed):
            buffer[listed[i]] = 0.0
            marked[listed[i]] = 0
    for slot in range(size - 1, -1, -1):  # take the smallest first: the best ends up first
        key = heap[0]
        out_docs[slot] = np.int64(key & _LOW_32)
        out_scores[slot] = np.uint32(key >> _SHIFT).view(np.float32)
        if slot > 0:
            _replace_root(heap, slot, heap[slot])
    return count


@njit(cache=True)
def _top_k_share(indptr, rows, values, n_docs, query_terms, query_weights, query_starts, k, dense_reads, fill_zeros, first,
                 stop, docs, scores, counts) -> None:
    """Queries ``first`` to ``stop``, one after another, with one score buffer."""
    buffer = np.zeros(n_docs, dtype=np.float64)
    marked = np.zeros(n_docs, dtype=np.uint8)
    listed = np.empty(n_docs + 1, dtype=np.int64)  # + 1: a branch-free append writes one past the end
    heap = np.empty(k, dtype=np.uint64)
    for query in range(first, stop):
        terms = query_terms[query_starts[query] : query_starts[query + 1]]
        weights = query_weights[query_starts[query] : query_starts[query + 1]]
        counts[query] = _one_query(indptr, rows, values, terms, weights, k, dense_reads, fill_zeros, buffer, marked, listed, heap,
                                   docs[query], scores[query])


@njit(cache=True, parallel=True)
def _top_k_parallel(indptr, rows, values, n_docs, query_terms, query_weights, query_starts, k, dense_reads, fill_zeros, n_shares,
                    docs, scores, counts) -> None:
    n_queries = len(query_starts) - 1
    for share in prange(n_shares):
        _top_k_share(indptr, rows, values, n_docs, query_terms, query_weights, query_starts, k, dense_reads, fill_zeros,
                     share * n_queries // n_shares, (share + 1) * n_queries // n_shares, docs, scores, counts)


#: Postings a search must read before its queries are shared among threads: waking a thread pool
#: costs more than small searches take (measured: docs/measurements.md#bm25-kernel).
PARALLEL_POSTINGS = 1 << 24


def top_k_many(indptr: np.ndarray, rows: np.ndarray, values: np.ndarray, n_docs: int,
               terms: np.ndarray, starts: np.ndarray, k: int, fill_zeros: bool = False,
               weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each query ``i`` (term numbers ``terms[starts[i]:starts[i + 1]]``, in query order, each
    with its positive ``weights`` entry, default 1: a weighted query, :mod:`rag.retrievers.query_transforms.rm3`): its
    best documents (k columns, the first ``counts[i]`` valid), their float32 scores, and ``counts``:
    the documents with a positive score, then with ``fill_zeros`` those scoring 0 (module docstring).
    Document numbers must fit in 32 bits (the heap keys)."""
    if n_docs >= 1 << 32:
        raise ValueError(f"{n_docs} documents: the kernel numbers documents in 32 bits")
    n_queries = len(starts) - 1
    k = max(k, 1)
    weights = np.ones(len(terms)) if weights is None else np.asarray(weights, dtype=np.float64)
    docs = np.empty((n_queries, k), dtype=np.int64)
    scores = np.empty((n_queries, k), dtype=np.float32)
    counts = np.zeros(n_queries, dtype=np.int64)
    reads = int(np.diff(indptr)[terms].sum())
    shares = min(get_num_threads(), n_queries) if reads >= PARALLEL_POSTINGS else 1
    if shares > 1:
        _top_k_parallel(indptr, rows, values, n_docs, terms, weights, starts, k, DENSE_READS, fill_zeros, shares, docs, scores, counts)
    else:
        _top_k_share(indptr, rows, values, n_docs, terms, weights, starts, k, DENSE_READS, fill_zeros, 0, n_queries, docs, scores, counts)
    return docs, scores, counts
