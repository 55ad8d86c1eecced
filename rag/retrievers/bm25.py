"""Sparse retrieval with BM25, exactly as rank-bm25 (the reference) defines it, but vectorized.

Notation: N documents, df(t) documents containing term t, tf(t, d) occurrences of t in d, |d| the
length of d in tokens, avgdl the mean length, B(d) = 1 - b + b * |d| / avgdl. A query's score is a
sum over its tokens *with repetition* (a token occurring twice counts twice); tokens not in the
corpus vocabulary contribute 0. Variants (rank-bm25 0.2.2, ``rank_bm25.py``):

- ``okapi`` (``BM25Okapi``): idf(t) = ln(N - df + 0.5) - ln(df + 0.5); a negative idf is replaced
  by epsilon * mean idf (mean over the whole vocabulary, before flooring);
  score(t, d) = idf * tf * (k1 + 1) / (tf + k1 * B(d)).
- ``bm25l`` (``BM25L``, after Lv & Zhai 2011): idf = ln(N + 1) - ln(df + 0.5); ctd = tf / B(d);
  score = idf * tf * (k1 + 1) * (ctd + delta) / (k1 + ctd + delta), delta 0.5 by default. The
  factor tf is rank-bm25's (the paper has none); we keep it, because rank-bm25 is the reference.
- ``bm25plus`` (``BM25Plus``, Lv & Zhai 2011): idf = ln((N + 1) / df);
  score = idf * (delta + tf * (k1 + 1) / (k1 * B(d) + tf)), delta 1 by default.

BM25+ gives every document idf * delta for a query term it lacks (tf = 0), as rank-bm25 does.

**Only matching chunks** (``non_matching: drop``, the default): a query's list holds the chunks that
share at least one token with the query (after tokenizing; tf > 0 for some query token), best first,
at most k — fewer when fewer match, none when nothing matches — as Lucene, Elasticsearch and Milvus
return only matching documents. "Matching" is defined by the tokens, not by the score: okapi's
epsilon floor gives a frequent term a small positive idf (and epsilon 0 gives it idf 0), and BM25+
gives a chunk without any query token a positive score (idf * delta per query token); neither makes
a chunk match. For okapi with epsilon > 0 (and a positive mean idf, as in any real corpus) and for
bm25l, matching is exactly "score > 0". ``non_matching: keep`` ranks every chunk (rank-bm25's
``get_scores`` then a top-k over all documents): lists are k long, filled with non-matching chunks
(score 0 for okapi and bm25l) in tie-rule order; fusions then credit chunks for ranks they got without
matching, so it exists only to reproduce systems that did this.

Backends (``backend:``): ``sparse`` (default) precomputes score(t, d) for every posting of a
scipy CSC matrix with the same floating-point expressions as rank-bm25, and adds the postings of
each query token in query order — all queries of a search at once, in a compiled kernel
(:mod:`rag.retrievers.bm25_kernel`) — so its scores are *bitwise equal* to rank-bm25's; ``rank_bm25``
wraps the library itself (the reference; not cached, slow). Both rank with
:func:`rag.retrievers.ranking.top_k_indices` (float32 score desc, chunk id desc: the one tie rule).

**Weighted queries** (:meth:`BM25Retriever.search_weighted`, used by RM3,
:mod:`rag.retrievers.query_transforms.rm3`): {term: w > 0} scores sum_t w * score(t, d) — Lucene's boosted term
queries; the kernel multiplies each posting by its term's weight, 1 for a plain query (x * 1.0 is
x, so plain scores keep their bits). With ``query:`` the retriever searches through a query transform
(:mod:`rag.retrievers.query_transforms`: ``rm3``, ``multi_query``); the index does not depend on it.

Differences from rank-bm25, by design: k1 must be > 0 (rank-bm25 divides 0 by 0 for k1 = 0), and an
empty document with b = 1 scores 0 where rank-bm25 gives NaN.
"""

