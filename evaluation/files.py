"""File primitives of the engine: atomic writes and the error for a malformed input file.

Every file is written to a temporary file in the same directory and renamed over the target
(``os.replace`` is atomic on POSIX), so an interrupted write never leaves a half-written file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class FileFormatError(ValueError):
    """A malformed input file: names the file, the 1-based line (when known) and the problem."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.problem = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


@contextmanager
def naming_path(path: str | Path) -> Iterator[None]:
    """Re-raise an ``OSError`` that names no file (``os.write``, a buffered write) with ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def atomic_write_bytes(path: str | Path, data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename; the file gets ``mode`` (0644:
    results are meant to be shared) before it holds a byte. An ``OSError`` (read-only or full disk)
    names ``path``."""
    path = Path(path)
    with naming_path(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), mode)  # mkstemp creates 0600
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return path


def atomic_write_text(path: str | Path, text: str, mode: int = 0o644) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), mode)
