"""Measured against expected, cell by cell: a cell passes when ``|measured - expected| <= abs`` of
its row's tolerance (:mod:`rag.reproduce.matrix`); a value that was not measured fails."""

from __future__ import annotations

from pydantic import BaseModel

from rag.reproduce.matrix import Condition
from rag.reproduce.measure import Measured

FLOAT_SLACK = 1e-12  # the subtraction's own rounding: an exact bound of 0 still passes an equal value


class Cell(BaseModel):
    condition: str
    row: str
    metric: str
    expected: float
    measured: float | None
    tolerance: str
    abs: float
    passed: bool

    @property
    def name(self) -> str:
        """The cell's name in messages: ``condition:row:metric`` (``smoke:smoke/dense:mrr@10``)."""
        return f"{self.condition}:{self.row}:{self.metric}"

    @property
    def difference(self) -> float | None:
        return None if self.measured is None else self.measured - self.expected


def check(condition: Condition, measured: Measured) -> list[Cell]:
    """One :class:`Cell` per expected value of ``condition``, in file order."""
    spec = condition.spec
    cells = []
    for row in spec.rows:
        bound = spec.tolerances[row.tolerance].abs
        for metric, expected in row.expected.items():
            value = measured.get((row.label, metric))
            cells.append(Cell(condition=condition.name, row=row.label, metric=metric, expected=expected,
                              measured=value, tolerance=row.tolerance, abs=bound,
                              passed=value is not None and abs(value - expected) <= bound + FLOAT_SLACK))
    return cells


def not_measured(condition: Condition) -> list[Cell]:
    """Every cell of a condition whose command failed: each fails, unmeasured."""
    return check(condition, {})
