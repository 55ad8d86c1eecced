"""On-disk cache directories for corpus-derived indexes, safe against interrupted builds.

An index lives in ``<cache_dir>/<kind>/<key>/`` where ``key`` hashes the retriever's settings and
every chunk id and text (:func:`index_key`). The file ``COMPLETE`` is written last, atomically; a
directory without it is a build that was interrupted, and is deleted and rebuilt.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag.io_utils import atomic_write_json, sha256_strings
from rag.types import Chunk

COMPLETE_MARKER = "COMPLETE"


def index_key(settings: Mapping[str, Any], chunks: Sequence[Chunk]) -> str:
    """sha256 over the settings (canonical JSON) and every (chunk id, text) pair, in the given order."""
    parts = [json.dumps(settings, sort_keys=True, default=str)]
    for chunk in chunks:
        parts.extend((chunk.chunk_id, chunk.text))
    return sha256_strings(parts)


class IndexDir:
    """One cached index directory; :meth:`is_complete` tells whether it can be loaded as is."""

    def __init__(self, cache_dir: str | Path, kind: str, key: str):
        self.path = Path(cache_dir) / kind / key

    def is_complete(self) -> bool:
        return (self.path / COMPLETE_MARKER).is_file()

    def start(self) -> Path:
        """Delete any partial content and return the empty directory to build into."""
        if self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True)
        return self.path

    def finish(self, info: Mapping[str, Any]) -> None:
        """Mark the build complete (last step of a build)."""
        atomic_write_json(self.path / COMPLETE_MARKER, dict(info))
