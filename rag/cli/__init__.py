"""Command line, one module per subcommand:

* ``rag-bench run --config C`` (:mod:`rag.cli.run`; ``rag-bench --config C`` and
  ``python scripts/run_benchmark.py --config C`` are the same);
* ``rag-bench compare RUN_DIR RUN_DIR ...`` (:mod:`rag.cli.compare`);
* ``rag-bench sweep --config C --grid KEY=V1,V2 ...`` (:mod:`rag.cli.sweep`);
* ``rag-bench questions --config C --out FILE ...`` (:mod:`rag.cli.questions`);
* ``rag-bench reproduce [NAME ...]`` (:mod:`rag.cli.reproduce`);
* ``rag-bench judge RUN_DIR`` (:mod:`rag.cli.judge`) and ``rag-bench rescore RUN_DIR``
  (:mod:`rag.cli.rescore`): your questions, judged where they decide.

:func:`main` dispatches and owns the failure handling: every failure is one line on stderr, never a
traceback, with an exit code that says what to do:

====  =======================================================================================
code  meaning
====  =======================================================================================
0     success
2     a user error (:class:`rag.errors.BenchError`): bad config, bad data, missing file, a remote
      endpoint without its API key; the line names the file/line or the key
3     the run finished (manifest status ``partial``) but its whole answer experiment failed: every
      question set sent to the generator has a failed answer, so no answer result stands (the
      rule: :mod:`rag.results.headline`); retrieval results are written as usual. A run with some
      failed answers and some set left standing exits 0 with status ``partial``; both say so on
      the first lines. ``--resume`` sends the failed answers again
4     ``rag-bench reproduce``: a cell of the reproduction matrix is outside its tolerance; the line
      names every failing cell (``condition:row:metric``)
74    a file-system error (``EX_IOERR``): read-only or full disk, no permission; the line names
      the path. Nothing half-written is left: free the space and re-run (with ``--resume`` once the
      run directory exists)
130   interrupted by Ctrl-C (SIGINT); 143 terminated by SIGTERM. Both are handled alike: the work
      done so far is saved, the manifest says ``interrupted``, and ``--resume`` continues
1     a bug: the traceback is printed (redacted), since it is needed to fix it
====  =======================================================================================

Everything printed passes through one :class:`rag.secrets.Redactor` (before a config is loaded, one
that knows the environment's credentials; a subcommand that loads a config installs the config's),
log records included. A warning line is printed once per command: the same line again (a folder of
documents is read for the questions, then for the run) is not repeated. A failure line suggests
``--resume`` only when a run (or sweep) directory holds a run to continue
(:func:`rag.runner.rundir.resumable_run`), and names that directory.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from evaluation.files import FileFormatError
from rag.cli.common import (
    EXIT_ANSWERS_FAILED, EXIT_BUG, EXIT_INTERRUPTED, EXIT_IO_ERROR, EXIT_OK, EXIT_TERMINATED, EXIT_USER_ERROR,
    FittingFormatter, package_version, quiet_on_closed_pipe,
)
from rag.errors import BenchError
from rag.progress import PROGRESS_ENV
from rag.runner.rundir import resumable_run
from rag.secrets import Redactor

__all__ = ["main", "EXIT_OK", "EXIT_ANSWERS_FAILED", "EXIT_BUG", "EXIT_USER_ERROR", "EXIT_IO_ERROR", "EXIT_INTERRUPTED", "EXIT_TERMINATED"]

SUBCOMMANDS = ("run", "compare", "sweep", "questions", "reproduce", "judge", "rescore")
USAGE = f"""usage: rag-bench [run] --config C [options] | rag-bench {{{','.join(SUBCOMMANDS[1:])}}} ... | rag-bench --version

  run       compare retrieval strategies end to end (the default subcommand)
  compare   compare the methods of several finished runs
  sweep     run a config over a grid of settings, chosen on dev, reported on test
  questions make a question set from a config's corpus (LLM or templates), or apply a review
  reproduce run the reproduction matrix (reproduce/*.yaml) and check every published number
  judge     grade a run's pool (every method's top-k) on a page on this machine, blind
  rescore   score a run against its judgments: the verdict and what it stands on

'rag-bench SUBCOMMAND --help' describes each."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt so that every cleanup path treats both alike."""


class _Output:
    """The redactor every printed line and log record goes through; a subcommand replaces it with its
    config's (:meth:`use`)."""

    def __init__(self) -> None:
        self.redactor = Redactor.for_config()

    def use(self, redactor: Redactor) -> Redactor:
        self.redactor = redactor
        return redactor

    def fail(self, message: str, code: int) -> int:
        print(self.redactor.text(message), file=sys.stderr)
        return code


def _dispatch(argv: list[str], output: _Output) -> int:
    if argv[:1] in (["--version"], ["-V"]):
        print(f"rag-bench {package_version()}")
        return EXIT_OK
    if argv[:1] in (["--help"], ["-h"]) or not argv:
        print(USAGE)
        return EXIT_OK
    command, rest = (argv[0], argv[1:]) if argv[0] in SUBCOMMANDS else ("run", argv)
    if command == "compare":
        from rag.cli.compare import main as compare_main

        return compare_main(rest)
    if command == "sweep":
        from rag.cli.sweep import main as sweep_main

        return sweep_main(rest)
    if command == "questions":
        from rag.cli.questions import main as questions_main

        return questions_main(rest, output.use)
    if command == "judge":
        from rag.cli.judge import main as judge_main

        return judge_main(rest)
    if command == "rescore":
        from rag.cli.rescore import main as rescore_main

        return rescore_main(rest, output.use)
    if command == "reproduce":
        from rag.cli.reproduce import main as reproduce_main

        return reproduce_main(rest, output.use)
    from rag.cli.run import main as run_main

    return run_main(rest, output.use)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    output = _Output()
    previous_mode = os.environ.get(PROGRESS_ENV)
    try:
        with _sigterm_as_interrupt(), _redacted_logging(output):
            return quiet_on_closed_pipe(lambda: _dispatch(argv, output))
    except (BenchError, FileFormatError) as exc:
        return output.fail(f"error: {exc}", EXIT_USER_ERROR)
    except Terminated as exc:
        return output.fail(f"\nterminated (SIGTERM): {resume_hint(exc)}", EXIT_TERMINATED)
    except KeyboardInterrupt as exc:
        return output.fail(f"\ninterrupted: {resume_hint(exc)}", EXIT_INTERRUPTED)
    except OSError as exc:
        where = exc.filename if exc.filename is not None else "a file"
        return output.fail(f"error: cannot write or read {where}: {exc.strerror or exc}; nothing half-written "
                           f"is left: fix the file system (space, permissions); {resume_hint(exc)}", EXIT_IO_ERROR)
    except Exception:  # noqa: BLE001 - a bug: keep the traceback, but never print a secret
        return output.fail(traceback.format_exc().rstrip(), EXIT_BUG)
    finally:
        if previous_mode is None:
            os.environ.pop(PROGRESS_ENV, None)
        else:
            os.environ[PROGRESS_ENV] = previous_mode


def resume_hint(exc: BaseException) -> str:
    """What to do next: ``--resume`` when a run directory holds the work done so far, else re-run."""
    path = resumable_run(exc)
    if path is None:
        return "no run directory was started yet; re-run the same command to begin"
    return f"the work done so far is saved in {path}; re-run with --resume --output-dir {path} to continue"


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) while the command runs."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _CurrentRedactorFilter(logging.Filter):
    def __init__(self, output: _Output):
        super().__init__()
        self.output = output

    def filter(self, record: logging.LogRecord) -> bool:
        return self.output.redactor.logging_filter().filter(record)


class _OnceFilter(logging.Filter):
    """Lets a record through unless the same logger printed the same message before in this command."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        line = (record.name, record.levelno, record.getMessage())
        if line in self.seen:
            return False
        self.seen.add(line)
        return True


@contextmanager
def _redacted_logging(output: _Output) -> Iterator[None]:
    """Warnings and errors on stderr, each record redacted by the command's current redactor, each
    line once (:class:`_OnceFilter`), wrapped to 100 columns."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(FittingFormatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_CurrentRedactorFilter(output))
    handler.addFilter(_OnceFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


if __name__ == "__main__":
    sys.exit(main())
