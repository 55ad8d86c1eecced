"""Validation of the inputs of one query: its ground truth, its ranked list and the cut-off ``k``.

Ground truth comes in the three shapes of docs/evaluation.md, all normalized to
:class:`GroundTruth`:

1. a flat list of relevant ids ``["url_A", "url_B"]`` -> every id grade 1, one group per id;
2. a graded dict ``{"chunk_12": 3, "chunk_04": 0}`` -> grades as given (grade > 0 is relevant),
   one group per relevant id;
3. groups ``[["test-1", "test-2"], ["test-3"]]`` (AutoRAG's retrieval_gt: OR inside a group, AND
   across groups) -> every id grade 1; a plain string item is a group of one. An empty group is an
   error unless asked for (the autorag convention reads it as undefined ground truth).

Bad input raises ``ValueError`` naming what was expected.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GroundTruth:
    """Normalized ground truth of one query.

    ``grades`` holds every judged id (non-relevant ones included). ``explicit_groups`` holds the
    AutoRAG groups when the input had groups; otherwise :attr:`groups` is one group per relevant id.
    """

    grades: Mapping[str, float]
    explicit_groups: tuple[frozenset[str], ...] | None = None

    @property
    def relevant(self) -> dict[str, float]:
        """The ids with grade > 0 and their grades: the relevant set R of the trec convention."""
        return {doc_id: grade for doc_id, grade in self.grades.items() if grade > 0}

    @property
    def groups(self) -> tuple[frozenset[str], ...]:
        """AutoRAG groups: OR inside a group, AND across groups."""
        if self.explicit_groups is not None:
            return self.explicit_groups
        return tuple(frozenset([doc_id]) for doc_id in self.relevant)

    @property
    def blank(self) -> bool:
        """AutoRAG's undefined ground truth (``MetricInput.is_fields_notnone`` on ``retrieval_gt``):
        no group, an empty group, or an id that is empty or only white space."""
        return not self.groups or any(not group or any(not doc_id.strip() for doc_id in group)
                                      for group in self.groups)


def _as_list(value: object, where: str, ordered: bool = False) -> list:
    """A list from a list, tuple or 1-D numpy array (or a set, where order does not matter)."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{where}: expected a 1-D array of ids, got shape {value.shape}")
        return value.tolist()
    accepted = Sequence if ordered else (Sequence, Set)
    if isinstance(value, (str, bytes)) or not isinstance(value, accepted):
        kind = "an ordered list" if ordered else "a list"
        raise ValueError(f"{where}: expected {kind} of ids, got {type(value).__name__} {value!r:.80}")
    return list(value)


def _check_id(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: ids must be strings, got {type(value).__name__} {value!r:.80}")
    return value


def check_grade(value: object, where: str) -> float:
    """A relevance grade: a finite real number (bool is rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{where}: a relevance grade must be a finite number, got {value!r:.80}")
    return float(value)


def parse_ground_truth(ground_truth: object, where: str = "ground_truth", empty_groups: bool = False) -> GroundTruth:
    """Normalize any of the three ground-truth shapes (see module docstring); ``empty_groups``
    keeps an empty group instead of raising ``ValueError``."""
    if isinstance(ground_truth, Mapping):
        return GroundTruth({_check_id(doc_id, f"{where} key"): check_grade(grade, f"{where}[{doc_id!r}]")
                            for doc_id, grade in ground_truth.items()})
    groups_list: list[frozenset[str]] = []
    for position, item in enumerate(_as_list(ground_truth, where)):
        item_where = f"{where}[{position}]"
        if isinstance(item, str):
            group = frozenset([item])
        elif not isinstance(item, (Sequence, Set, np.ndarray)):
            raise ValueError(f"{item_where}: expected an id (a string) or a group (a list of id strings), "
                             f"got {type(item).__name__} {item!r:.80}")
        else:
            group = frozenset(_check_id(doc_id, item_where) for doc_id in _as_list(item, item_where))
            if not group and not empty_groups:
                raise ValueError(f"{item_where}: a group of relevant ids must not be empty")
        groups_list.append(group)
    grades = {doc_id: 1.0 for group in groups_list for doc_id in sorted(group)}
    return GroundTruth(grades, tuple(groups_list))


def parse_ranked_ids(retrieved: object, where: str = "retrieved") -> list[str]:
    """The ranked list (rank 1 first) with later duplicates dropped: an id counts once, at its best rank."""
    ids = [_check_id(doc_id, f"{where}[{i}]") for i, doc_id in enumerate(_as_list(retrieved, where, ordered=True))]
    return list(dict.fromkeys(ids))


def check_cutoff(k: object, where: str = "k") -> int | None:
    """``None`` (the whole list) or a positive integer."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"{where}: the cut-off must be a positive integer or None, got {k!r}")
    return int(k)
