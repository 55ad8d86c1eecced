"""The matrix's outputs: the terminal pass/fail tables (tabulate), ``result.json`` (atomic) and
``index.html`` (one self-contained page in the run report's style, jinja2 autoescaped).

A table per condition: one line per row (question set/method, or metric case), one column per
metric; a cell shows the measured value (6 decimals) and ``pass``, or ``FAIL`` with the expected
value and bound. Conditions are separated by their title and exact command.
"""

from __future__ import annotations

from pathlib import Path

from tabulate import tabulate

from rag.io_utils import atomic_write_text
from rag.reproduce.check import Cell
from rag.reproduce.runner import RESULT_FILE, ConditionResult, MatrixResult

HTML_FILE = "index.html"


def cell_text(cell: Cell) -> str:
    measured = "not measured" if cell.measured is None else f"{cell.measured:.6f}"
    if cell.passed:
        return f"{measured} pass"
    return f"{measured} FAIL (expected {cell.expected:.6f} ± {cell.abs:g})"


def rows_of(condition: ConditionResult) -> tuple[list[str], dict[tuple[str, str], dict[str, Cell]]]:
    """(metrics, {(row, tolerance): {metric: cell}}) of one condition, in file order; a row whose
    metrics have two tolerances (retrieval and answers of one method) is two lines."""
    metrics = list(dict.fromkeys(cell.metric for cell in condition.cells))
    rows: dict[tuple[str, str], dict[str, Cell]] = {}
    for cell in condition.cells:
        rows.setdefault((cell.row, cell.tolerance), {})[cell.metric] = cell
    return metrics, rows


def grid(condition: ConditionResult) -> tuple[list[str], list[list[str]]]:
    """(header, lines) of one condition's terminal table."""
    metrics, rows = rows_of(condition)
    lines = [[row, tolerance] + [cell_text(cells[m]) if m in cells else "" for m in metrics]
             for (row, tolerance), cells in rows.items()]
    return ["row", "tolerance", *metrics], lines


def terminal_text(result: MatrixResult) -> str:
    """Every condition's table, then the failing cells by name (or that all passed)."""
    parts = []
    for condition in result.conditions:
        header, lines = grid(condition)
        status = "pass" if condition.passed else "FAIL"
        parts.append(f"{condition.name} ({status}, {condition.seconds:.1f} s): {condition.title}\n"
                     f"  command: {condition.command}" + (f"\n  error: {condition.error}" if condition.error else "")
                     + (f"\n  run: {condition.run_dir}" if condition.run_dir else ""))
        parts.append(tabulate(lines, headers=header, tablefmt="simple"))
    parts.append(summary_line(result))
    return "\n\n".join(parts)


def summary_line(result: MatrixResult) -> str:
    cells = [cell for condition in result.conditions for cell in condition.cells]
    if result.passed:
        n = len(result.conditions)
        return f"reproduced: all {len(cells)} cells of {n} condition{'' if n == 1 else 's'} within their tolerances"
    failed = [f"{c.name} (its command failed: all {len(c.cells)} cells)" if c.error else ", ".join(
        cell.name for cell in c.failed_cells) for c in result.conditions if not c.passed]
    n_failed = sum(len(c.failed_cells) for c in result.conditions)
    return f"NOT reproduced: {n_failed} of {len(cells)} cells outside their tolerances: " + "; ".join(failed)


def write_result(result: MatrixResult, output: Path) -> Path:
    output.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(output / RESULT_FILE, result.model_dump_json(indent=2) + "\n")


def write_html(result: MatrixResult, output: Path) -> Path:
    from jinja2 import Environment, PackageLoader

    environment = Environment(loader=PackageLoader("rag.results", "templates"), autoescape=True)
    tables = []
    for condition in result.conditions:
        metrics, rows = rows_of(condition)
        tables.append({"condition": condition, "metrics": metrics,
                       "rows": [(row, tolerance, cells) for (row, tolerance), cells in rows.items()]})
    html = environment.get_template("reproduce.html.j2").render(
        title="Reproduction matrix", summary=summary_line(result), passed=result.passed, tables=tables)
    return atomic_write_text(output / HTML_FILE, html)
