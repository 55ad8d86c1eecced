"""User-facing errors. The CLI turns each into one clear line and exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path

from evaluation.files import FileFormatError


class BenchError(Exception):
    """Base class of every error caused by the user's input (config, data, environment)."""


class ConfigError(BenchError):
    """A configuration value is missing, unknown or of the wrong type. ``key`` is its dotted path
    (None for a problem of the file itself, such as a YAML syntax error); ``source`` the file, with
    ``line`` and ``column`` (1-based) when known: ``configs/x.yaml:3:7: top_k: ...``."""

    def __init__(self, key: str | None, message: str, source: str | Path | None = None,
                 line: int | None = None, column: int | None = None):
        self.key = key
        self.source = str(source) if source is not None else None
        self.line, self.column = line, column
        self.problem = message
        where = ":".join(str(part) for part in (self.source, line, column) if part is not None)
        super().__init__(": ".join(part for part in (where, key, message) if part))


class DataError(BenchError, FileFormatError):
    """A data record is malformed. Names the file and 1-based line (when known) and the problem
    (the engine's :class:`evaluation.files.FileFormatError`, as a user error of the benchmark)."""
