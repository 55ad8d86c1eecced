"""On-disk cache of completed generations: an append-only JSONL file, one record per answer.

Key: sha256 of the canonical JSON of (model, endpoint identity, full prompt messages, sampling
parameters). The API key is never part of the key nor stored. Each record is appended with a single
``write`` on an ``O_APPEND`` descriptor as soon as its request completes, so Ctrl-C or a crash loses
nothing already answered; a truncated last line (a crash mid-write) is cut off when the cache is
opened. Failures are never cached: a re-run retries them.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag.io_utils import sha256_text

log = logging.getLogger(__name__)

CACHE_FILE_NAME = "generations.jsonl"


def generation_cache_key(model: str, endpoint: str, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    payload = {"model": model, "endpoint": endpoint, "messages": messages, "params": params}
    return sha256_text(json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":")))


@dataclass(frozen=True)
class CachedGeneration:
    answer: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    attempts: int


class GenerationCache:
    """Maps cache keys to :class:`CachedGeneration`; ``put`` persists immediately."""

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / CACHE_FILE_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._entries: dict[str, CachedGeneration] = {}
        self._load()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        complete_end = data.rfind(b"\n") + 1
        if complete_end < len(data):
            log.warning("%s: dropping a truncated last record (%d bytes) left by an interrupted run",
                        self.path, len(data) - complete_end)
            os.truncate(self.path, complete_end)
        for line_no, line in enumerate(data[:complete_end].splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                self._entries[record["key"]] = CachedGeneration(
                    answer=record["answer"],
                    prompt_tokens=int(record["prompt_tokens"]),
                    completion_tokens=int(record["completion_tokens"]),
                    latency_s=float(record["latency_s"]),
                    attempts=int(record["attempts"]),
                )
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("%s:%d: skipping an unreadable cache record (%s)", self.path, line_no, exc)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> CachedGeneration | None:
        return self._entries.get(key)

    def put(self, key: str, entry: CachedGeneration) -> None:
        record = {"key": key, **asdict(entry)}
        os.write(self._fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        self._entries[key] = entry

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
