"""The files of a sweep directory, and :class:`SweepSummary`, the sweep read back for rendering.

- ``sweep.csv``: one row per grid point x method x question set x split (``dev`` / ``test``): the
  grid values, the number of questions, the mean of every metric, and the CI of the selection
  metric. Point ``config`` is the config's own setting (also when it coincides with a grid point).
- ``sweep.json``: the grid, the split (fraction, seed, the dev question ids per set), the selection
  table (:mod:`rag.sweep.select`), the verdicts and the plot files.
- ``sweep.md``: the selection table and one verdict line per method and question set.
- ``sweep_<key>.png``: one plot per grid key (:mod:`rag.sweep.plots`).
- ``manifest.json`` (status, timings, packages) and ``plan.json``, as for a run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rag.io_utils import atomic_write_json, atomic_write_text
from rag.results.csv_files import write_csv

SWEEP_JSON, SWEEP_CSV, SWEEP_MD = "sweep.json", "sweep.csv", "sweep.md"


@dataclass(frozen=True)
class SweepSummary:
    """What a report needs from a sweep: the selection table (one row per method and question set
    the grid touches), the verdict lines, the plots, and the settings that explain them."""

    directory: Path
    metric: str
    dev_fraction: float
    seed: int
    grid: dict[str, list[Any]]
    selection: pd.DataFrame
    verdicts: list[str]
    plots: list[Path]

    @property
    def table_path(self) -> Path:
        return self.directory / SWEEP_CSV


def load_sweep_summary(directory: str | Path) -> SweepSummary:
    """The :class:`SweepSummary` of a finished sweep directory (from its ``sweep.json``)."""
    directory = Path(directory)
    data = json.loads((directory / SWEEP_JSON).read_text(encoding="utf-8"))
    return SweepSummary(
        directory=directory,
        metric=data["select"],
        dev_fraction=data["split"]["dev_fraction"],
        seed=data["split"]["seed"],
        grid={axis["key"]: axis["values"] for axis in data["grid"]},
        selection=pd.DataFrame(data["selection"]),
        verdicts=list(data["verdicts"]),
        plots=[directory / name for name in data["plots"]],
    )


def write_sweep_files(directory: Path, table: pd.DataFrame, summary: SweepSummary, record: dict[str, Any],
                      facts: list[str]) -> None:
    """sweep.csv, sweep.json (``record`` plus the selection and verdicts) and sweep.md."""
    write_csv(table, directory / SWEEP_CSV)
    selection = [{key: _plain(value) for key, value in row.items()} for row in summary.selection.to_dict("records")]
    atomic_write_json(directory / SWEEP_JSON, {
        **record, "select": summary.metric, "selection": selection, "verdicts": summary.verdicts,
        "plots": [path.name for path in summary.plots],
    })
    atomic_write_text(directory / SWEEP_MD, markdown(summary, facts))


def _plain(value: Any) -> Any:
    """numpy scalars as Python values (floats at full precision), NaN as None."""
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and value != value else value


def selection_table(summary: SweepSummary) -> pd.DataFrame:
    """The selection as display strings: chosen setting, its optimistic dev mean, test means with
    CIs, the paired difference with its CI, p and significance."""
    rows = []
    for row in summary.selection.to_dict("records"):
        rows.append({
            "method": row["method"],
            "set": row["question_set"],
            "chosen on dev": row["chosen"],
            "dev (optimistic)": f"{row['dev_chosen_optimistic']:.4f}",
            "test: chosen": _with_ci(row, "test_chosen", "{:.4f}"),
            "config's setting": row["config_setting"],
            "test: config": _with_ci(row, "test_config", "{:.4f}"),
            "test: chosen - config": _with_ci(row, "test_diff", "{:+.4f}"),
            "p (adjusted)": "–" if row["chosen_is_config"] else f"{row['p_adjusted']:.3g}",
            "significant": "yes" if row["significant"] else "no",
        })
    return pd.DataFrame(rows)


def _with_ci(row: dict[str, Any], prefix: str, number: str) -> str:
    return f"{number.format(row[prefix])} [{number.format(row[prefix + '_ci_low'])}, {number.format(row[prefix + '_ci_high'])}]"


def markdown(summary: SweepSummary, facts: list[str]) -> str:
    lines = [f"# Sweep: {summary.metric}, chosen on dev, reported on test", "", *(f"- {fact}" for fact in facts), ""]
    if summary.selection.empty:
        lines.append("No grid key changes any evaluated method: nothing to select.")
    else:
        lines += [selection_table(summary).to_markdown(index=False), "", "## Verdicts", "",
                  *(f"- {line}" for line in summary.verdicts), ""]
    lines += ["The dev column is the best of several noisy means (the winner's curse): optimistic. The test columns "
              "are measured on questions the choice never saw: mean [bootstrap CI]; chosen - config is the mean paired "
              "difference [bootstrap CI of the per-question differences]; p is the two-sided sign-flip randomization "
              "test, Holm-adjusted across the sweep's comparisons when the config's evaluation.correction is holm "
              "(sweep.json keeps the raw p_value too).", ""]
    lines += [f"![{path.stem}]({path.name})" for path in summary.plots]
    return "\n".join(lines) + "\n"
