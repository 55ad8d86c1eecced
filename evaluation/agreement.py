"""Agreement between two judges who graded the same items: weighted Cohen's kappa with what it
must be read beside (the observed and chance agreement, each judge's base rate of relevant grades).

Kappa alone misleads when one grade dominates (Feinstein & Cicchetti 1990: high agreement, low
kappa): with 90% of a pool graded 0 by both judges, two judges who agree on every 0 and on no
relevant passage still agree 90% of the time. So the base rates are printed beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import cohen_kappa_score

GRADE_LABELS = (0, 1, 2, 3)


@dataclass(frozen=True)
class KappaResult:
    n: int  # items both judges graded
    kappa: float  # linearly weighted Cohen's kappa; nan when undefined (one grade only on both sides)
    observed: float  # share of items with the same grade
    base_rate_a: float  # share of items judge a graded >= relevant_grade
    base_rate_b: float
    relevant_grade: int


def weighted_kappa(a: Sequence[int], b: Sequence[int], relevant_grade: int = 2,
                   weights: str = "linear") -> KappaResult:
    """Weighted Cohen's kappa of two judges' grades of the same items (``a[i]`` and ``b[i]`` grade
    item i; scikit-learn's :func:`~sklearn.metrics.cohen_kappa_score` over the grades 0..3), the
    observed exact agreement and each judge's share of grades ``>= relevant_grade``."""
    x, y = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
    if x.shape != y.shape:
        raise ValueError(f"{len(x)} grades against {len(y)}: expected the same items")
    if len(x) == 0:
        return KappaResult(0, float("nan"), float("nan"), float("nan"), float("nan"), relevant_grade)
    if len(set(x.tolist()) | set(y.tolist())) < 2:
        kappa = float("nan")  # one grade on both sides: chance agreement is 1, kappa is 0/0
    else:
        kappa = float(cohen_kappa_score(x, y, labels=list(GRADE_LABELS), weights=weights))
    return KappaResult(len(x), kappa, float((x == y).mean()), float((x >= relevant_grade).mean()),
                       float((y >= relevant_grade).mean()), relevant_grade)
