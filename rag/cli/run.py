"""``rag-bench run --config C [options]`` (also ``rag-bench --config C``, and
``python scripts/run_benchmark.py --config C``): one benchmark run, printed as the terminal summary."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from rag.cli.common import EXIT_OK, ArgumentParser, add_selection_options, overrides_from_args
from rag.errors import ConfigError
from rag.progress import PROGRESS_ENV
from rag.secrets import Redactor


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="rag-bench run", description="Compare retrieval strategies end to end.")
    parser.add_argument("--config", required=True, type=Path,
                        help="YAML run configuration, or a built-in config name (smoke, wiki; an existing file wins)")
    parser.add_argument("--output-dir", type=Path, help="run directory (default: <output_dir>/<name>/<timestamp>)")
    add_selection_options(parser)
    parser.add_argument("--no-generation", action="store_true", help="skip answer generation")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run (same config)")
    parser.add_argument("--verbose", action="store_true",
                        help="print the verdict of every question set and metric below the recommendation")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="skip invalid data records (counted in the manifest and report) instead of failing")
    parser.add_argument("--strict", action="store_true",
                        help="a files data set: an unreadable file is an error instead of skipped (dataset.strict)")
    return parser


def main(argv: Sequence[str], use_redactor) -> int:
    """Run the benchmark; ``use_redactor`` (from :func:`rag.cli.main`) installs the run's redactor for
    every line printed from here on, the failure line included."""
    args = build_parser().parse_args(argv)
    if args.quiet:
        os.environ[PROGRESS_ENV] = "off"  # every bar of ours, and the libraries' (rag.progress); rag.cli restores it
    from rag.config import load_config  # imported here so `--help` stays fast

    config = load_config(args.config, overrides_from_args(args))
    if args.strict:  # dataset.strict of a folder of files: part of the config, so of the run's plan
        if config.dataset.format != "files":
            raise ConfigError("--strict", f"applies to a folder of files (dataset.format: files), not to "
                              f"{config.dataset.format!r}; bad records of other formats fail unless --skip-invalid")
        config = load_config(args.config, [*overrides_from_args(args), "dataset.strict=true"])
    redactor = use_redactor(Redactor.for_config(config))
    from rag.runner.pipeline import RunOptions, run_benchmark
    from rag.runner.summary import summary_text

    options = RunOptions(output_dir=args.output_dir.resolve() if args.output_dir else None,
                         resume=args.resume, skip_invalid=args.skip_invalid, progress=not args.quiet)
    result = run_benchmark(config, options)
    print(redactor.text(summary_text(result, verbose=args.verbose)))
    return EXIT_OK
