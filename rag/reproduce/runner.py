"""Run conditions of the matrix and keep the last result of each.

Each ``run`` condition gets a new run directory ``<output>/<condition>/<UTC timestamp>``
(run by the injected :data:`rag.reproduce.measure.RunCommand`). ``<output>/result.json`` holds the last result of every condition
ever reproduced there: a call replaces the entries of the conditions it ran and keeps the others,
so ``rag-bench reproduce smoke`` does not forget the last main job, and the README blocks
(:mod:`rag.reproduce.readme`) read each condition's last run. A condition whose command fails
(a :class:`rag.errors.BenchError`) fails every one of its cells, with the error kept; the other
conditions still run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ValidationError

from rag.errors import BenchError, ConfigError
from rag.reproduce.check import Cell, check, not_measured
from rag.reproduce.matrix import CasesCondition, Condition, Tolerance
from rag.reproduce.measure import RunCommand, measure_cases, measure_run

RESULT_FILE = "result.json"


class ConditionResult(BaseModel):
    name: str
    title: str
    command: str
    file: str
    run_dir: str | None
    finished_at: str
    seconds: float
    error: str | None
    tolerances: dict[str, Tolerance] = {}  # the condition's bounds and their reasons, shown beside the cells
    cells: list[Cell]

    @property
    def passed(self) -> bool:
        return self.error is None and all(cell.passed for cell in self.cells)

    @property
    def failed_cells(self) -> list[Cell]:
        return [cell for cell in self.cells if not cell.passed]


class MatrixResult(BaseModel):
    conditions: list[ConditionResult]

    @property
    def passed(self) -> bool:
        return all(condition.passed for condition in self.conditions)

    def merged_into(self, earlier: "MatrixResult | None") -> "MatrixResult":
        """This result's conditions replace those of ``earlier``; the others stay, in name order."""
        kept = {c.name: c for c in (earlier.conditions if earlier else [])}
        kept.update({c.name: c for c in self.conditions})
        return MatrixResult(conditions=[kept[name] for name in sorted(kept)])


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def reproduce_one(condition: Condition, output: Path, run_command: RunCommand) -> ConditionResult:
    """Run one condition (a ``run`` condition's command through ``run_command``) and check its cells."""
    began, run_dir, error = time.perf_counter(), None, None
    spec = condition.spec
    try:
        if isinstance(spec, CasesCondition):
            cells = check(condition, measure_cases(spec))
        else:
            run_dir = output / condition.name / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            run_command(spec, run_dir)
            cells = check(condition, measure_run(spec, run_dir))
    except BenchError as exc:
        error, cells = str(exc), not_measured(condition)
        run_dir = run_dir if run_dir is not None and run_dir.is_dir() else None  # a config error opens none
    return ConditionResult(name=condition.name, title=spec.title, command=spec.command, file=str(condition.path),
                           run_dir=None if run_dir is None else str(run_dir), finished_at=_utc_now(),
                           seconds=round(time.perf_counter() - began, 3), error=error,
                           tolerances=spec.tolerances, cells=cells)


def reproduce(conditions: list[Condition], output: Path, run_command: RunCommand,
              progress: Callable[[str], None] = lambda line: None) -> MatrixResult:
    """Run ``conditions`` in order; ``progress`` gets one line as each one starts."""
    results = []
    for condition in conditions:
        progress(f"reproducing {condition.name}: {condition.spec.command}")
        results.append(reproduce_one(condition, output, run_command))
    return MatrixResult(conditions=results)


def read_result(output: Path) -> MatrixResult | None:
    """The last result kept in ``output`` (None when there is none yet)."""
    path = output / RESULT_FILE
    if not path.is_file():
        return None
    try:
        return MatrixResult.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise ConfigError(None, f"not a reproduction result ({' '.join(str(exc).split())[:200]}); remove it or "
                                "choose another --output-dir", source=path) from None
