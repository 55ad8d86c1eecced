"""``rag-bench sweep --config C --grid KEY=V1,V2,... [--grid ...]``: the command line of a sweep.

Called by :func:`rag.cli.main`, whose handlers give every failure one redacted line and the exit
codes of a run (2 a user error — a bad grid key names the key —, 74 a file-system error, 130 Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rag.cli.common import EXIT_OK, ArgumentParser, add_selection_options, overrides_from_args
from rag.progress import PROGRESS_ENV
from rag.sweep.grid import DEFAULT_MAX_POINTS
from rag.sweep.outputs import selection_table
from rag.sweep.split import DEFAULT_DEV_FRACTION

if TYPE_CHECKING:
    from rag.sweep.run import SweepResult


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="rag-bench sweep", description=(
        "Run a config over a grid of settings; choose the best setting per method on dev questions and "
        "report it on held-out test questions beside the config's own setting."))
    parser.add_argument("--config", required=True, type=Path,
                        help="YAML run configuration, or a built-in config name (smoke, wiki; an existing file wins)")
    parser.add_argument("--grid", action="append", required=True, metavar="KEY=V1,V2,...",
                        help="a dotted config key (as in --set; retrievers by name or index) and its values; repeatable "
                             "(the sweep runs the cartesian product)")
    parser.add_argument("--dev-fraction", type=float, default=DEFAULT_DEV_FRACTION,
                        help=f"share of each question set used to choose (default {DEFAULT_DEV_FRACTION}); the rest is test")
    parser.add_argument("--select", help="metric the choice is made on (default: the first configured metric)")
    parser.add_argument("--output-dir", type=Path, help="sweep directory (default: <output_dir>/<name>-sweep/<timestamp>)")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted sweep (same config and grid; in --output-dir, else the newest)")
    parser.add_argument("--max-points", type=int, default=DEFAULT_MAX_POINTS,
                        help=f"refuse a grid of more points than this, before any work (default {DEFAULT_MAX_POINTS})")
    add_selection_options(parser)
    parser.set_defaults(no_generation=False)  # sweeps are retrieval-only anyway (rag.sweep.run)
    return parser


def summary_text(result: "SweepResult") -> str:
    summary = result.summary
    lines = ["", f"Sweep: {len(result.table['point'].unique()) - 1} grid points, chosen on dev by {summary.metric}, "
             f"reported on test (dev fraction {summary.dev_fraction}, seed {summary.seed}); {result.seconds:.1f} s", ""]
    if summary.selection.empty:
        lines.append("No grid key changes any evaluated method: nothing to select.")
    else:
        lines += [selection_table(summary).to_markdown(index=False), "", *summary.verdicts]
    lines += ["", f"Outputs: {summary.directory} (sweep.md, sweep.csv, sweep.json, "
              f"{', '.join(path.name for path in summary.plots) or 'no plots'})"]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.quiet:
        os.environ[PROGRESS_ENV] = "off"  # rag.cli.main restores it
    from rag.sweep.run import SweepRequest, run_sweep

    request = SweepRequest(
        config=args.config, grid=args.grid, overrides=overrides_from_args(args), dev_fraction=args.dev_fraction,
        select=args.select, output_dir=args.output_dir.resolve() if args.output_dir else None, progress=not args.quiet,
        resume=args.resume, max_points=args.max_points,
    )
    print(summary_text(run_sweep(request)))
    return EXIT_OK
