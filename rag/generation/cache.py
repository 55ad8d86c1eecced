"""On-disk cache of completed generations: an append-only JSONL file, one record per answer.

Key: sha256 of the canonical JSON of (model, endpoint identity, full prompt messages, sampling
parameters). The API key is never part of the key nor stored. Each record is appended with a single
``write`` on an ``O_APPEND`` descriptor as soon as its request completes, so Ctrl-C or a crash loses
nothing already answered; a truncated last line (a crash mid-write) is cut off when the cache is
opened. Failures are never cached: a re-run retries them. Runs sharing the cache directory see each
other's answers (:meth:`GenerationCache.refresh`) and never send one prompt twice at the same time
(:class:`InFlightLocks`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag.io_utils import naming_path, sha256_text

log = logging.getLogger(__name__)

CACHE_FILE_NAME = "generations.jsonl"
LOCK_FILE_NAME = "generations.lock"
IN_FLIGHT_DIR = "inflight"


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
    top_logprobs: dict[str, float] | None = None  # the first answer token's alternatives, when asked


def cached_logprobs(value: Any) -> dict[str, float] | None:
    """A record's ``top_logprobs``: None, or {token: log-prob in (-inf, 0]}; a ValueError for anything
    else (a record written before log-probs were validated as they arrive, NaN included, is skipped)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
            isinstance(t, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and -math.inf < v <= 0
            for t, v in value.items()):
        raise ValueError("top_logprobs is not a mapping of tokens to log-probs in (-inf, 0]")
    return {t: float(v) for t, v in value.items()}


class GenerationCache:
    """Maps cache keys to :class:`CachedGeneration`; ``put`` persists immediately.

    Several runs may share one cache file: each appends its records, :meth:`refresh` reads the ones
    the others appended since. Appends hold a shared ``flock`` on ``generations.lock``; cutting off a
    truncated last line (left by a crash) holds it exclusively, so a record another run is writing at
    that moment is never mistaken for a crash's leftover.
    """

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / CACHE_FILE_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._entries: dict[str, CachedGeneration] = {}
        self._offset = 0  # bytes of the file already read
        self._line_no = 0
        self._lock_fd = os.open(self.path.parent / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        self._cut_truncated_record()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.refresh()

    def _cut_truncated_record(self) -> None:
        if not self._ends_mid_record():
            return
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)  # no append is in progress while we hold it
        try:
            if self._ends_mid_record():
                data = self.path.read_bytes()
                complete_end = data.rfind(b"\n") + 1
                log.warning("%s: dropping a truncated last record (%d bytes) left by an interrupted run",
                            self.path, len(data) - complete_end)
                os.truncate(self.path, complete_end)
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _ends_mid_record(self) -> bool:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return False
        with open(self.path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"

    def refresh(self) -> None:
        """Read the complete records appended (by this or another run) since the last read."""
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        complete_end = data.rfind(b"\n") + 1
        self._offset += complete_end
        for line in data[:complete_end].splitlines():
            self._line_no += 1
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
                    top_logprobs=cached_logprobs(record.get("top_logprobs")),
                )
            except (ValueError, KeyError, TypeError, OverflowError) as exc:
                log.warning("%s:%d: skipping an unreadable cache record (%s)", self.path, self._line_no, exc)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> CachedGeneration | None:
        return self._entries.get(key)

    def put(self, key: str, entry: CachedGeneration) -> None:
        record = {"key": key, **asdict(entry)}
        with naming_path(self.path):
            fcntl.flock(self._lock_fd, fcntl.LOCK_SH)
            try:
                os.write(self._fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        self._entries[key] = entry

    def close(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd >= 0:
                os.close(fd)
        self._fd = self._lock_fd = -1


class InFlightLock:
    """A held in-flight lock; :meth:`release` (or the process ending) frees it."""

    def __init__(self, fd: int):
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the descriptor drops its flock
            self._fd = -1


class InFlightLocks:
    """One lock per request key (``inflight/<key>.lock`` next to the cache), so a prompt is sent by
    one worker of one run at a time; the others wait and then read its answer from the cache.

    ``flock`` locks belong to an open file description, so two workers of one process exclude each
    other like two processes do, and the kernel releases the lock of a run that is killed. The lock
    files stay (empty, one per prompt ever sent): deleting a lock file that another run has opened
    would let a third run lock a new file of the same name and send the prompt again.
    """

    def __init__(self, cache_dir: str | Path):
        self.directory = Path(cache_dir) / IN_FLIGHT_DIR
        self.directory.mkdir(parents=True, exist_ok=True)

    def try_acquire(self, key: str) -> InFlightLock | None:
        """The lock of ``key`` if nobody holds it, else None (never blocks)."""
        fd = os.open(self.directory / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return InFlightLock(fd)


def recorded_latencies(directory: str | Path) -> list[float]:
    """The measured ``latency_s`` of every readable record of the cache in ``directory``, read only
    (no lock, no file created; a truncated or unreadable line is skipped): what an LLM call took here."""
    path = Path(directory) / CACHE_FILE_NAME
    if not path.is_file():
        return []
    latencies = []
    for line in path.read_bytes().splitlines():
        try:
            latencies.append(float(json.loads(line)["latency_s"]))
        except (ValueError, KeyError, TypeError):
            continue
    return latencies