from __future__ import annotations

import json
import logging
import math
import zipfile
import zlib
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import ClassVar, Literal

import numpy as np
import scipy.sparse
from pydantic import Field, field_validator, model_serializer, model_validator

from rag.code_version import code_version
from rag.errors import BenchError
from rag.io_utils import atomic_write_json, naming_path
from rag.progress import progress
from rag.retrievers.query_transforms.base import TransformedSearch, build_transform
from rag.retrievers.query_transforms.config import QueryTransformConfig, for_retriever
from rag.registry import Registry
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, RetrieverParams
from rag.retrievers.index_cache import IndexDir, index_key
from rag.retrievers.ranking import ranking_scores, sorted_by_id, top_k_indices
from rag.retrievers.tokenizers import Tokenizer, TokenizerParams, Vocabulary, make_tokenizer
from rag.types import Chunk, Ranking

log = logging.getLogger(__name__)
#: What a damaged index file raises on loading: the index is then rebuilt in the same run.
UNREADABLE_CACHE = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)


class BM25Params(RetrieverParams):
    variant: Literal["okapi", "bm25l", "bm25plus"] = "okapi"
    k1: float = Field(1.5, gt=0)
    b: float = Field(0.75, ge=0, le=1)
    epsilon: float | None = Field(None, description="okapi only; default 0.25")
    delta: float | None = Field(None, description="bm25l (default 0.5) and bm25plus (default 1.0) only")
    backend: Literal["sparse", "rank_bm25"] = "sparse"
    tokenizer: TokenizerParams = Field(default_factory=TokenizerParams)
    non_matching: Literal["drop", "keep"] = Field(
        "drop", description="drop: a list holds only chunks sharing a query token; keep: every chunk ranked (module doc)")
    query: QueryTransformConfig | None = Field(None, description="a query transform: rm3 or multi_query (rag.retrievers.query_transforms)")

    @field_validator("query")
    @classmethod
    def _query_applies(cls, query):
        return for_retriever(query, "bm25")

    @model_serializer(mode="wrap")
    def _no_query_unsaid(self, handler) -> dict:
        """No transform is left out of dumps, so cache keys written before ``query`` existed stay valid."""
        data = handler(self)
        if self.query is None:
            data.pop("query", None)
        return data

    def llm_calls_per_query(self) -> int:
        return self.query.llm_calls_per_query() if self.query is not None else 0

    @model_validator(mode="after")
    def _variant_parameters(self) -> "BM25Params":
        if self.variant == "okapi" and self.delta is not None:
            raise ValueError("delta applies to variant bm25l or bm25plus, not okapi")
        if self.variant != "okapi" and self.epsilon is not None:
            raise ValueError(f"epsilon applies to variant okapi, not {self.variant}")
        return self


class BM25Variant(ABC):
    """One BM25 formula: its idf and its per-(term, document) score, written as rank-bm25 writes them."""

    reference_class: ClassVar[str]

    def __init__(self, params: BM25Params):
        self.k1 = params.k1
        self.b = params.b

    @abstractmethod
    def idf(self, n_docs: int, doc_freqs: Sequence[int]) -> np.ndarray:
        """idf per term, terms in vocabulary (first appearance) order."""

    @abstractmethod
    def term_scores(self, idf: np.ndarray, tf: np.ndarray, doc_len: np.ndarray, avgdl: float) -> np.ndarray:
        """score(t, d) element-wise (same operation order as rank-bm25, hence the same rounding)."""

    def reference_kwargs(self) -> dict[str, float]:
        return {"k1": self.k1, "b": self.b}

    def reference(self, tokenized_corpus: list[list[str]]):
        """The rank-bm25 object with the same formula and parameters."""
        import rank_bm25

        return getattr(rank_bm25, self.reference_class)(tokenized_corpus, **self.reference_kwargs())


BM25_VARIANTS: Registry[BM25Variant] = Registry("BM25 variant")


