"""Command line: ``python scripts/run_benchmark.py --config configs/wiki.yaml [options]``; with
``sweep`` first (``rag-bench sweep --config C --grid KEY=V1,V2``) a parameter sweep (:mod:`rag.sweep.cli`).

Exit codes: 0 success; 2 for any user error (:class:`rag.errors.BenchError`: bad config, bad data,
missing file), printed as one line on stderr without a traceback; 130 on Ctrl-C, after the work
done so far is saved (``--resume`` continues it). Unexpected exceptions keep their traceback, since
they are bugs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rag.errors import BenchError, ConfigError

EXIT_OK, EXIT_USER_ERROR, EXIT_INTERRUPTED = 0, 2, 130


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so bad options follow the same exit-2 path."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigError("command line", message)


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="run_benchmark", description="Compare retrieval strategies end to end.")
    parser.add_argument("--config", required=True, type=Path, help="YAML run configuration")
    parser.add_argument("--output-dir", type=Path, help="run directory (default: <output_dir>/<name>/<timestamp>)")
    parser.add_argument("--limit", type=int, help="use only the first N questions of each question set")
    parser.add_argument("--methods", help="comma-separated retriever names to evaluate (default: all)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. --set top_k=20 (value parsed as YAML); repeatable")
    parser.add_argument("--no-generation", action="store_true", help="skip answer generation")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run (same config)")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="skip invalid data records (counted in the manifest and report) instead of failing")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser


def overrides_from_args(args: argparse.Namespace) -> list[str]:
    """``--limit``, ``--methods`` and ``--no-generation`` become config overrides, so they are part of
    the run's plan (and a resume with different options is refused)."""
    overrides = list(args.overrides)
    if args.limit is not None:
        overrides.append(f"limit={args.limit}")
    if args.methods is not None:
        names = [name.strip() for name in args.methods.split(",") if name.strip()]
        overrides.append(f"methods=[{', '.join(names)}]")
    if args.no_generation:
        overrides.append("generation=null")
    return overrides


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sweep"]:  # `rag-bench sweep ...`: rag.sweep.cli
        from rag.sweep.cli import main as sweep_main

        return sweep_main(argv[1:])
    from rag.config import load_config  # imported here so `--help` stays fast

    try:
        args = build_parser().parse_args(argv)
        config = load_config(args.config, overrides_from_args(args))
        from rag.runner.pipeline import RunOptions, run_benchmark
        from rag.runner.summary import print_summary

        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        if args.quiet:
            os.environ["TQDM_DISABLE"] = "1"  # also silences the progress bars of the retrievers
        options = RunOptions(output_dir=args.output_dir.resolve() if args.output_dir else None,
                             resume=args.resume, skip_invalid=args.skip_invalid, progress=not args.quiet)
        result = run_benchmark(config, options)
    except BenchError as exc:
        from rag.runner.redaction import Redactor

        print(f"error: {Redactor().text(str(exc))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("\ninterrupted: the work done so far is saved; re-run with --resume to continue", file=sys.stderr)
        return EXIT_INTERRUPTED
    print_summary(result)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
