"""A folder's files converted to text (:func:`rag.data.convert.convert`): cached on disk per file
content, in worker processes when many files need it, with what each conversion logged.

- **What a conversion logged** (a library's log record at ``WARNING`` or above, or a Python warning
  such as Beautiful Soup's on an XML file named ``.html``) is kept with its text as notes (logger,
  level, message), and logged again with the file's relative path in front (:meth:`Conversion.log_notes`) wherever
  the text came from: this process, a worker or the cache.
- **Cache**: ``<cache_dir>/converted/``, one JSON file per file content (SHA-256 of its bytes), suffix
  and :func:`converter_version` (the converters' source and libraries), written atomically. A warm
  load reads no file through a parser: Python 3.11's HTML library reference (498 pages) loads in
  5.4 s instead of 145 s on a 2-core AMD EPYC (docs/data.md). Failures that depend only on the bytes
  are cached too (``binary``, ``empty``, ``too_complex`` ...); a library's parse error
  (``unreadable``, which may be a transient ``MemoryError``) is not. An unreadable cache file is
  converted again.
- **Workers**: once :data:`POOL_AFTER` files of one load have needed converting, the following ones
  are converted by a pool of worker processes, one per usable CPU up to :data:`MAX_WORKERS`, at most
  two files in flight per worker; results are taken in the folder's order, so the documents,
  warnings and counts are the same as in one process. Workers are forked, on Linux only: a spawned
  worker imports the caller's main module again, which fails for a script that calls
  :func:`rag.data.load_dataset` without an ``if __name__ == "__main__"`` guard; elsewhere (macOS,
  Windows) one process converts. A worker that dies (killed, out of memory) leaves its files to this
  process.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import multiprocessing
import sys
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rag.code_version import code_version
from rag.data.convert import UNREADABLE, Converted, Unreadable, convert
from rag.io_utils import atomic_write_json, sha256_text
from rag.models import usable_cpus

log = logging.getLogger(__name__)

#: Files of one load converted in this process before a worker pool takes the rest.
POOL_AFTER = 24
MAX_WORKERS = 8
#: The libraries that parse the formats: their versions are part of :func:`converter_version`.
CONVERTER_LIBRARIES = (
    "beautifulsoup4", "markdownify", "pypdfium2", "python-docx", "docutils", "markdown-it-py", "mdit-py-plugins",
    "pyspellchecker",
)

Note = tuple[str, int, str]  # logger name, level, message (without the file's name)
Job = TypeVar("Job")


@dataclass(frozen=True)
class Conversion:
    """A file's text (``converted``) or why it has none (``unreadable``: kind and reason), and the
    notes logged while converting it."""

    converted: Converted | None
    unreadable: tuple[str, str] | None
    notes: tuple[Note, ...] = ()

    def log_notes(self, relative: str) -> None:
        """Log the notes again, each with ``relative: `` in front of its message."""
        for name, level, message in self.notes:
            logging.getLogger(name).log(level, "%s: %s", relative, message)

    def record(self) -> dict:
        text = None if self.converted is None else dataclasses.asdict(self.converted)
        return {"converted": text, "unreadable": self.unreadable, "notes": self.notes}

    @classmethod
    def from_record(cls, record: dict) -> Conversion:
        converted = record["converted"]
        return cls(None if converted is None else Converted(**converted),
                   None if record["unreadable"] is None else tuple(record["unreadable"]),
                   tuple(tuple(note) for note in record["notes"]))


class _NoteHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.notes: list[Note] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.notes.append((record.name, record.levelno, record.getMessage()))


@contextmanager
def _noting() -> Iterator[list[Note]]:
    """While converting: the root logger's handlers are replaced by one that keeps the records as
    notes, and Python warnings are kept as notes of the ``py.warnings`` logger (as
    :func:`logging.captureWarnings` names them), their first line only."""
    root = logging.getLogger()
    handlers, handler = root.handlers[:], _NoteHandler()
    root.handlers[:] = [handler]
    notes: list[Note] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield notes
    finally:
        root.handlers[:] = handlers
        notes.extend(handler.notes)
        notes.extend(("py.warnings", logging.WARNING, f"{w.category.__name__}: {_first_line(str(w.message))}")
                     for w in caught)


def _first_line(message: str) -> str:
    """A warning's first line that has text (Beautiful Soup's run to 15 lines of advice to programmers)."""
    return next((line.strip() for line in message.splitlines() if line.strip()), message)


def convert_noting(data: bytes, suffix: str) -> Conversion:
    """:func:`rag.data.convert.convert` of the bytes, with what it logged (run in a worker, too)."""
    with _noting() as notes:
        try:
            converted, unreadable = convert(data, suffix), None
        except Unreadable as exc:
            converted, unreadable = None, (exc.kind, exc.reason)
    return Conversion(converted, unreadable, tuple(notes))


def converter_version() -> str:
    """The converters' :func:`rag.code_version.code_version`: the source of :mod:`rag.data.convert`
    and of every ``rag`` module it imports, the versions of :data:`CONVERTER_LIBRARIES`, Python's."""
    return code_version("rag.data.convert", CONVERTER_LIBRARIES)


