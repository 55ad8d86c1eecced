"""Trec-convention retrieval metrics, vectorized over queries (pure numpy).

Every metric works on :class:`~evaluation.judgments.RankedJudgments`, a sparse padded view of a
run: for each query the 1-based ranks at which its *relevant* ids (grade > 0) were retrieved,
sorted ascending (``inf`` for a relevant id that was not retrieved, and for padding), their grades,
the ideal (descending) grade list, ``|R|``, the length of the ranked list and the gold groups.
Non-relevant retrieved ids never need to be materialized: every trec metric is a function of the
relevant ranks alone, so the cost is O(relevant ids), not O(retrieved ids).

Semantics are trec_eval's (and so pytrec_eval's), see docs/evaluation.md:

- ``p@k``      = |R ∩ top k| / k (trec ``P_k``); ``p`` without cut-off = |R ∩ list| / len(list)
- ``recall@k`` = |R ∩ top k| / |R| (``recall_k``)
- ``f1@k``     = 2 P R / (P + R), 0 when P + R = 0
- ``hit@k``    = 1 if R ∩ top k is not empty (``success_k``)
- ``mrr@k``    = 1 / rank of the first relevant id if that rank <= k, else 0 (``recip_rank`` on
  the top k)
- ``map@k``    = Σ_{relevant ranks r <= k} (relevant ids at ranks <= r) / r, divided by |R|
  (``map_cut_k``)
- ``ndcg@k``   = DCG@k / IDCG@k, DCG = Σ_{r <= k} grade_r / log2(r + 1) over relevant ranks,
  IDCG over the grades of R sorted descending, cut at k (``ndcg_cut_k``, Järvelin & Kekäläinen
  2002 with gain = grade, as trec_eval)
- ``complete@k`` = 1 if every gold group has a relevant id in the top k, else 0 (our addition, not
  in trec_eval). Flat or graded qrels make each relevant id a group of its own, so complete@k = 1
  iff recall@k = 1; groups ``[["a", "a2"], ["b"]]`` need "a" or "a2", and "b".

A query with |R| = 0 is undefined: NaN. Tie-aware versions (expected values over the orders of
tied ids): :mod:`evaluation.ties`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from evaluation import ties
from evaluation.ground_truth import check_cutoff
from evaluation.judgments import RankedJudgments, ratio


def precision(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """trec ``P_k``: relevant in top k / k; without k: relevant retrieved / list length."""
    found = judged.hits(k).sum(axis=1)
    size = judged.n_retrieved if k is None else np.full(len(found), k)
    return judged.undefined(ratio(found, size))


def recall(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """trec ``recall_k``: relevant in top k / |R|."""
    return judged.undefined(ratio(judged.hits(k).sum(axis=1), judged.n_relevant))


def f1(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """Harmonic mean of precision@k and recall@k (0 when both are 0)."""
    p, r = precision(judged, k), recall(judged, k)
    return judged.undefined(ratio(2 * p * r, p + r))


def hit(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """trec ``success_k``: 1 if any relevant id is in the top k."""
    return judged.undefined(judged.hits(k).any(axis=1).astype(np.float64))


def reciprocal_rank(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """trec ``recip_rank`` on the top k: 1 / rank of the first relevant id, 0 if none in the top k."""
    first = judged.ranks[:, 0]
    found = judged.hits(k)[:, 0]
    return judged.undefined(np.where(found, 1.0 / np.where(found, first, 1.0), 0.0))


def average_precision(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """trec ``map_cut_k``: Σ over relevant ranks r <= k of precision@r, divided by |R|."""
    found_before = np.arange(1, judged.ranks.shape[1] + 1)
    hits = judged.hits(k)
    precision_at_hits = np.where(hits, found_before / np.where(hits, judged.ranks, 1.0), 0.0)
    return judged.undefined(ratio(precision_at_hits.sum(axis=1), judged.n_relevant))


def ndcg(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """trec ``ndcg_cut_k``: DCG@k / IDCG@k with gain = grade and discount log2(rank + 1)."""
    hits = judged.hits(k)
    dcg = np.where(hits, judged.gains / np.log2(np.where(hits, judged.ranks, 1.0) + 1.0), 0.0).sum(axis=1)
    return judged.undefined(ratio(dcg, judged.ideal_dcg(k)))


def complete(judged: RankedJudgments, k: int | None) -> np.ndarray:
    """``complete@k``: 1 if every gold group has a relevant id in the top k, else 0 (one group per
    relevant id for flat or graded qrels, so then 1 iff recall@k = 1)."""
    hits = judged.hits(k)
    if judged.groups is None:
        found = hits.sum(axis=1) == judged.n_relevant
    else:
        found = judged.groups.all_found(hits[judged.groups.row, judged.groups.col], len(judged.qids))
    return judged.undefined(found.astype(np.float64))


MetricFunction = Callable[[RankedJudgments, "int | None"], np.ndarray]

#: Metric name (as in ``ndcg@10``) -> (trec kernel on resolved ranks, tie-aware kernel of
#: :mod:`evaluation.ties`). The single source of the metric vocabulary.
TREC_METRICS: dict[str, tuple[MetricFunction, MetricFunction]] = {
    "p": (precision, ties.precision),
    "recall": (recall, ties.recall),
    "f1": (f1, ties.f1),
    "hit": (hit, ties.hit),
    "mrr": (reciprocal_rank, ties.reciprocal_rank),
    "map": (average_precision, ties.average_precision),
    "ndcg": (ndcg, ties.ndcg),
    "complete": (complete, ties.complete),
}

#: Accepted spellings of metric names, mapped to the canonical one.
METRIC_ALIASES: dict[str, str] = {"precision": "p", "success": "hit", "rr": "mrr", "recip_rank": "mrr"}

#: The keys of :func:`evaluation.retrieval_scores` and the canonical metric each one is.
SCORE_KEYS: dict[str, str] = {
    "precision": "p", "recall": "recall", "f1": "f1", "hit": "hit", "mrr": "mrr", "map": "map", "ndcg": "ndcg",
    "complete": "complete",
}


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: ``ndcg@10`` -> MetricSpec("ndcg", 10); ``mrr`` -> MetricSpec("mrr", None)."""

    name: str
    k: int | None

    @property
    def column(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"


def parse_metric(text: str) -> MetricSpec:
    """Parse ``name`` or ``name@k``; unknown names and bad cut-offs raise ``ValueError``.

    Args:
        text: ``name`` or ``name@k``.

    Returns:
        The metric's :class:`MetricSpec`.
    """
    if not isinstance(text, str):
        raise ValueError(f"metric: expected a name like 'ndcg@10', got {text!r}")
    name, _, cutoff = text.strip().lower().partition("@")
    name = METRIC_ALIASES.get(name, name)
    if name not in TREC_METRICS:
        known = ", ".join(sorted(TREC_METRICS))
        raise ValueError(f"metric {text!r}: unknown name {name!r}; expected one of {known} (optionally @k)")
    if not cutoff:
        return MetricSpec(name, None)
    if not cutoff.isdigit():
        raise ValueError(f"metric {text!r}: the cut-off after '@' must be a positive integer")
    return MetricSpec(name, check_cutoff(int(cutoff), f"metric {text!r}"))


def compute_metrics(judged: RankedJudgments, specs: Sequence[MetricSpec]) -> dict[str, np.ndarray]:
    """Every requested metric for every query of ``judged``: column name -> values (NaN = undefined).
    Tie-aware judgments (``tie_sizes`` set) get the tie-aware kernels."""
    tie_aware = judged.tie_sizes is not None
    return {spec.column: TREC_METRICS[spec.name][tie_aware](judged, spec.k) for spec in specs}
