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

BM25+ gives every document idf * delta for a query term it lacks (tf = 0), as rank-bm25 does. Backends (``backend:``): ``sparse`` (default) precomputes score(t, d) for every posting of a
scipy CSC matrix with the same floating-point expressions as rank-bm25, and adds the postings of
each query token in query order, so its scores are *bitwise equal* to rank-bm25's; ``rank_bm25``
wraps the library itself (the reference; not cached, slow). Both rank with
:func:`rag.retrievers.ranking.top_k_indices` (float32 score desc, chunk id desc: the one tie rule).

The ``sparse`` backend's cache (``<cache_dir>/bm25/<key>/``) is read back when complete; a cache
file that cannot be read (truncated ``postings.npz``, say) is reported as a warning and the index is
rebuilt in the same run.

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import scipy.sparse
from pydantic import Field, model_validator

from rag.errors import BenchError
from rag.io_utils import atomic_write_json, naming_path
from rag.progress import progress as progress_bar
from rag.registry import Registry
from rag.retrievers.base import RETRIEVERS, Retriever, RetrieverParams
from rag.retrievers.index_cache import IndexDir, index_key
from rag.retrievers.ranking import ranking_from_scores, sorted_by_id
from rag.retrievers.tokenizers import Tokenizer, TokenizerParams, make_tokenizer
from rag.types import Chunk, Ranking

log = logging.getLogger(__name__)
TokenizedCorpus = Callable[[], list[list[str]]]
# what reading a damaged cache raises: truncated zip/npy, bad JSON, a missing file, inconsistent shapes
UNREADABLE_CACHE = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)


class BM25Params(RetrieverParams):
    variant: Literal["okapi", "bm25l", "bm25plus"] = "okapi"
    k1: float = Field(1.5, gt=0)
    b: float = Field(0.75, ge=0, le=1)
    epsilon: float | None = Field(None, description="okapi only; default 0.25")
    delta: float | None = Field(None, description="bm25l (default 0.5) and bm25plus (default 1.0) only")
    backend: Literal["sparse", "rank_bm25"] = "sparse"
    tokenizer: TokenizerParams = Field(default_factory=TokenizerParams)

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
    def build(self, variant: BM25Variant, tokenized: TokenizedCorpus, cache: IndexDir) -> None:
        """Build from the tokenized documents (``tokenized()``, called only when they are needed), or
        load from ``cache`` when it is complete."""

    @abstractmethod
    def scores(self, query_tokens: list[str]) -> np.ndarray:
        """float64 score of each document."""


BM25_BACKENDS: Registry[BM25Backend] = Registry("BM25 backend")