@BM25_VARIANTS.register("okapi")
class Okapi(BM25Variant):
    reference_class = "BM25Okapi"

    def __init__(self, params: BM25Params):
        super().__init__(params)
        self.epsilon = 0.25 if params.epsilon is None else params.epsilon

    def reference_kwargs(self) -> dict[str, float]:
        return {**super().reference_kwargs(), "epsilon": self.epsilon}

    def idf(self, n_docs: int, doc_freqs: Sequence[int]) -> np.ndarray:
        raw = [math.log(n_docs - df + 0.5) - math.log(df + 0.5) for df in doc_freqs]
        total = 0.0
        for value in raw:  # sequential, as rank-bm25 sums (Python >= 3.12 sum() would compensate)
            total += value
        floor = self.epsilon * (total / len(raw)) if raw else 0.0
        return np.array([floor if value < 0 else value for value in raw], dtype=np.float64)

    def term_scores(self, idf, tf, doc_len, avgdl):
        return idf * (tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * doc_len / avgdl)))


class _DeltaVariant(BM25Variant):
    default_delta: ClassVar[float]

    def __init__(self, params: BM25Params):
        super().__init__(params)
        self.delta = self.default_delta if params.delta is None else params.delta

    def reference_kwargs(self) -> dict[str, float]:
        return {**super().reference_kwargs(), "delta": self.delta}


@BM25_VARIANTS.register("bm25l")
class BM25L(_DeltaVariant):
    reference_class = "BM25L"
    default_delta = 0.5

    def idf(self, n_docs: int, doc_freqs: Sequence[int]) -> np.ndarray:
        return np.array([math.log(n_docs + 1) - math.log(df + 0.5) for df in doc_freqs], dtype=np.float64)

    def term_scores(self, idf, tf, doc_len, avgdl):
        ctd = tf / (1 - self.b + self.b * doc_len / avgdl)
        return idf * tf * (self.k1 + 1) * (ctd + self.delta) / (self.k1 + ctd + self.delta)


@BM25_VARIANTS.register("bm25plus")
class BM25Plus(_DeltaVariant):
    reference_class = "BM25Plus"
    default_delta = 1.0

    def idf(self, n_docs: int, doc_freqs: Sequence[int]) -> np.ndarray:
        return np.array([math.log((n_docs + 1) / df) for df in doc_freqs], dtype=np.float64)

    def term_scores(self, idf, tf, doc_len, avgdl):
        return idf * (self.delta + (tf * (self.k1 + 1)) / (self.k1 * (1 - self.b + self.b * doc_len / avgdl) + tf))


