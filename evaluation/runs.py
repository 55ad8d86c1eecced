"""Runs and qrels in the dict shapes of pytrec_eval and ranx, and their conversion to metric-ready arrays.

- qrels: ``{qid: {doc_id: grade}}`` (grade > 0 is relevant), or per query any ground-truth shape of
  :mod:`evaluation.ground_truth` (flat list, groups).
- run: ``{qid: {doc_id: score}}``, higher score = better.

Ranking rule (trec_eval's, and so pytrec_eval's): score descending, ties broken by doc id
*descending* (Python string order = code-point order = UTF-8 byte order, as ``strcmp``). Scores
are compared after rounding to float32, as trec_eval stores them: two scores equal in float32 tie.
``ties="expected"`` keeps the tie groups instead, for the tie-aware metrics of :mod:`evaluation.ties`
(the expected value over all orders of the tied ids).

Query sets: a query in the qrels but missing from the run is evaluated as an empty ranked list
(all metrics 0, as ``trec_eval -c``) so a failed query is never skipped silently; a query in the run
without a relevant id in the qrels is undefined (NaN). pytrec_eval omits both kinds.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, compress, repeat

import numpy as np

from evaluation.ground_truth import check_grade, parse_ground_truth
from evaluation.judgments import RankedJudgments

Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, object]

#: Relevant entries are ranked in blocks of this many (entries x longest list) comparisons.
_BLOCK = 1 << 18


def ranking_score(score: float) -> float:
    """The score as trec_eval compares it: rounded to a 32-bit float (trec_eval stores it as a C
    ``float``; pytrec_eval does the same), so scores equal in float32 are ties."""
    with np.errstate(over="ignore"):
        return float(np.float32(score))


def ranked_ids(scores: Mapping[str, float]) -> list[str]:
    """The ids of one query's ``{doc_id: score}`` in rank order: float32 score descending, then doc id descending.

    Args:
        scores: one query's ``{doc_id: score}``.

    Returns:
        The ids in rank order.
    """
    ranked = sorted(scores.items(), key=lambda item: (ranking_score(item[1]), item[0]), reverse=True)
    return [doc_id for doc_id, _ in ranked]


def ranked_lists_to_run(ranked: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """A run whose scores reproduce the given rank order exactly: score = list length - position.

    Use it to evaluate rankings whose own scores tie (e.g. a retriever that broke ties its own
    way) without the evaluator re-ordering them. Later duplicates of an id are dropped.

    Args:
        ranked: ``{qid: [doc_id, ...]}`` in rank order.

    Returns:
        ``{qid: {doc_id: score}}``.
    """
    run: dict[str, dict[str, float]] = {}
    for qid, ids in ranked.items():
        unique = list(dict.fromkeys(ids))
        run[qid] = {doc_id: float(len(unique) - position) for position, doc_id in enumerate(unique)}
    return run


def check_run(run: object) -> dict[str, dict[str, float]]:
    """A run must map query ids to ``{doc_id: score}`` mappings (returned as plain dicts)."""
    if not isinstance(run, Mapping):
        raise ValueError(f"run: expected {{qid: {{doc_id: score}}}}, got {type(run).__name__}")
    if type(run) is dict and set(map(type, run)) <= {str} and set(map(type, run.values())) <= {dict}:
        return run
    for qid, scores in run.items():
        if not isinstance(qid, str):
            raise ValueError(f"run: query ids must be strings, got {qid!r}")
        if not isinstance(scores, Mapping):
            raise ValueError(f"run[{qid!r}]: expected {{doc_id: score}}, got {type(scores).__name__}")
    return {qid: dict(scores) for qid, scores in run.items()}


Groups = Mapping[str, tuple[frozenset[str], ...]]


def parse_qrels(qrels: object) -> tuple[dict[str, dict[str, float]], dict[str, tuple[frozenset[str], ...]]]:
    """``{qid: {doc_id: grade}}`` from qrels whose queries may also be flat lists or groups (grade
    1), and the gold groups of the queries whose groups are not simply one per relevant id.
    Graded dicts pass through unchecked: :func:`prepare_run` validates all grades in bulk. The trec
    convention has no empty group: one raises ``ValueError`` naming it."""
    if not isinstance(qrels, Mapping):
        raise ValueError(f"qrels: expected {{qid: {{doc_id: grade}}}} (or lists/groups), got {type(qrels).__name__}")
    grades, groups = {}, {}
    for qid, truth in qrels.items():
        if not isinstance(qid, str):
            raise ValueError(f"qrels: query ids must be strings, got {qid!r}")
        if type(truth) is dict:
            grades[qid] = truth
            continue
        parsed = parse_ground_truth(truth, f"qrels[{qid!r}]")
        grades[qid] = dict(parsed.grades)
        if any(len(group) > 1 for group in parsed.groups):
            groups[qid] = parsed.groups
    return grades, groups


def qrels_grades(qrels: object) -> dict[str, dict[str, float]]:
    """The graded form of qrels (see :func:`parse_qrels`), without the groups."""
    return parse_qrels(qrels)[0]


def _members(qids: Sequence[str], row: np.ndarray, relevant_ids: list[str],
             groups: Groups) -> tuple[list[int], list[int], list[int]] | None:
    """(entry index, group number, row of each group): each relevant entry of a query without
    groups is a group of its own; a query with groups gets one group per gold group."""
    if not groups:
        return None
    entry_of = {(r, doc_id): entry for entry, (r, doc_id) in enumerate(zip(row.tolist(), relevant_ids))}
    entries, numbers, group_rows = [], [], []
    for (r, doc_id), entry in entry_of.items():
        if qids[r] not in groups:
            entries.append(entry)
            numbers.append(len(group_rows))
            group_rows.append(r)
    for r, qid in enumerate(qids):
        for group in groups.get(qid, ()):
            entries.extend(entry_of[r, doc_id] for doc_id in group)
            numbers.extend([len(group_rows)] * len(group))
            group_rows.append(r)
    return entries, numbers, group_rows


def query_order(qrels: Iterable[str], run: Iterable[str]) -> list[str]:
    """The evaluated queries: the qrels' queries in their order, then the run's other queries."""
    return list(dict.fromkeys(chain(qrels, run)))


def _check_types(tables: Sequence[dict], keys: list, what: str, qids: Sequence[str]) -> None:
    """Ids must be strings and values real numbers (not bool): checked on the distinct types
    (C-level scans); only on failure does a Python loop find and name the offending entry."""
    value_types = set(map(type, chain.from_iterable(map(dict.values, tables))))
    if set(map(type, keys)) <= {str} and all(
            issubclass(t, numbers.Real) and not issubclass(t, (bool, np.bool_)) for t in value_types):
        return
    for qid, table in zip(qids, tables):
        for key, value in table.items():
            if not isinstance(key, str):
                raise ValueError(f"{what}[{qid!r}]: ids must be strings, got {key!r}")
            check_grade(value, f"{what}[{qid!r}][{key!r}]")


def flat_values(tables: Sequence[dict], what: str, qids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The values of per-query dicts, query after query (C-level iteration), and each query's size.
    Values are converted with ``float()``; anything that does not give a finite number raises."""
    sizes = np.fromiter(map(len, tables), dtype=np.int64, count=len(tables))
    try:
        values = np.fromiter(chain.from_iterable(map(dict.values, tables)), dtype=np.float64,
                             count=int(sizes.sum()))
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what}: every value must be a real number ({error})") from None
    if not np.isfinite(values).all():
        position = int(np.flatnonzero(~np.isfinite(values))[0])
        row = int(np.searchsorted(np.cumsum(sizes), position, side="right"))
        key = list(tables[row])[position - int(sizes[:row].sum())]
        raise ValueError(f"{what}[{qids[row]!r}][{key!r}]: expected a finite number, got {values[position]}")
    return values, sizes


