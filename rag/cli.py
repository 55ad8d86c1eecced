"""Command line: ``rag-bench --config configs/wiki.yaml [options]`` (the same as
``python scripts/run_benchmark.py ...``); ``rag-bench compare RUN_DIR RUN_DIR ...``
(:mod:`rag.results.compare_runs`); ``rag-bench sweep --config C --grid KEY=V1,V2 ...`` (:mod:`rag.sweep.cli`).

Every failure is one line on stderr, never a traceback, with an exit code that says what to do:

====  =======================================================================================
code  meaning
====  =======================================================================================
0     success
2     a user error (:class:`rag.errors.BenchError`): bad config, bad data, missing file, a remote
      endpoint without its API key; the line names the file/line or the key
74    a file-system error (``EX_IOERR``): read-only or full disk, no permission; the line names
      the path. Nothing half-written is left: free the space and re-run with ``--resume``
130   interrupted by Ctrl-C (SIGINT); 143 terminated by SIGTERM. Both are handled alike: the work
      done so far is saved, the manifest says ``interrupted``, and ``--resume`` continues
1     a bug: the traceback is printed (redacted), since it is needed to fix it
====  =======================================================================================

Everything printed passes through the run's :class:`rag.secrets.Redactor` (before the config is
loaded, one that knows the environment's credentials), log records included.
"""

from __future__ import annotations

import argparse
import logging
from importlib import metadata
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from evaluation.files import FileFormatError
from rag.errors import BenchError, ConfigError
from rag.progress import PROGRESS_ENV
from rag.secrets import Redactor

EXIT_OK, EXIT_BUG, EXIT_USER_ERROR, EXIT_IO_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 74, 130, 143
RESUME_HINT = "the work done so far is saved; re-run with --resume to continue"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt so that every cleanup path treats both alike."""


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
    add_selection_options(parser)
    parser.add_argument("--no-generation", action="store_true", help="skip answer generation")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run (same config)")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="skip invalid data records (counted in the manifest and report) instead of failing")
    return parser


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    """``--limit``, ``--methods``, ``--set`` and ``--quiet``, shared by a run and a sweep (see
    :func:`overrides_from_args`)."""
    parser.add_argument("--limit", type=int, help="use only the first N questions of each question set")
    parser.add_argument("--methods", help="comma-separated retriever names to evaluate (default: all)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. --set top_k=20 (value parsed as YAML); repeatable")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (off a terminal they are plain lines)")


def overrides_from_args(args: argparse.Namespace) -> list[str]:
    """``--limit``, ``--methods`` and ``--no-generation`` become config overrides, so they are part of
    the run's plan (and a resume with different options is refused)."""
    overrides = list(args.overrides)
    if args.limit is not None:
        overrides.append(f"limit={args.limit}")
    if args.methods is not None:
        names = [name.strip() for name in args.methods.split(",")]
        if not all(names):
            raise ConfigError("--methods", f"{args.methods!r} has an empty name; expected comma-separated retriever names")
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
    redactor = Redactor.for_config()  # the environment's credentials, until the config is known
    previous_mode = os.environ.get(PROGRESS_ENV)
    try:
        with _sigterm_as_interrupt():
            if argv[:1] == ["compare"]:
                from rag.results.compare_runs import main as compare_main

                return compare_main(argv[1:])
            if argv[:1] == ["sweep"]:
                from rag.sweep.cli import main as sweep_main

                return sweep_main(argv[1:])
            args = build_parser().parse_args(argv)
            if args.quiet:
                os.environ[PROGRESS_ENV] = "off"  # every bar of ours, and the libraries' (rag.progress)
            from rag.config import load_config  # imported here so `--help` stays fast

            config = load_config(args.config, overrides_from_args(args))
            redactor = Redactor.for_config(config)
            from rag.runner.pipeline import RunOptions, run_benchmark
            from rag.runner.summary import summary_text

            options = RunOptions(output_dir=args.output_dir.resolve() if args.output_dir else None,
                                 resume=args.resume, skip_invalid=args.skip_invalid, progress=not args.quiet)
            with _redacted_logging(redactor):
                result = run_benchmark(config, options)
            print(redactor.text(summary_text(result)))
            return EXIT_OK
    except (BenchError, FileFormatError) as exc:
        return _fail(redactor, f"error: {exc}", EXIT_USER_ERROR)
    except Terminated:
        return _fail(redactor, f"\nterminated (SIGTERM): {RESUME_HINT}", EXIT_TERMINATED)
    except KeyboardInterrupt:
        return _fail(redactor, f"\ninterrupted: {RESUME_HINT}", EXIT_INTERRUPTED)
    except OSError as exc:
        where = exc.filename if exc.filename is not None else "a file"
        return _fail(redactor, f"error: cannot write or read {where}: {exc.strerror or exc}; nothing half-written "
                               "is left: fix the file system (space, permissions) and re-run with --resume",
                     EXIT_IO_ERROR)
    except Exception:  # noqa: BLE001 - a bug: keep the traceback, but never print a secret
        return _fail(redactor, traceback.format_exc().rstrip(), EXIT_BUG)
    finally:
        if previous_mode is None:
            os.environ.pop(PROGRESS_ENV, None)
        else:
            os.environ[PROGRESS_ENV] = previous_mode


def _fail(redactor: Redactor, message: str, code: int) -> int:
    print(redactor.text(message), file=sys.stderr)
    return code


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) while the run is in progress."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _redacted_logging(redactor: Redactor) -> Iterator[None]:
    """Warnings and errors on stderr, each record redacted."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(redactor.logging_filter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


if __name__ == "__main__":
    sys.exit(main())