class BM25Backend(ABC):
    """Scores every document (in chunk-id order) for one tokenized query."""

    @abstractmethod
    def build(self, variant: BM25Variant, texts: Sequence[str], tokenizer: Tokenizer, cache: IndexDir) -> None:
        """Build from the documents' texts, or load from ``cache`` when it is complete."""

    @abstractmethod
    def scores(self, query_tokens: list[str], weights: Sequence[float] | None = None) -> np.ndarray:
        """float64 score of each document: the sum over the query's tokens, in order, of
        weight * score(t, d) (weight 1 for every token when ``weights`` is None)."""

    def warm_up(self) -> None:
        """Load what the first search would (nothing by default), at index time."""

    @abstractmethod
    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """df(t), the documents holding t, for each term (0 for a term the index lacks)."""

    @abstractmethod
    def matching(self, query_tokens: list[str]) -> np.ndarray:
        """Positions (ascending) of the documents holding at least one of the query tokens."""

    def top_k(self, texts: Sequence[str], tokenizer: Tokenizer, k: int,
              keep_non_matching: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query text, its ``k`` best matching documents (every document with
        ``keep_non_matching``) under the one tie rule: (positions, float32 scores)."""
        return self.top_k_weighted([(tokens, None) for tokens in tokenizer.many(texts)], k, keep_non_matching)

    def top_k_weighted(self, queries: Sequence[tuple[list[str], Sequence[float] | None]], k: int,
                       keep_non_matching: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`top_k` for queries given as (terms, their positive weights or None for 1 each). By
        default one query at a time (:meth:`scores`, :meth:`matching`, :func:`top_k_positive_first`)."""
        best = []
        for query_tokens, weights in queries:
            scores = ranking_scores(self.scores(query_tokens, weights))
            if keep_non_matching:
                top = top_k_positive_first(scores, k)
            else:  # candidates in index order: top_k_indices's index-desc tie rule holds among them
                candidates = self.matching(query_tokens)
                top = candidates[top_k_indices(scores[candidates], k)]
            best.append((top, scores[top]))
        return best


BM25_BACKENDS: Registry[BM25Backend] = Registry("BM25 backend")


@BM25_BACKENDS.register("sparse")
class SparseBM25(BM25Backend):
    """Postings in a CSC matrix (documents x terms) holding the final score(t, d) of each posting,
    plus each term's tf = 0 score (non-zero for BM25+), cached with ``save_npz`` (uncompressed).

    The build streams: :data:`BLOCK_TEXTS` texts at a time are encoded into term numbers
    (:meth:`Tokenizer.encode`) and reduced to their (document, term, tf) triples, so memory holds the
    postings, never a token list; terms are numbered by first appearance over the whole corpus, as in
    rank-bm25. Scores are then
    computed over the postings :data:`SCORE_SLICE` at a time (element-wise, so slicing changes no bit).
    """

    BLOCK_TEXTS: ClassVar[int] = 4096
    SCORE_SLICE: ClassVar[int] = 1 << 22

    def __init__(self) -> None:
        self._postings: scipy.sparse.csc_matrix | None = None
        self._zero_tf_scores = np.empty(0)
        self._term_minima = np.empty(0)  # per term: its smallest posting (inf for none)
        self._vocabulary: dict[str, int] = {}
        self._query_vocabulary: Vocabulary | None = None  # built on the first search (see top_k)

    def build(self, variant: BM25Variant, texts: Sequence[str], tokenizer: Tokenizer, cache: IndexDir) -> None:
        self._query_vocabulary = None
        if cache.is_complete():
            try:
                self._load(cache)
                return
            except UNREADABLE_CACHE as exc:
                log.warning("BM25 index cache %s is unreadable (%s: %s); rebuilding it", cache.path,
                            type(exc).__name__, exc)
        self._compute(variant, texts, tokenizer)
        self._save(cache)

    def _term_frequencies(self, texts: Sequence[str], tokenizer: Tokenizer) -> tuple[scipy.sparse.csr_matrix, np.ndarray]:
        """tf as a CSR matrix (documents x terms, int32) and every document's length in terms."""
        vocabulary = Vocabulary()
        blocks: list[scipy.sparse.csr_matrix] = []
        lengths: list[np.ndarray] = []
        with progress(total=len(texts), desc="BM25: tokenizing", unit="chunk") as bar:
            for start in range(0, len(texts), self.BLOCK_TEXTS):
                codes, block_lengths = tokenizer.encode(texts[start : start + self.BLOCK_TEXTS], vocabulary)
                rows = np.repeat(np.arange(len(block_lengths)), block_lengths)
                counts = np.ones(len(codes), dtype=np.int32)
                shape = (len(block_lengths), len(vocabulary.terms))
                blocks.append(scipy.sparse.csr_matrix((counts, (rows, codes)), shape=shape))  # sums repeats
                lengths.append(block_lengths)
                bar.update(len(block_lengths))
        offsets = np.cumsum([0] + [block.nnz for block in blocks])
        indptr = np.concatenate([[0]] + [block.indptr[1:] + offset for block, offset in zip(blocks, offsets)])
        indices = np.concatenate([block.indices for block in blocks])
        data = np.concatenate([block.data for block in blocks])
        del blocks
        self._vocabulary = vocabulary.terms
        tf = scipy.sparse.csr_matrix((data, indices, indptr), shape=(len(texts), len(vocabulary.terms)))
        return tf, np.concatenate(lengths)

    def _compute(self, variant: BM25Variant, texts: Sequence[str], tokenizer: Tokenizer) -> None:
        tf_rows, doc_len = self._term_frequencies(texts, tokenizer)
        n_docs, n_terms = tf_rows.shape
        avgdl = int(doc_len.sum()) / n_docs
        if avgdl == 0:
            raise BenchError(f"BM25: none of the {n_docs} chunks has a token left after tokenization")
        postings = tf_rows.tocsc()
        del tf_rows
        idf = variant.idf(n_docs, np.diff(postings.indptr).tolist())
        tf, rows, indptr = postings.data, postings.indices, postings.indptr
        values = np.empty(len(tf), dtype=np.float64)
        for start in range(0, len(tf), self.SCORE_SLICE):
            stop = min(start + self.SCORE_SLICE, len(tf))
            first, last = np.searchsorted(indptr, [start, stop - 1], side="right") - 1
            cols = np.repeat(np.arange(first, last + 1), np.diff(np.clip(indptr[first : last + 2], start, stop)))
            values[start:stop] = variant.term_scores(idf[cols], tf[start:stop], doc_len[rows[start:stop]], avgdl)
        self._postings = scipy.sparse.csc_matrix((values, rows, indptr), shape=(n_docs, n_terms))
        # B(d) = 1 when |d| = avgdl: the tf = 0 score does not depend on |d| (except 0/0, see module doc).
        self._zero_tf_scores = variant.term_scores(idf, np.zeros(n_terms), np.float64(avgdl), avgdl)
        self._term_minima = column_minima(self._postings)

    def _save(self, cache: IndexDir) -> None:
        with naming_path(cache.path):  # a full disk names the index directory
            path = cache.start()
            with open(path / "postings.npz", "wb") as handle:
                scipy.sparse.save_npz(handle, self._postings, compressed=False)
            np.save(path / "zero_tf_scores.npy", self._zero_tf_scores)
            atomic_write_json(path / "vocabulary.json", list(self._vocabulary), indent=None)
            cache.finish({"n_docs": self._postings.shape[0], "n_terms": len(self._vocabulary)})

    def _load(self, cache: IndexDir) -> None:
        """Read a complete cache; files that disagree in size (one of them damaged or replaced) are a
        ValueError, so :meth:`build` rebuilds instead of scoring against a mismatched vocabulary."""
        postings = scipy.sparse.load_npz(cache.path / "postings.npz").tocsc()
        zero_tf_scores = np.load(cache.path / "zero_tf_scores.npy")
        terms = json.loads((cache.path / "vocabulary.json").read_text(encoding="utf-8"))
        if not postings.shape[1] == len(zero_tf_scores) == len(terms):
            raise ValueError(f"inconsistent files: {postings.shape[1]} posting columns, {len(zero_tf_scores)} "
                             f"tf = 0 scores, {len(terms)} terms")
        self._postings, self._zero_tf_scores = postings, zero_tf_scores
        self._term_minima = column_minima(postings)
        self._vocabulary = {term: i for i, term in enumerate(terms)}

    def scores(self, query_tokens: list[str], weights: Sequence[float] | None = None) -> np.ndarray:
        postings = self._postings
        indptr, rows, values = postings.indptr, postings.indices, postings.data
        scores = np.zeros(postings.shape[0])
        for token, weight in zip(query_tokens, weights if weights is not None else [1.0] * len(query_tokens)):
            term = self._vocabulary.get(token)
            if term is None:
                continue
            start, end = indptr[term], indptr[term + 1]
            zero_tf_score = self._zero_tf_scores[term]
            if zero_tf_score == 0.0:
                scores[rows[start:end]] += values[start:end] * weight
            else:  # every document gets the term's tf = 0 score, as in rank-bm25's dense loop
                contribution = np.full(postings.shape[0], zero_tf_score)
                contribution[rows[start:end]] = values[start:end]
                scores += contribution * weight
        return scores

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        counts = np.diff(self._postings.indptr)
        return {term: int(counts[self._vocabulary[term]]) if term in self._vocabulary else 0 for term in terms}

    def matching(self, query_tokens: list[str]) -> np.ndarray:
        indptr, rows = self._postings.indptr, self._postings.indices
        terms = {self._vocabulary[token] for token in query_tokens if token in self._vocabulary}
        return np.unique(np.concatenate([rows[indptr[t] : indptr[t + 1]] for t in terms] or [np.empty(0, np.int32)]))

    def top_k(self, texts: Sequence[str], tokenizer: Tokenizer, k: int,
              keep_non_matching: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
        """All queries at once in the compiled kernel (:mod:`rag.retrievers.bm25_kernel`) when every
        tf = 0 score is 0; there a document matches exactly when its float32 score is positive, for
        every query whose terms have only positive postings (float32) — any other query (okapi with
        a term of idf <= 0) is ranked one at a time by the default :meth:`BM25Backend.top_k`.

        Query texts become term numbers through :meth:`Tokenizer.encode` with a vocabulary that
        starts as the index's (so its term numbers are the index's) and keeps every piece it resolves:
        a piece seen in an earlier search costs one dictionary lookup (memory: one entry per distinct
        piece ever searched, reset with the index). Terms the index lacks get
        numbers past its vocabulary and are dropped (they add 0, as in rank-bm25)."""
        if self._zero_tf_scores.any() or k <= 0:
            return super().top_k(texts, tokenizer, k, keep_non_matching)
        if self._query_vocabulary is None:
            self._query_vocabulary = Vocabulary(self._vocabulary)
        codes, lengths = tokenizer.encode(texts, self._query_vocabulary)
        return self._kernel_top_k(codes, lengths, None, k, keep_non_matching,
                                  lambda i: super(SparseBM25, self).top_k([texts[i]], tokenizer, k, keep_non_matching)[0])

    def warm_up(self) -> None:
        """One query of the index's first term through the kernel: numba loads and compiles it (about
        1 s, once per process) here, so searches are timed at their steady-state cost and that load is
        counted once, in the run's ``index:<name>`` stage time (docs/evaluation.md, "Costs")."""
        if len(self._vocabulary) and not self._zero_tf_scores.any():
            self._kernel_top_k(np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64), None, 1, False, lambda i: None)

    def top_k_weighted(self, queries: Sequence[tuple[list[str], Sequence[float] | None]], k: int,
                       keep_non_matching: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
        """As :meth:`top_k`, for queries of terms (unknown terms dropped) with positive weights."""
        if self._zero_tf_scores.any() or k <= 0:
            return super().top_k_weighted(queries, k, keep_non_matching)
        unknown = len(self._vocabulary)
        codes = np.array([self._vocabulary.get(term, unknown) for terms, _ in queries for term in terms], dtype=np.int64)
        weights = np.array([w for terms, given in queries for w in (given if given is not None else [1.0] * len(terms))])
        lengths = np.array([len(terms) for terms, _ in queries], dtype=np.int64)
        return self._kernel_top_k(codes, lengths, weights, k, keep_non_matching,
                                  lambda i: super(SparseBM25, self).top_k_weighted([queries[i]], k, keep_non_matching)[0])

    def _kernel_top_k(self, codes: np.ndarray, lengths: np.ndarray, weights: np.ndarray | None, k: int,
                      keep_non_matching: bool, one_at_a_time) -> list[tuple[np.ndarray, np.ndarray]]:
        """The queries' top-k from the kernel: ``codes`` (term numbers, those past the index's
        vocabulary dropped) and their ``weights`` (None: 1 each), ``lengths`` terms per query. A query
        with a term whose weighted postings are not all positive in float32 is ranked by
        ``one_at_a_time(i)`` instead (see :meth:`top_k`)."""
        from rag.retrievers.bm25_kernel import top_k_many  # numba loads in about 1 s: only when searching

        n_queries = len(lengths)
        known = codes < len(self._vocabulary)
        query_of_code = np.repeat(np.arange(n_queries), lengths)[known]
        terms = codes[known]
        weights = None if weights is None else weights[known]
        if weights is not None and not (weights > 0).all():
            raise ValueError("BM25: a weighted query's weights must be positive")
        lowest = self._term_minima[terms] if weights is None else self._term_minima[terms] * weights
        starts = np.concatenate([[0], np.cumsum(np.bincount(query_of_code, minlength=n_queries))])
        not_positive = np.bincount(query_of_code, weights=lowest <= FLOAT32_ZERO_BOUND, minlength=n_queries) > 0
        postings = self._postings
        documents, scores, counts = top_k_many(postings.indptr, postings.indices, postings.data, postings.shape[0],
                                               terms, starts, k, fill_zeros=keep_non_matching, weights=weights)
        return [one_at_a_time(i) if not_positive[i] else (documents[i, : counts[i]], scores[i, : counts[i]])
                for i in range(n_queries)]


@BM25_BACKENDS.register("rank_bm25")
class RankBM25(BM25Backend):
    """The rank-bm25 library itself: the reference implementation (builds in memory each time)."""

    def __init__(self) -> None:
        self._model = None

    def build(self, variant: BM25Variant, texts: Sequence[str], tokenizer: Tokenizer, cache: IndexDir) -> None:
        self._model = variant.reference([tokenizer(text) for text in progress(texts, desc="BM25: tokenizing", unit="chunk")])

    def scores(self, query_tokens: list[str], weights: Sequence[float] | None = None) -> np.ndarray:
        if weights is None:
            return np.asarray(self._model.get_scores(query_tokens), dtype=np.float64)
        total = np.zeros(len(self._model.doc_freqs))
        for token, weight in zip(query_tokens, weights):
            total += np.asarray(self._model.get_scores([token]), dtype=np.float64) * weight
        return total

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        wanted = set(terms)
        found = Counter(term for frequencies in self._model.doc_freqs for term in wanted.intersection(frequencies))
        return {term: found[term] for term in terms}

    def matching(self, query_tokens: list[str]) -> np.ndarray:
        tokens = set(query_tokens)
        return np.flatnonzero([not tokens.isdisjoint(frequencies) for frequencies in self._model.doc_freqs])


@RETRIEVERS.register("bm25")
class BM25Retriever(TransformedSearch, Retriever):
    """BM25 over chunk texts; see the module docstring for the formulas. With ``query:`` its searches
    go through a query transform (:mod:`rag.retrievers.query_transforms`: rm3, multi_query)."""

    Params = BM25Params
    params: BM25Params

    def __init__(self, name: str, params: BM25Params):
        super().__init__(name, params)
        self.tokenizer: Tokenizer = make_tokenizer(params.tokenizer, key=f"retrievers.{name}.params.tokenizer.name")
        self.variant: BM25Variant = BM25_VARIANTS.get(params.variant)(params)
        self._backend: BM25Backend = BM25_BACKENDS.get(params.backend)()
        self._chunk_ids = np.empty(0, dtype=object)
        self._texts: dict[str, str] = {}
        self._term_counts: dict[str, Counter[str]] = {}  # feedback chunks' term vectors, computed once
        self.transform = build_transform(name, params.query)

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        ordered = sorted_by_id(chunks)
        if not ordered:
            raise BenchError(f"retriever {self.name!r}: cannot index an empty corpus")
        settings = self.params.model_dump(exclude={"backend", "non_matching", "query"})  # what the index depends on
        settings["tokenizer_code"] = code_version("rag.retrievers.tokenizers")  # its rules, normalization included
        cache = IndexDir(storage.own, "bm25", index_key(settings, ordered))
        self._backend.build(self.variant, [chunk.text for chunk in ordered], self.tokenizer, cache)
        self._chunk_ids = np.array([chunk.chunk_id for chunk in ordered], dtype=object)
        self._texts = {chunk.chunk_id: chunk.text for chunk in ordered}
        self._term_counts = {}
        self._backend.warm_up()

    def search_plain(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """BM25 of the query texts, without the transform."""
        self._check_indexed()
        best = self._backend.top_k(queries, self.tokenizer, k, keep_non_matching=self.params.non_matching == "keep")
        return self._rankings(best)

    def search_weighted(self, queries: Sequence[Mapping[str, float]], k: int) -> list[Ranking]:
        """Weighted BM25 queries {term: weight > 0} over our tokenizer's terms:
        score(d) = sum_t weight(t) * score(t, d) (a term the index lacks adds 0)."""
        self._check_indexed()
        given = [(list(query), list(query.values())) for query in queries]
        best = self._backend.top_k_weighted(given, k, keep_non_matching=self.params.non_matching == "keep")
        return self._rankings(best)

    def term_counts(self, chunk_ids: Sequence[str]) -> list[Counter[str]]:
        """Each chunk's term counts under this retriever's tokenizer (RM3's feedback vectors)."""
        missing = [chunk_id for chunk_id in dict.fromkeys(chunk_ids) if chunk_id not in self._term_counts]
        for chunk_id, terms in zip(missing, self.tokenizer.many([self._texts[c] for c in missing])):
            self._term_counts[chunk_id] = Counter(terms)
        return [self._term_counts[chunk_id] for chunk_id in chunk_ids]

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """df(t) over the indexed chunks."""
        return self._backend.document_frequencies(terms)

    def n_documents(self) -> int:
        return int(self._chunk_ids.size)

    def _check_indexed(self) -> None:
        if self._chunk_ids.size == 0:
            raise BenchError(f"retriever {self.name!r}: search() called before index()")

    def _rankings(self, best: list[tuple[np.ndarray, np.ndarray]]) -> list[Ranking]:
        return [Ranking(self._chunk_ids[top].tolist(), scores.astype(np.float64).tolist()) for top, scores in best]


#: The largest float64 that float32 rounds to 0: 2^-150, halfway to the smallest subnormal (ties to even).
FLOAT32_ZERO_BOUND = 2.0**-150


def column_minima(postings: scipy.sparse.csc_matrix) -> np.ndarray:
    """Per term (column): its smallest posting (inf for an empty column). A term whose (weighted)
    postings all exceed :data:`FLOAT32_ZERO_BOUND` is positive in float32 wherever it occurs; a sum
    of such values is positive in float32, so for a query of these terms a document matches exactly
    when its float32 score is positive (what the kernel ranks)."""
    minima = np.full(postings.shape[1], np.inf)
    starts = postings.indptr[:-1]
    filled = np.flatnonzero(np.diff(postings.indptr) > 0)
    if len(filled):
        minima[filled] = np.minimum.reduceat(postings.data, starts[filled])
    return minima


def top_k_positive_first(scores: np.ndarray, k: int) -> np.ndarray:
    """:func:`rag.retrievers.ranking.top_k_indices` (float32 score desc, index desc), looking only at
    the positive scores when at least ``k`` are positive: then the k best are all among them, and the
    candidates are in index order, so ties break the same way. A query touches few documents, so
    this avoids a partition of the whole corpus."""
    candidates = np.flatnonzero(scores > 0)
    if len(candidates) >= k:
        return candidates[top_k_indices(scores[candidates], k)]
    return top_k_indices(scores, k)
