"""User-facing errors. The CLI turns each into one clear line and exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path

from evaluation.files import FileFormatError


class BenchError(Exception):
    """Base class of every error caused by the user's input (config, data, environment)."""


class ConfigError(BenchError):
    """A configuration value is missing, unknown or of the wrong type. ``key`` is its dotted path."""

    def __init__(self, key: str, message: str, source: str | Path | None = None):
        self.key = key
        self.source = str(source) if source is not None else None
        where = f"{self.source}: " if self.source else ""
        super().__init__(f"{where}{key}: {message}")


class DataError(BenchError, FileFormatError):
    """A data record is malformed. Names the file and 1-based line (when known) and the problem
    (the engine's :class:`evaluation.files.FileFormatError`, as a user error of the benchmark)."""
