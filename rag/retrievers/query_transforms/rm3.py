"""RM3 pseudo-relevance feedback for BM25 (Lavrenko & Croft 2001's relevance model, interpolated with
the query as in Abdul-Jaleel et al. 2004, "UMass at TREC 2004"), as Anserini's ``Rm3Reranker``
computes it (``io.anserini.rerank.lib.Rm3Reranker``, parameters ``fbDocs``, ``fbTerms``,
``originalQueryWeight``, defaults 10, 10, 0.5).

For a question q, over our BM25 tokenizer's terms:

1. First pass: the retriever's plain BM25 search; D = its top ``fb_docs`` chunks, s(d) each one's
   first-pass score (float32, as ranked; fewer chunks when fewer match, none: step 5 alone).
2. Each d in D becomes a term vector tf(t, d) (term counts of the chunk's text), keeping only the
   *feedback terms* (``filter_terms``, Anserini's filter: 2 to 20 characters, all of them word
   characters, and df(t) / N <= 0.1 over the N chunks), then pruned to its ``fb_terms`` most
   frequent terms; |d|_1 = the sum of what is left (a chunk with |d|_1 <= 0.001 gives nothing).
3. Relevance model: rm(t) = sum_{d in D} tf(t, d) / |d|_1 * s(d) for every term t of the pruned
   vectors; kept: its ``fb_terms`` largest; then divided by their sum (L1 norm 1).
4. Query model: qm(t) = c(t, q) / |q|, c the count of t among the question's terms (repeats count).
5. Expanded query: w(t) = lambda * qm(t) + (1 - lambda) * rm(t), lambda = ``original_query_weight``,
   over the union of both models' terms; terms with w(t) = 0 are left out.
6. Second pass: score(d) = sum_t w(t) * bm25(t, d) (Lucene's sum of boosted term queries), a
   weighted BM25 query over the whole index (:meth:`rag.retrievers.bm25.BM25Retriever.search_weighted`);
   ranked by the one tie rule, matching chunks only (as the retriever's ``non_matching`` says).

With lambda = 1 the expanded query is the question's own terms weighted c(t, q) / |q|: the plain BM25
ranking (scores divided by |q|).

Deviations from Anserini, by design: ties when pruning (equal weights at the cut) are broken by term
ascending (Anserini: hash-map order, unspecified); the word-character test is Unicode ``str.isalnum``
on our terms (Anserini: ``[a-z0-9]+`` on its English analyzer's terms); weights are computed in
float64 (Anserini: float32); a relevance model with no term left (every feedback term filtered out)
is empty, so the expanded query is the question's model alone (Anserini would divide by 0). The
first-pass scores are our BM25's (``variant``, ``k1``, ``b`` of the retriever; Anserini's defaults are
k1 0.9, b 0.4 over Lucene's BM25).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from rag.retrievers.query_transforms.base import QUERY_TRANSFORMS, QueryTransform
from rag.retrievers.query_transforms.config import Rm3Params
from rag.types import Ranking

#: Anserini's feedback-term filter (``createdFeatureVector``): a term in more than this share of the
#: documents is not a feedback term (its non-tweet threshold).
MAX_DF_RATIO = 0.1
#: A feedback document whose pruned term vector sums to at most this gives nothing (Anserini's guard).
MIN_NORM = 0.001


def pruned(weights: Mapping[str, float], size: int) -> dict[str, float]:
    """The ``size`` largest entries (weight desc, then term asc)."""
    return dict(sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:size])


def is_feedback_term(term: str, df: int, n_docs: int) -> bool:
    """Anserini's feedback-term filter: 2 to 20 characters, all word characters, df / N <= 0.1."""
    return 2 <= len(term) <= 20 and term.isalnum() and df / n_docs <= MAX_DF_RATIO


def relevance_model(feedback: Sequence[tuple[Mapping[str, int], float]], fb_terms: int,
                    keep: Callable[[str], bool]) -> dict[str, float]:
    """Steps 2-3 of the module docstring: ``feedback`` = (term counts, first-pass score) per chunk."""
    vectors = [(pruned({t: float(c) for t, c in counts.items() if keep(t)}, fb_terms), score)
               for counts, score in feedback]
    model: dict[str, float] = {}
    for vector, score in vectors:
        norm = sum(vector.values())
        if norm > MIN_NORM:
            for term, count in vector.items():
                model[term] = model.get(term, 0.0) + count / norm * score
    model = pruned(model, fb_terms)
    total = sum(model.values())
    return {term: weight / total for term, weight in model.items()} if total > 0 else {}


def expanded_query(query_terms: Sequence[str], model: Mapping[str, float], original_weight: float) -> dict[str, float]:
    """Steps 4-5: the interpolated term weights (zero weights left out), terms in first-seen order."""
    counts = Counter(query_terms)
    weights = {term: original_weight * count / len(query_terms) for term, count in counts.items()}
    for term, weight in model.items():
        weights[term] = weights.get(term, 0.0) + (1.0 - original_weight) * weight
    return {term: weight for term, weight in weights.items() if weight > 0}


@QUERY_TRANSFORMS.register("rm3")
class Rm3(QueryTransform):
    """RM3 over a :class:`rag.retrievers.bm25.BM25Retriever` (module docstring); offline."""

    Params = Rm3Params
    params: Rm3Params

    def search(self, retriever, queries: Sequence[str], k: int) -> list[Ranking]:
        # no more feedback chunks than the corpus holds (the runner also bounds fb_docs by them, warning)
        first = retriever.search_plain(queries, min(self.params.fb_docs, max(retriever.n_documents(), 1)))
        expanded = []
        for question, ranking in zip(queries, first):
            counts = retriever.term_counts(ranking.chunk_ids)
            keep = self._filter(retriever, {term for vector in counts for term in vector})
            model = relevance_model(list(zip(counts, ranking.scores)), self.params.fb_terms, keep)
            expanded.append(expanded_query(retriever.tokenizer(question), model, self.params.original_query_weight))
        return retriever.search_weighted(expanded, k)

    def _filter(self, retriever, terms: set[str]) -> Callable[[str], bool]:
        if not self.params.filter_terms:
            return lambda term: True
        n_docs = retriever.n_documents()
        frequencies = retriever.document_frequencies(sorted(terms))
        return lambda term: is_feedback_term(term, frequencies[term], n_docs)
