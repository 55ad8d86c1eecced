"""The metric-ready form of a run against its qrels: :class:`RankedJudgments`.

A run is reduced to what every trec metric needs and no more: per query, the ranks of its *relevant*
ids (grade > 0), their grades, the ideal grade list, ``|R|``, the length of the ranked list and,
for ``complete``, which gold group each relevant id belongs to. Non-relevant retrieved ids are never
materialized, so the cost is O(relevant ids), not O(retrieved ids).

Ranks come in two forms:

- resolved (``tie_sizes is None``): every id has its own rank under the id rule (score descending,
  doc id descending), as trec_eval ranks them;
- tie-aware (``tie_sizes`` set): ``ranks`` holds the *first* rank of the entry's tie group (the ids
  whose float32 scores are equal) and ``tie_sizes`` its size, so the group occupies ranks
  ``ranks .. ranks + tie_sizes - 1`` (see :mod:`evaluation.ties`). The resolved form is the special
  case of groups of size one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0."""
    numerator, denominator = np.broadcast_arrays(numerator, denominator)
    out = np.zeros(numerator.shape)
    return np.divide(numerator, denominator, out=out, where=denominator > 0)


@dataclass(frozen=True)
class GroupMembership:
    """Which relevant entry belongs to which gold group (AND across groups, OR inside one).

    Member i is the entry ``(row[i], col[i])`` of the judgments' matrices and belongs to the group
    ``group[i]``, numbered across all queries; ``group_row[g]`` is the query row of group g. An id
    may belong to several groups.
    """

    row: np.ndarray
    col: np.ndarray
    group: np.ndarray
    group_row: np.ndarray

    def all_found(self, member_found: np.ndarray, n_queries: int) -> np.ndarray:
        """Per query: every one of its groups has a member for which ``member_found`` is true."""
        group_found = np.bincount(self.group, weights=member_found, minlength=len(self.group_row)) > 0
        missing = np.bincount(self.group_row, weights=~group_found, minlength=n_queries)
        return missing == 0


@dataclass(frozen=True)
class RankedJudgments:
    """The prepared, metric-ready form of a run against its qrels (one row per query).

    ``ranks[i]`` holds the ranks of query i's relevant ids in ascending order (``inf`` = not
    retrieved or padding; tie-aware: first rank of the id's tie group), ``gains[i]`` their grades,
    ``ideal_gains[i]`` the grades of all of query i's relevant ids sorted descending (0 padding).
    ``groups`` is None when every relevant id is a gold group of its own (flat or graded qrels).
    """

    qids: list[str]
    ranks: np.ndarray
    gains: np.ndarray
    ideal_gains: np.ndarray
    n_relevant: np.ndarray
    n_retrieved: np.ndarray
    groups: GroupMembership | None = None
    tie_sizes: np.ndarray | None = None

    @classmethod
    def from_flat(
        cls,
        qids: Sequence[str],
        row: np.ndarray,
        rank: np.ndarray,
        grade: np.ndarray,
        n_retrieved: np.ndarray,
        members: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        tie_size: np.ndarray | None = None,
    ) -> RankedJudgments:
        """Build from one entry per relevant id: its query row, its rank (``inf`` if not
        retrieved), its grade (> 0) and, tie-aware, the size of its tie group (``rank`` is then
        the group's first rank). ``members`` = (entry index, group number, row of each group)
        when the qrels had groups of several ids."""
        n_queries = len(qids)
        row = np.asarray(row, dtype=np.int64)
        rank = np.asarray(rank, dtype=np.float64)
        grade = np.asarray(grade, dtype=np.float64)
        n_relevant = np.bincount(row, minlength=n_queries)
        width = max(int(n_relevant.max(initial=0)), 1)
        # Order entries by (row, rank); the column of an entry is its position inside its row.
        order = np.lexsort((rank, row))
        starts = np.concatenate(([0], np.cumsum(n_relevant)[:-1]))
        col = np.arange(len(row)) - starts[row[order]]
        ranks = np.full((n_queries, width), np.inf)
        gains = np.zeros((n_queries, width))
        ranks[row[order], col] = rank[order]
        gains[row[order], col] = grade[order]
        ideal_gains = -np.sort(-gains, axis=1)
        tie_sizes = None
        if tie_size is not None:
            tie_sizes = np.ones((n_queries, width))
            tie_sizes[row[order], col] = np.asarray(tie_size, dtype=np.float64)[order]
        groups = None
        if members is not None:
            entry, group, group_row = (np.asarray(part, dtype=np.int64) for part in members)
            col_of_entry = np.empty(len(order), dtype=np.int64)
            col_of_entry[order] = col
            groups = GroupMembership(row[entry], col_of_entry[entry], group, group_row)
        return cls(list(qids), ranks, gains, ideal_gains, n_relevant,
                   np.asarray(n_retrieved, dtype=np.int64), groups, tie_sizes)

    def hits(self, k: int | None) -> np.ndarray:
        """Boolean (queries x width): relevant id j of query i is in the top k (whole list if None).
        Resolved ranks only (tie-aware: the entry's tie group *starts* in the top k)."""
        return np.isfinite(self.ranks) if k is None else self.ranks <= k

    def ideal_dcg(self, k: int | None) -> np.ndarray:
        """IDCG@k: the grades of all relevant ids sorted descending, discounted by log2(rank + 1), cut at k."""
        width = self.ideal_gains.shape[1] if k is None else min(k, self.ideal_gains.shape[1])
        return (self.ideal_gains[:, :width] / np.log2(np.arange(2, width + 2))).sum(axis=1)

    def undefined(self, values: np.ndarray) -> np.ndarray:
        """``values`` with NaN where the query has no relevant id."""
        return np.where(self.n_relevant > 0, values, np.nan)
