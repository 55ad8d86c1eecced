"""What a cache key names of the code that made a cached value: the source of a module and of every
``rag`` module it imports (at any depth, read from the source, imports inside functions included),
the versions of the libraries it names, and Python's major.minor and Unicode versions.

A cache keyed by :func:`code_version` is never served to code that would compute something else: a
new release, an edited module, another Python. Used for what our own code computes from the user's
files and is cheap to compute again (a folder's converted files, chunks, question sets), never for
what only a model computes (embeddings, LLM answers), which are keyed by the model instead.
"""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from functools import cache
from importlib import metadata, util
from pathlib import Path


def _source(module: str) -> Path:
    return Path(util.find_spec(module).origin)


_RAG_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(rag(?:\.\w+)*)[ \t]+import\b|import[ \t]+(rag(?:\.\w+)*))", re.MULTILINE)


@cache
def imported_modules(module: str) -> tuple[str, ...]:
    """``module`` and the ``rag`` modules it imports at any depth (``from rag.x import`` and ``import
    rag.x`` lines, inside functions too), sorted."""
    found, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in found or util.find_spec(name) is None:
            continue
        found.add(name)
        todo.extend(a or b for a, b in _RAG_IMPORT.findall(_source(name).read_text(encoding="utf-8")))
    return tuple(sorted(found))


@cache
def code_version(module: str, libraries: tuple[str, ...] = ()) -> str:
    """SHA-256 over the source of :func:`imported_modules` of ``module`` (each named), the installed
    versions of ``libraries`` (distribution names) and Python's major.minor and Unicode versions."""
    digest = hashlib.sha256()
    for name in imported_modules(module):
        digest.update(f"{name}\0".encode())
        digest.update(_source(name).read_bytes())
    for library in libraries:
        try:
            digest.update(f"{library}=={metadata.version(library)}\0".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{library} missing\0".encode())
    digest.update(f"python {sys.version_info[0]}.{sys.version_info[1]} unicode {unicodedata.unidata_version}".encode())
    return digest.hexdigest()
