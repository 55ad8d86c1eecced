"""``rag-bench reproduce [NAME ...]``: run the reproduction matrix (:mod:`rag.reproduce`) and check
every cell against its expected value and tolerance.

- no NAME: every condition of the matrix; ``--list`` prints them (name, source, cells, command);
- prints a pass/fail table per condition, writes ``<output-dir>/result.json`` and ``index.html``;
  exits 4 naming every failing cell when any cell is outside its tolerance (0 when all pass);
- ``--update-expected``: after running, the measured values become the named conditions' expected
  values in their YAML files (tolerances and comments kept), the diff is printed, and the cells are
  checked against the new values;
- ``--readme FILE``: runs nothing; rewrites FILE's ``<!-- reproduce:NAME -->`` blocks from each
  condition's last run (:mod:`rag.reproduce.readme`).

A bad condition file is one line naming the file and key, exit 2 (:class:`rag.errors.ConfigError`).
"""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout
from collections.abc import Sequence
from pathlib import Path

from rag.cli.common import EXIT_NOT_REPRODUCED, EXIT_OK, ArgumentParser
from rag.cli.run import main as run_main
from rag.errors import BenchError
from rag.io_utils import atomic_write_text
from rag.reproduce.check import check
from rag.reproduce.matrix import Condition, RunCondition, load_condition, load_matrix, select
from rag.reproduce.readme import rewrite_blocks
from rag.reproduce.runner import ConditionResult, MatrixResult, read_result, reproduce
from rag.reproduce.update import update_expected
from rag.reproduce.writers import summary_line, terminal_text, write_html, write_result
from rag.resources import reproduce_dir


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="rag-bench reproduce",
                            description="Run the reproduction matrix and check every published number.")
    parser.add_argument("names", nargs="*", metavar="NAME", help="conditions to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the conditions and exit")
    parser.add_argument("--matrix", type=Path, default=None,
                        help="directory of condition files (default: the package's, reproduce/ in a checkout)")
    parser.add_argument("--output-dir", type=Path, default=Path("runs") / "reproduce",
                        help="where runs, result.json and index.html go (default: runs/reproduce)")
    parser.add_argument("--update-expected", action="store_true",
                        help="write the measured values into the conditions' files as expected values")
    parser.add_argument("--readme", type=Path, metavar="FILE",
                        help="rewrite FILE's <!-- reproduce:NAME --> blocks from the last runs; runs nothing")
    return parser


def main(argv: Sequence[str], use_redactor) -> int:
    """``use_redactor`` (from :func:`rag.cli.main`) is handed to each run, as ``rag-bench run`` gets it."""
    args = build_parser().parse_args(argv)
    conditions = load_matrix(args.matrix or reproduce_dir())
    if args.list:
        for condition in conditions:
            spec = condition.spec
            n_cells = sum(len(row.expected) for row in spec.rows)
            print(f"{condition.name}: {spec.title} ({spec.source}, {len(spec.rows)} rows, {n_cells} cells)\n"
                  f"  {spec.command}")
        return EXIT_OK
    if args.readme is not None:
        written = rewrite_blocks(args.readme, conditions, read_result(args.output_dir))
        print(f"{args.readme}: rewrote block{'' if len(written) == 1 else 's'} " + (", ".join(written) or "(none found)"))
        return EXIT_OK
    chosen = select(conditions, args.names)
    result = reproduce(chosen, args.output_dir, lambda spec, run_dir: run_command(spec, run_dir, use_redactor),
                       progress=lambda line: print(line, flush=True))
    if args.update_expected:
        result = MatrixResult(conditions=[_updated(condition, entry) for condition, entry in zip(chosen, result.conditions)])
    kept = result.merged_into(read_result(args.output_dir))
    write_result(kept, args.output_dir)
    page = write_html(kept, args.output_dir)
    print(terminal_text(result), f"Outputs: {args.output_dir / 'result.json'}, {page}", sep="\n\n")
    if result.passed:
        return EXIT_OK
    print(f"error: {summary_line(result)}", file=sys.stderr)
    return EXIT_NOT_REPRODUCED


def _updated(condition: Condition, entry: ConditionResult) -> ConditionResult:
    """Write ``entry``'s measured values into the condition's file, print the diff, and check the
    cells again against the file as written."""
    if entry.error is not None:
        return entry
    diff = update_expected(condition, entry)
    print(diff or f"{condition.path}: expected values unchanged")
    measured = {(cell.row, cell.metric): cell.measured for cell in entry.cells}
    return entry.model_copy(update={"cells": check(load_condition(condition.path), measured)})


SUMMARY_FILE = "summary.txt"  # what the run printed (its terminal summary), kept in its run directory


def run_command(spec: RunCondition, run_dir: Path, use_redactor) -> None:
    """Run the condition's ``rag-bench run`` command into ``run_dir`` (a new directory), in this
    process, as ``rag-bench run`` would (``use_redactor`` from :func:`rag.cli.main`)."""
    argv = spec.argv + ["--output-dir", str(run_dir)] + ([] if "--quiet" in spec.argv else ["--quiet"])
    summary = io.StringIO()
    try:
        with redirect_stdout(summary):
            code = run_main(argv, use_redactor)
    finally:
        if run_dir.is_dir():
            atomic_write_text(run_dir / SUMMARY_FILE, summary.getvalue())
    if code != EXIT_OK:
        raise BenchError(f"'{spec.command}' exited with {code}; see {run_dir / SUMMARY_FILE}")