@BM25_BACKENDS.register("sparse")
class SparseBM25(BM25Backend):
    """Postings in a CSC matrix (documents x terms) holding the final score(t, d) of each posting,
    plus each term's tf = 0 score (non-zero for BM25+), cached with ``save_npz``."""

    def __init__(self) -> None:
        self._postings: scipy.sparse.csc_matrix | None = None
        self._zero_tf_scores = np.empty(0)
        self._vocabulary: dict[str, int] = {}

    def build(self, variant: BM25Variant, tokenized: TokenizedCorpus, cache: IndexDir) -> None:
        if cache.is_complete():
            try:
                self._load(cache)
                return
            except UNREADABLE_CACHE as exc:
                log.warning("BM25 index cache %s is unreadable (%s: %s); rebuilding it", cache.path,
                            type(exc).__name__, exc)
        self._compute(variant, tokenized())
        self._save(cache)
        self._load(cache)

    def _compute(self, variant: BM25Variant, tokenized: list[list[str]]) -> None:
        vocabulary: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[int] = []
        for row, tokens in enumerate(tokenized):
            for term, count in Counter(tokens).items():
                rows.append(row)
                cols.append(vocabulary.setdefault(term, len(vocabulary)))
                tfs.append(count)
        n_docs = len(tokenized)
        doc_len = np.array([len(tokens) for tokens in tokenized])
        avgdl = sum(len(tokens) for tokens in tokenized) / n_docs
        if avgdl == 0:
            raise BenchError(f"BM25: none of the {n_docs} chunks has a token left after tokenization")
        row_ids, col_ids = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)
        idf = variant.idf(n_docs, np.bincount(col_ids, minlength=len(vocabulary)).tolist())
        values = variant.term_scores(idf[col_ids], np.array(tfs), doc_len[row_ids], avgdl)
        self._postings = scipy.sparse.csc_matrix((values, (row_ids, col_ids)), shape=(n_docs, len(vocabulary)))
        # B(d) = 1 when |d| = avgdl: the tf = 0 score does not depend on |d| (except 0/0, see module doc).
        self._zero_tf_scores = variant.term_scores(idf, np.zeros(len(vocabulary)), np.float64(avgdl), avgdl)
        self._vocabulary = vocabulary

    def _save(self, cache: IndexDir) -> None:
        with naming_path(cache.path):  # a full disk names the index directory
            path = cache.start()
            with open(path / "postings.npz", "wb") as handle:
                scipy.sparse.save_npz(handle, self._postings)
            np.save(path / "zero_tf_scores.npy", self._zero_tf_scores)
            atomic_write_json(path / "vocabulary.json", list(self._vocabulary), indent=None)
            cache.finish({"n_docs": self._postings.shape[0], "n_terms": len(self._vocabulary)})

    def _load(self, cache: IndexDir) -> None:
        postings = scipy.sparse.load_npz(cache.path / "postings.npz").tocsc()
        zero_tf_scores = np.load(cache.path / "zero_tf_scores.npy")
        terms = json.loads((cache.path / "vocabulary.json").read_text(encoding="utf-8"))
        if not postings.shape[1] == len(zero_tf_scores) == len(terms):
            raise ValueError(f"inconsistent files: {postings.shape[1]} posting columns, {len(zero_tf_scores)} "
                             f"tf = 0 scores, {len(terms)} terms")
        self._postings, self._zero_tf_scores = postings, zero_tf_scores
        self._vocabulary = {term: i for i, term in enumerate(terms)}

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        postings = self._postings
        indptr, rows, values = postings.indptr, postings.indices, postings.data
        scores = np.zeros(postings.shape[0])
        for token in query_tokens:
            term = self._vocabulary.get(token)
            if term is None:
                continue
            start, end = indptr[term], indptr[term + 1]
            zero_tf_score = self._zero_tf_scores[term]
            if zero_tf_score == 0.0:
                scores[rows[start:end]] += values[start:end]
            else:  # every document gets the term's tf = 0 score, as in rank-bm25's dense loop
                contribution = np.full(postings.shape[0], zero_tf_score)
                contribution[rows[start:end]] = values[start:end]
                scores += contribution
        return scores


@BM25_BACKENDS.register("rank_bm25")
class RankBM25(BM25Backend):
    """The rank-bm25 library itself: the reference implementation (builds in memory each time)."""

    def __init__(self) -> None:
        self._model = None

    def build(self, variant: BM25Variant, tokenized: TokenizedCorpus, cache: IndexDir) -> None:
        self._model = variant.reference(tokenized())

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        return np.asarray(self._model.get_scores(query_tokens), dtype=np.float64)


@RETRIEVERS.register("bm25")
class BM25Retriever(Retriever):
    """BM25 over chunk texts; see the module docstring for the formulas."""

    Params = BM25Params
    params: BM25Params

    def __init__(self, name: str, params: BM25Params):
        super().__init__(name, params)
        self.tokenizer: Tokenizer = make_tokenizer(params.tokenizer, key=f"retrievers.{name}.params.tokenizer.name")
        self.variant: BM25Variant = BM25_VARIANTS.get(params.variant)(params)
        self._backend: BM25Backend = BM25_BACKENDS.get(params.backend)()
        self._chunk_ids: list[str] = []

    def index(self, chunks: Sequence[Chunk], cache_dir: Path) -> None:
        ordered = sorted_by_id(chunks)
        if not ordered:
            raise BenchError(f"retriever {self.name!r}: cannot index an empty corpus")
        settings = self.params.model_dump(exclude={"backend"})
        cache = IndexDir(cache_dir, "bm25", index_key(settings, ordered))

        def tokenized() -> list[list[str]]:
            return [self.tokenizer(chunk.text)
                    for chunk in progress_bar(ordered, desc=f"{self.name}: tokenizing", unit="chunk")]

        self._backend.build(self.variant, tokenized, cache)
        self._chunk_ids = [chunk.chunk_id for chunk in ordered]

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        if not self._chunk_ids:
            raise BenchError(f"retriever {self.name!r}: search() called before index()")
        return [
            ranking_from_scores(self._backend.scores(self.tokenizer(query)), self._chunk_ids, k) for query in queries
        ]