def padded_scores(flat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Scores as a (queries x longest list) matrix, padded with -inf (a free reshape when all lists are equally long)."""
    width = max(int(lengths.max(initial=0)), 1)
    if len(flat) == width * len(lengths):
        return flat.reshape(len(lengths), width)
    matrix = np.full((len(lengths), width), -np.inf)
    matrix[np.arange(width) < lengths[:, None]] = flat  # row-major boolean fill keeps the flat order
    return matrix


def _ranks_of(scores: np.ndarray, row: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each entry (query row, its score): ids scored strictly higher, and ids tied with it (itself included)."""
    greater = np.empty(len(row), dtype=np.int64)
    tied = np.empty(len(row), dtype=np.int64)
    step = max(_BLOCK // scores.shape[1], 1)
    for start in range(0, len(row), step):
        block = scores[row[start:start + step]]
        value = score[start:start + step, None]
        greater[start:start + step] = np.count_nonzero(block > value, axis=1)
        tied[start:start + step] = np.count_nonzero(block == value, axis=1)
    return greater, tied


def prepare_run(qrels: Mapping[str, dict[str, float]], run: Mapping[str, dict[str, float]],
                qids: Sequence[str], groups: Groups | None = None, ties: str = "id") -> RankedJudgments:
    """Rank every relevant id (grade > 0) of every query in ``qids`` within the run (trec_eval's rule).

    ``qrels`` and ``groups`` as from :func:`parse_qrels`, ``run`` as from :func:`check_run`.
    Vectorized: qrels and run are flattened once by C-level iteration, the scores of the relevant
    ids are looked up with ``map(dict.get, ...)``, and each one's rank is 1 + (ids scored higher)
    + (tied ids with a larger doc id), counted on a padded score matrix. Only relevant ids caught
    in a score tie fall back to a Python scan of their own query. ``ties="expected"`` keeps the
    tie groups instead (rank = 1 + ids scored higher, and the group's size; no Python scan), for
    the tie-aware metrics of :mod:`evaluation.ties`.

    Args:
        qrels: ``{qid: {doc_id: grade}}`` as from :func:`parse_qrels`.
        run: ``{qid: {doc_id: score}}`` as from :func:`check_run`.
        qids: the queries, in order.
        groups: the qrels' answer groups, if any.
        ties: ``id`` or ``expected``.

    Returns:
        The relevant ids' ranks and grades per query.
    """
    empty: dict[str, float] = {}
    judged = [qrels.get(qid, empty) for qid in qids]
    retrieved_lists = [run.get(qid, empty) for qid in qids]
    judged_ids = list(chain.from_iterable(judged))
    _check_types(judged, judged_ids, "qrels", qids)
    grades, n_judged = flat_values(judged, "qrels", qids)
    is_relevant = grades > 0
    row = np.repeat(np.arange(len(qids)), n_judged)[is_relevant]
    relevant_ids = list(compress(judged_ids, is_relevant))
    flat_scores, lengths = flat_values(retrieved_lists, "run", qids)
    lists_of_entries = map(retrieved_lists.__getitem__, row.tolist())
    score = np.fromiter(map(dict.get, lists_of_entries, relevant_ids, repeat(math.nan)), dtype=np.float64,
                        count=len(relevant_ids))
    retrieved = np.flatnonzero(~np.isnan(score))
    with np.errstate(over="ignore"):
        greater, tied = _ranks_of(padded_scores(flat_scores.astype(np.float32), lengths), row[retrieved],
                                  score[retrieved].astype(np.float32))
    rank = np.full(len(score), np.inf)
    rank[retrieved] = greater + 1.0
    members = _members(qids, row, relevant_ids, groups or {})
    if ties == "expected":
        tie_size = np.ones(len(score))
        tie_size[retrieved] = tied
        return RankedJudgments.from_flat(qids, row, rank, grades[is_relevant], lengths, members, tie_size)
    for entry in retrieved[tied > 1]:
        doc_id, value = relevant_ids[entry], ranking_score(score[entry])
        rank[entry] += sum(1 for other, s in retrieved_lists[row[entry]].items()
                           if ranking_score(s) == value and str(other) > doc_id)
    return RankedJudgments.from_flat(qids, row, rank, grades[is_relevant], lengths, members)
