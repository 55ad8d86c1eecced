"""The two entry points of retrieval evaluation: one query (:func:`retrieval_scores`) and a whole run
(:func:`evaluate_run`), under a named convention ("trec" = trec_eval / pytrec_eval, "autorag" =
seed 001's AutoRAG semantics)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from evaluation.autorag import autorag_scores
from evaluation.ground_truth import check_cutoff, parse_ground_truth, parse_ranked_ids
from evaluation.levels import to_document_run
from evaluation.metrics import SCORE_KEYS, MetricSpec, compute_metrics, parse_metric
from evaluation.runs import Run, check_run, parse_qrels, prepare_run, query_order, ranked_ids, ranked_lists_to_run
from evaluation.ties import TIE_RULES

ConventionEvaluator = Callable[[Mapping[str, object], Run, Sequence[str], Sequence[MetricSpec], str],
                               dict[str, np.ndarray]]


def _evaluate_trec(qrels: Mapping[str, object], run: Run, qids: Sequence[str],
                   specs: Sequence[MetricSpec], ties: str) -> dict[str, np.ndarray]:
    """Vectorized trec_eval semantics (see :mod:`evaluation.metrics` and :mod:`evaluation.ties`)."""
    grades, groups = parse_qrels(qrels)
    return compute_metrics(prepare_run(grades, run, qids, groups, ties), specs)


def _evaluate_autorag(qrels: Mapping[str, object], run: Run, qids: Sequence[str],
                      specs: Sequence[MetricSpec], ties: str) -> dict[str, np.ndarray]:
    """AutoRAG semantics, one query at a time (see :mod:`evaluation.autorag`); one ranked list per
    query, so only the id rule."""
    if ties != "id":
        raise ValueError(f"ties={ties!r} is supported for the trec convention only; "
                         "the autorag convention ranks ties by doc id (ties='id')")
    columns = {spec.column: np.full(len(qids), np.nan) for spec in specs}
    for row, qid in enumerate(qids):
        truth = parse_ground_truth(qrels.get(qid, {}), f"qrels[{qid!r}]", empty_groups=True)
        ranked = ranked_ids(run.get(qid, {}))
        scores_by_cutoff = {k: autorag_scores(truth, ranked, k) for k in {s.k for s in specs}}
        for spec in specs:
            value = scores_by_cutoff[spec.k][spec.name]
            columns[spec.column][row] = np.nan if value is None else value
    return columns


#: Convention name -> evaluator. Add a convention by adding an entry.
CONVENTIONS: dict[str, ConventionEvaluator] = {"trec": _evaluate_trec, "autorag": _evaluate_autorag}


def _convention(name: object) -> ConventionEvaluator:
    try:
        return CONVENTIONS[name]  # type: ignore[index]
    except (KeyError, TypeError):
        raise ValueError(f"convention: expected one of {', '.join(CONVENTIONS)}, got {name!r}") from None


def retrieval_scores(ground_truth: object, retrieved: object, k: int | None = None,
                     convention: str = "trec") -> dict[str, float | None]:
    """Metrics of one query: ``precision, recall, f1, hit, mrr, map, ndcg, complete`` at cut-off ``k``
    (None = the whole list); ``None`` where undefined (no relevant id).

    ``ground_truth``: flat list of ids, graded dict ``{id: grade}`` or groups ``[[id, ...], ...]``;
    ``retrieved``: ids in rank order (list, tuple or 1-D numpy array; later duplicates are dropped).

    Args:
        ground_truth: a flat list of ids, ``{id: grade}`` or groups ``[[id, ...], ...]``.
        retrieved: ids in rank order.
        k: the cut-off (None: the whole list).
        convention: ``trec`` or ``autorag``.

    Returns:
        ``{metric: value or None}``.
    """
    evaluator = _convention(convention)
    parse_ground_truth(ground_truth, empty_groups=convention == "autorag")  # validates, naming "ground_truth"
    ranked = parse_ranked_ids(retrieved)
    specs = [MetricSpec(name, check_cutoff(k)) for name in SCORE_KEYS.values()]
    columns = evaluator({"q": ground_truth}, ranked_lists_to_run({"q": ranked}), ["q"], specs, "id")
    values = {key: float(columns[spec.column][0]) for key, spec in zip(SCORE_KEYS, specs)}
    return {key: None if math.isnan(value) else value for key, value in values.items()}


LEVELS = ("chunk", "document")


def evaluate_run(qrels: Mapping[str, object], run: Run, metrics: Sequence[str] | str,
                 convention: str = "trec", level: str = "chunk",
                 chunk_to_doc: Mapping[str, str] | None = None, ties: str = "id") -> pd.DataFrame:
    """Evaluate a run: one row per query (index ``qid``), one column per metric (``ndcg@10``,
    ``recall@100``, ``mrr``, ``map``, ``p@5``, ``hit@10``, ``f1@10``, ``complete@10``; ``@k`` optional).

    ``qrels`` = ``{qid: {doc_id: grade}}`` (or per query a flat list / groups), ``run`` =
    ``{qid: {doc_id: score}}``. Ranking: score descending, ties by doc id descending (trec_eval).
    Rows: the qrels' queries in order, then queries only in the run. Undefined values (no
    relevant id) are NaN. ``level="document"`` maps the run's chunk ids through ``chunk_to_doc``
    first (the qrels then name documents). ``DataFrame.attrs`` records convention, level and ties.

    ``ties="id"`` ranks tied scores (equal in float32) by doc id descending, as trec_eval;
    ``ties="expected"`` gives every metric's expected value over all orders of the tied ids
    (McSherry & Najork 2008, :mod:`evaluation.ties`; trec convention only). At the document level
    a document then scores its best chunk's score, and documents with equal scores tie.

    Args:
        qrels: ``{qid: {doc_id: grade}}`` (or per query a flat list / groups).
        run: ``{qid: {doc_id: score}}``.
        metrics: metric names (``ndcg@10``, ``mrr`` ...), a list or one string.
        convention: ``trec`` or ``autorag``.
        level: ``chunk`` or ``document``.
        chunk_to_doc: chunk id -> document id (``level="document"`` only).
        ties: ``id`` or ``expected``.

    Returns:
        One row per query (index ``qid``), one column per metric.
    """
    evaluator = _convention(convention)
    specs = list({spec.column: spec for spec in map(parse_metric, [metrics] if isinstance(metrics, str) else metrics)}.values())
    if not specs:
        raise ValueError("metrics: name at least one metric, e.g. ['ndcg@10', 'recall@100']")
    run = check_run(run)
    if ties not in TIE_RULES:
        raise ValueError(f"ties: expected one of {', '.join(TIE_RULES)}, got {ties!r}")
    if level not in LEVELS:
        raise ValueError(f"level: expected one of {', '.join(LEVELS)}, got {level!r}")
    if level == "document":
        if not isinstance(chunk_to_doc, Mapping):
            raise ValueError("chunk_to_doc: level='document' needs a {chunk_id: doc_id} mapping")
        run = to_document_run(run, chunk_to_doc, ties)
    if not isinstance(qrels, Mapping):
        raise ValueError(f"qrels: expected {{qid: {{doc_id: grade}}}} (or lists/groups), got {type(qrels).__name__}")
    qids = query_order(qrels, run)
    table = pd.DataFrame(evaluator(qrels, run, qids, specs, ties), index=pd.Index(qids, name="qid"))
    table.attrs.update(convention=convention, level=level, ties=ties)
    return table
