"""``rag-bench compare RUN_DIR RUN_DIR ...``: the comparison of several finished runs
(:mod:`rag.results.compare_runs`), printed and written to ``--output-dir``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from rag.cli.common import EXIT_OK, ArgumentParser, add_margin_option, add_seed_option
from rag.config import MAX_RESAMPLES
from rag.errors import ConfigError
from rag.results.comparison import StatisticsSettings
from rag.results.compare_runs import compare_runs, run_labels
from rag.results.format import terminal_tables, verdict_lines
from rag.results.writers import write_comparison


def main(argv: Sequence[str]) -> int:
    parser = ArgumentParser(prog="rag-bench compare", description="Compare the methods of several finished runs.")
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (each with per_query.csv)")
    parser.add_argument("--output-dir", type=Path, help="where to write (default: runs/compare/<UTC timestamp>)")
    parser.add_argument("--n-resamples", type=int, default=10000, help=f"1 to {MAX_RESAMPLES:,} (default 10000)")
    add_seed_option(parser, "the bootstrap and test seed (default 0)")
    add_margin_option(parser, "0.02")
    parser.set_defaults(seed=0)
    args = parser.parse_args(argv)
    if not 0 < args.n_resamples <= MAX_RESAMPLES:
        raise ConfigError("--n-resamples", f"{args.n_resamples}: expected 1 to {MAX_RESAMPLES:,}")
    if args.seed < 0:
        raise ConfigError("--seed", f"{args.seed}: expected a non-negative integer")
    comparison, n_shared, warnings = compare_runs(args.runs, StatisticsSettings(
        n_resamples=args.n_resamples, seed=args.seed, **({"margin": args.margin} if args.margin is not None else {})))
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    output = args.output_dir or Path("runs") / "compare" / stamp
    write_comparison(comparison, output, "as in the runs", "as in the runs")
    for warning in warnings:
        print(warning)
    print(f"{n_shared} shared question{'' if n_shared == 1 else 's'} per method; runs: " + ", ".join(run_labels(args.runs)))
    print("Verdict (best method, difference over the runner-up with its paired 95% CI):")
    print("\n".join(verdict_lines(comparison)), "", *terminal_tables(comparison), f"Outputs: {output}", sep="\n")
    return EXIT_OK
