"""What every subcommand shares: the exit codes, an argparse that raises instead of exiting, and the
question-selection options of a run and a sweep.

Imports nothing from the subcommands, so each of them imports this module and none imports another.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from rag.errors import ConfigError
from rag.terminal import fit

EXIT_OK, EXIT_BUG, EXIT_USER_ERROR, EXIT_IO_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 74, 130, 143
EXIT_ANSWERS_FAILED = 3  # the run finished, but no answer result stands (rag.results.headline.AnswerFailures)
EXIT_NOT_REPRODUCED = 4  # rag-bench reproduce: a cell of the matrix is outside its tolerance (rag.reproduce)


class FittingFormatter(logging.Formatter):
    """A log line wrapped to :data:`rag.terminal.WIDTH` columns (:func:`rag.terminal.fit`); a traceback, if
    any, is left as is."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802  (logging's name)
        return fit(super().formatMessage(record))


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so bad options follow the same exit-2 path."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigError("command line", message)


def add_hidden_alias(parser: argparse.ArgumentParser | argparse._ArgumentGroup, old: str, dest: str, **kwargs) -> None:
    """``old``, an earlier name of the option stored in ``dest``: accepted, not shown in ``--help``
    (one vocabulary across subcommands, issue 43; kept for one release)."""
    parser.add_argument(old, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)


def bounded_int(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer from ``low`` to ``high`` (no upper bound when None), so that
    ``--limit 0`` or ``--port 99999`` is one line and exit 2, not a silent default or a traceback."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value}: expected {low}-{high}" if high is not None
                                             else f"{value}: expected at least {low}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its message
    return parse


def judge_names(text: str, option: str = "--judges") -> tuple[str, ...]:
    """The comma-separated judge names of ``option``, each a name the grade file allows
    (:func:`rag.judging.store.judge_name_problem`)."""
    from rag.judging.store import judge_name_problem

    names = tuple(name.strip() for name in text.split(","))
    for name in names:
        if problem := judge_name_problem(name):
            raise ConfigError(option, f"{text!r}: {problem}")
    return names


def margin(text: str) -> float:
    """An argparse ``type``: the verdict's margin, a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value:g}: expected a number between 0 and 1 (e.g. 0.02)")
    return value


def add_margin_option(parser: argparse.ArgumentParser, default: str = "the run's evaluation.margin") -> None:
    """``--margin M``: the smallest difference on the primary metric that matters (docs/evaluation.md,
    "The margin"), the same name in run, rescore, compare and judge."""
    parser.add_argument("--margin", type=margin, metavar="M",
                        help=f"the smallest difference on the primary metric that matters (default: {default})")


def add_seed_option(parser: argparse.ArgumentParser, what: str = "overrides the config's seed") -> None:
    """``--seed S``: the same name in every subcommand that has a seed."""
    parser.add_argument("--seed", type=int, metavar="S", help=f"a non-negative integer; {what}")


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    """``--limit``, ``--methods``, ``--seed``, ``--set``, ``--quiet`` and ``--margin``, shared by a run and a sweep
    (see :func:`overrides_from_args`)."""
    parser.add_argument("--limit", type=int, help="use only the first N questions of each question set")
    parser.add_argument("--methods", help="comma-separated retriever names to evaluate (default: all)")
    add_seed_option(parser, "overrides the config's seed (questions, sampling, bootstrap; default: the config's)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. --set top_k=20 (value parsed as YAML); repeatable")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (off a terminal they are plain lines)")
    add_margin_option(parser, "0.02, or the config's evaluation.margin")


def add_judgment_options(parser: argparse.ArgumentParser) -> None:
    """``--judgments FILE`` (score against a grade file instead of the sets' gold, as ``rescore``
    does), ``--trust-llm`` and ``--judges a,b``: see docs/judging.md."""
    group = parser.add_argument_group("grades as gold (docs/judging.md)")
    group.add_argument("--judgments", type=Path, metavar="FILE",
                       help="score against this grade file (judgments.jsonl) instead of the sets' gold, as rescore does")
    group.add_argument("--trust-llm", action="store_true",
                       help="with --judgments: an LLM judge's grades count (where no person graded the passage)")
    group.add_argument("--judges", help="with --judgments: comma-separated judge names; only their grades count")


def judgment_options(args: argparse.Namespace) -> dict:
    """The :class:`rag.runner.state.RunOptions` fields of :func:`add_judgment_options`; ``--trust-llm``
    or ``--judges`` without ``--judgments``, a missing file or a judge name the grade file cannot
    hold is a :class:`ConfigError`."""
    if args.judgments is None:
        if args.trust_llm or args.judges is not None:
            raise ConfigError("--trust-llm" if args.trust_llm else "--judges", "goes with --judgments FILE")
        return {}
    if not args.judgments.is_file():
        raise ConfigError("--judgments", f"{args.judgments}: file not found")
    return {"judgments": args.judgments.resolve(), "trust_llm": args.trust_llm,
            "judges": judge_names(args.judges) if args.judges is not None else None}


def overrides_from_args(args: argparse.Namespace) -> list[str]:
    """``--limit``, ``--methods``, ``--seed`` and ``--no-generation`` become config overrides, so they
    are part of the run's plan (and a resume with different options is refused)."""
    overrides = list(args.overrides)
    if args.limit is not None:
        overrides.append(f"limit={args.limit}")
    if getattr(args, "seed", None) is not None:
        overrides.append(f"seed={args.seed}")
    if getattr(args, "margin", None) is not None:
        overrides.append(f"evaluation.margin={args.margin!r}")
    if args.methods is not None:
        names = [name.strip() for name in args.methods.split(",")]
        if not all(names):
            raise ConfigError("--methods", f"{args.methods!r} has an empty name; expected comma-separated retriever names")
        overrides.append(f"methods=[{', '.join(names)}]")
    if args.no_generation:
        overrides.append("generation=null")
    return overrides


def quiet_on_closed_pipe(command: Callable[[], int]) -> int:
    """``command()``'s exit code, its output flushed; :data:`EXIT_OK`, printing nothing, when standard
    output is a pipe that its reader closed (``rag-bench -h | head -1``): the reader wanted no more,
    which is no file-system error. Standard output then goes to ``/dev/null``, so that the flush at
    exit does not fail again. A ``BrokenPipeError`` of anything else (a socket, a child's pipe) is
    raised on."""
    try:
        code = command()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_OK


def _stdout_reader_gone() -> bool:
    """True when standard output is a pipe (or socket) whose reading end is closed (``POLLERR``)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no file descriptor (captured output)
        return False


def package_version() -> str:
    try:
        return metadata.version("hybrid-rag-bench")
    except metadata.PackageNotFoundError:
        return "unknown"
