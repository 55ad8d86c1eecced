"""Atomic file output (the engine's primitive, :mod:`evaluation.files`), content hashing, the one
text form of a file name, JSON read with its nesting bounded, and spreadsheet cells that cannot run.

Every result file is written to a temporary file in the same directory and then renamed over the
target (``os.replace`` is atomic on POSIX), so an interrupted run never leaves a half-written file.
An ``OSError`` (read-only or full file system, permissions) always names the file it concerns. A
file the user names as an output (:func:`write_output`) goes the same way when it is a regular file
or a new path; a device or a pipe (``/dev/stdout``) is written in place, never replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaluation.files import atomic_write_bytes, atomic_write_text, naming_path

__all__ = ["MAX_JSON_DEPTH", "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "naming_path", "name_text",
           "is_standard_output", "parse_json", "sha256_bytes", "sha256_file", "sha256_strings", "sha256_text", "spreadsheet_cell",
           "spreadsheet_value", "write_output"]

MAX_JSON_DEPTH = 64  # arrays and objects inside each other; no file or request of ours needs more than a few
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def atomic_write_json(path: str | Path, obj: Any, indent: int | None = 2) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False, default=str) + "\n")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: str | Path, block_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(block_size):
            digest.update(block)
    return digest.hexdigest()


def sha256_strings(items: Iterable[str]) -> str:
    """Order-sensitive hash of a sequence of strings (each length-prefixed, so no ambiguity)."""
    digest = hashlib.sha256()
    for item in items:
        encoded = item.encode("utf-8")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return digest.hexdigest()


def name_text(name: str | os.PathLike[str]) -> str:
    """A file name (or path) as text that can be written anywhere: its bytes (:func:`os.fsencode`, which
    gives back the bytes Python decoded with ``surrogateescape``) read as UTF-8, each byte that is not
    valid UTF-8 written as ``\\xNN`` (``b'caf\\xe9.md'`` -> ``caf\\xe9.md``). A UTF-8 name is unchanged."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def parse_json(text: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with the nesting bounded: a value nested deeper than ``max_depth`` arrays or
    objects (or so deep that the parser runs out of recursion), or a number over Python's digit limit,
    raises ``json.JSONDecodeError`` like any other text that is not JSON, so a hostile or broken line
    gets one error, never a ``RecursionError`` or a bare ``ValueError`` (a traceback, exit 1)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        value = json.loads(text)
    except RecursionError:
        value = None
        depth = max_depth + 1
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # the int parser's digit limit
        raise json.JSONDecodeError(str(exc).split(":")[0], text, 0) from None
    else:
        depth = _nesting(value)
    if depth > max_depth:
        raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", text, 0)
    return value


def _nesting(value: Any) -> int:
    """How many arrays and objects ``value`` holds inside each other (0 for a number or a string)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


def write_output(path: str | Path, data: bytes) -> Path:
    """Write a file the user named as an output: a regular file or a new path atomically
    (:func:`atomic_write_bytes`; through a symbolic link, at the file it points to, so the link stays a
    link); a character device, a FIFO, or anything under ``/dev`` or ``/proc`` (``/dev/stdout``, which
    may lead to a terminal, a pipe or the file a shell redirected to) in place, never replaced by a new
    file; anything else (a directory, a socket) is refused with an ``OSError`` naming it.
    ``/dev/full`` gives ``ENOSPC``, which the CLI reports as a disk error (74)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode  # through links
    except FileNotFoundError:
        mode = None
    if mode is not None and is_standard_output(path):  # opened again, a file redirected to would be overwritten
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return path
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or path.absolute().parts[1:2] in (("dev",),
                                                                                                          ("proc",))):
        with naming_path(path), open(path, "wb") as handle:
            handle.write(data)
            handle.flush()
        return path
    if mode is None or stat.S_ISREG(mode):
        return atomic_write_bytes(path.resolve() if path.is_symlink() else path, data)
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "a directory, not a file", str(path))
    raise OSError(22, "not a regular file, a device or a pipe", str(path))


def is_standard_output(path: str | Path) -> bool:
    """Whether ``path`` (``/dev/stdout``, ``/dev/fd/1``, the file a shell redirected to) is this
    process's standard output, so that what is written there, and what is printed, share one stream."""
    try:
        here, there = os.stat(path), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no such file, or no file descriptor (captured output)
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def spreadsheet_cell(value: str) -> str:
    """A CSV cell a spreadsheet will not run: a value starting with ``=``, ``+``, ``-``, ``@``, a tab or a
    carriage return (a formula to Excel, LibreOffice, Sheets) gets a leading ``'``, and so does one
    starting with ``'`` itself; :func:`spreadsheet_value` removes it again, so every text reads back
    unchanged (``'=x`` too)."""
    return f"'{value}" if value.startswith((*_FORMULA_START, "'")) else value


def spreadsheet_value(cell: str) -> str:
    """The value of a cell written by :func:`spreadsheet_cell`."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith((*_FORMULA_START, "'")) else cell
