"""Atomic file output (the engine's primitive, :mod:`evaluation.files`), content hashing, and the one
text form of a file name.

Every result file is written to a temporary file in the same directory and then renamed over the
target (``os.replace`` is atomic on POSIX), so an interrupted run never leaves a half-written file.
An ``OSError`` (read-only or full file system, permissions) always names the file it concerns.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaluation.files import atomic_write_bytes, atomic_write_text, naming_path

__all__ = ["atomic_write_bytes", "atomic_write_json", "atomic_write_text", "naming_path", "name_text", "sha256_bytes",
           "sha256_file", "sha256_strings", "sha256_text"]


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
