"""Command line: ``rag-bench --config configs/wiki.yaml [options]`` (the same as
``python scripts/run_benchmark.py ...``), and ``rag-bench compare RUN_DIR RUN_DIR ...``
(:mod:`rag.results.compare_runs`).

Exit codes: 0 success; 2 for any user error (:class:`rag.errors.BenchError`: bad config, bad data,
missing file), printed as one line on stderr without a traceback; 130 on Ctrl-C, after the work
done so far is saved (``--resume`` continues it). Unexpected exceptions keep their traceback, since
they are bugs.
"""

from __future__ import annotations

import argparse
import logging
from importlib import metadata
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from evaluation.files import FileFormatError
from rag.errors import BenchError, ConfigError
from rag.progress import PROGRESS_ENV

EXIT_OK, EXIT_USER_ERROR, EXIT_INTERRUPTED = 0, 2, 130


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so bad options follow the same exit-2 path."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigError("command line", message)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="rag-bench", description="Compare retrieval strategies end to end. "
                            "'rag-bench compare RUN_DIR RUN_DIR ...' compares finished runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
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
    parser.add_argument("--quiet", action="store_true", help="no progress bars (off a terminal they are plain lines)")
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


def package_version() -> str:
    try:
        return metadata.version("hybrid-rag-bench")
    except metadata.PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    previous_mode = os.environ.get(PROGRESS_ENV)
    try:
        if argv[:1] == ["compare"]:
            from rag.results.compare_runs import main as compare_main

            return compare_main(argv[1:])
        args = build_parser().parse_args(argv)
        if args.quiet:
            os.environ[PROGRESS_ENV] = "off"
        from rag.config import load_config  # imported here so `--help` stays fast

        config = load_config(args.config, overrides_from_args(args))
        from rag.runner.pipeline import RunOptions, run_benchmark
        from rag.runner.summary import print_summary

        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        options = RunOptions(output_dir=args.output_dir.resolve() if args.output_dir else None,
                             resume=args.resume, skip_invalid=args.skip_invalid, progress=not args.quiet)
        result = run_benchmark(config, options)
    except (BenchError, FileFormatError) as exc:
        from rag.runner.redaction import Redactor

        print(f"error: {Redactor().text(str(exc))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("\ninterrupted: the work done so far is saved; re-run with --resume to continue", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if previous_mode is None:
            os.environ.pop(PROGRESS_ENV, None)
        else:
            os.environ[PROGRESS_ENV] = previous_mode
    print_summary(result)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