class ConversionCache:
    """Conversions under ``directory`` (``<cache_dir>/converted``), keyed by the file's SHA-256, its
    suffix and :func:`converter_version`."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def _path(self, digest: str, suffix: str) -> Path:
        key = sha256_text(f"{converter_version()}\0{suffix}\0{digest}")
        return self.directory / key[:2] / f"{key[2:34]}.json"

    def get(self, digest: str, suffix: str) -> Conversion | None:
        path = self._path(digest, suffix)
        if not path.is_file():
            return None
        try:
            return Conversion.from_record(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("ignoring unreadable conversion cache %s (%s)", path, exc)
            return None

    def put(self, digest: str, suffix: str, conversion: Conversion) -> None:
        if conversion.unreadable is None or conversion.unreadable[0] != UNREADABLE:
            atomic_write_json(self._path(digest, suffix), conversion.record(), indent=None)


@dataclass(frozen=True)
class FileBytes:
    """A file to convert: its bytes, lower-cased suffix and SHA-256."""

    data: bytes
    suffix: str
    digest: str


class FolderConverter:
    """Converts the files of one load in order (see the module docstring); ``cache`` may be None."""

    def __init__(self, cache: ConversionCache | None, workers: int | None = None):
        self.cache = cache
        if workers is None:
            workers = min(MAX_WORKERS, usable_cpus()) if sys.platform.startswith("linux") else 1
        self.workers = workers

    def converted(self, jobs: Iterable[tuple[Job, FileBytes | None]]) -> Iterator[tuple[Job, Conversion | None]]:
        """``(job, conversion)`` for each ``(job, file)`` in order; ``None`` for a job without a file."""
        pending: deque[tuple[Job, FileBytes | None, Future]] = deque()
        pool: ProcessPoolExecutor | None = None
        misses = 0
        try:
            for job, file in jobs:
                found = None if file is None or self.cache is None else self.cache.get(file.digest, file.suffix)
                if file is None or found is not None:
                    pending.append((job, None, _done(found)))
                    continue
                misses += 1
                if pool is None and self.workers > 1 and misses == POOL_AFTER + 1:
                    pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"))
                try:
                    future = pool.submit(convert_noting, file.data, file.suffix) if pool is not None else None
                except BrokenProcessPool:
                    future = None
                pending.append((job, file, future or _done(convert_noting(file.data, file.suffix))))
                while pending and (pending[0][2].done() or len(pending) > 2 * self.workers):
                    yield self._take(pending)
            while pending:
                yield self._take(pending)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)

    def _take(self, pending: deque) -> tuple:
        job, file, future = pending.popleft()
        if file is None:
            return job, future.result()
        try:
            conversion = future.result()
        except BrokenProcessPool:  # a worker died (killed, out of memory): this file in this process
            conversion = convert_noting(file.data, file.suffix)
        if self.cache is not None:
            self.cache.put(file.digest, file.suffix, conversion)
        return job, conversion


def _done(value) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future
