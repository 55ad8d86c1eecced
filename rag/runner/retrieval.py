"""Index each retriever (fusion after its inputs) and retrieve every question, with two caches.

- Index cache: each retriever gets ``<cache_dir>/index/<name>`` for its own on-disk index and the
  shared embedding store ``<cache_dir>/embeddings``, built under a per-name lock (see
  :func:`build_with_marker`); each retriever marks its own indexes complete, so a build interrupted
  by Ctrl-C, a crash or a kill resumes from what it finished.
- Retrieval cache: ``<cache_dir>/retrieval/<key>.json`` maps query text to its ranking and the
  measured search time; the key hashes the retriever's settings (and those of its fusion inputs),
  the chunk set and ``k``. A re-run (or ``--resume``) searches only queries not yet cached, and a
  warm run does not even build the indexes.
"""

from __future__ import annotations

import fcntl
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from rag.config import RetrieverSpec, RunConfig
from rag.io_utils import atomic_write_json, sha256_text
from rag.retrievers import build_retriever
from rag.retrievers.base import IndexStorage, Retriever
from rag.runner.timing import StageTimer
from rag.types import Chunk

log = logging.getLogger(__name__)
SEARCH_BATCH = 256


@dataclass(frozen=True)
class CachedRanking:
    chunk_ids: list[str]
    scores: list[float]
    search_ms: float


class RetrievalCache:
    """Rankings of one retriever setting on one chunk set, keyed by query text (atomic JSON file)."""

    def __init__(self, path: Path):
        self.path = path
        self.entries: dict[str, CachedRanking] = {}
        if path.is_file():
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                self.entries = {query: CachedRanking(**entry) for query, entry in raw.items()}
            except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as exc:
                log.warning("ignoring unreadable retrieval cache %s (%s); it will be rebuilt", path, exc)

    def missing(self, queries: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(q for q in queries if q not in self.entries))

    def save(self) -> None:
        atomic_write_json(self.path, {q: vars(entry) for q, entry in self.entries.items()}, indent=None)


def spec_fingerprint(config: RunConfig, name: str) -> dict:
    """A retriever's settings, with those of the retrievers it fuses (recursively)."""
    spec: RetrieverSpec = config.retriever(name)
    retriever = build_retriever(spec.name, spec.type, spec.params)
    return {
        "name": spec.name,
        "type": spec.type,
        "params": spec.validated_params().model_dump(mode="json"),
        "inputs": [spec_fingerprint(config, dep) for dep in retriever.requires()],
    }


class RetrievalStage:
    """Builds retrievers lazily (only when some query is not cached) and serves cached rankings."""

    def __init__(
        self,
        config: RunConfig,
        chunks: Sequence[Chunk],
        chunks_fingerprint: str,
        timer: StageTimer,
        progress: bool = True,
    ):
        self.config = config
        self.chunks = chunks
        self.chunks_fingerprint = chunks_fingerprint
        self.timer = timer
        self.progress = progress
        self.index_root = config.cache_dir / "index"
        self.built: dict[str, Retriever] = {}

    def rankings(self, name: str, queries: Sequence[str]) -> dict[str, CachedRanking]:
        """The top-k ranking of every query (searched in batches, or read from the cache)."""
        key = sha256_text(
            json.dumps(
                {"retriever": spec_fingerprint(self.config, name), "chunks": self.chunks_fingerprint, "k": self.config.top_k},
                sort_keys=True,
            )
        )
        cache = RetrievalCache(self.config.cache_dir / "retrieval" / f"{name}-{key[:24]}.json")
        missing = cache.missing(queries)
        if missing:
            retriever = self._indexed(name)
            with self.timer.stage(f"retrieve:{name}"):
                bar = tqdm(total=len(missing), desc=f"retrieve {name}", unit="q", disable=not self.progress)
                try:
                    for start in range(0, len(missing), SEARCH_BATCH):
                        batch = missing[start : start + SEARCH_BATCH]
                        began = time.perf_counter()
                        found = retriever.search(batch, self.config.top_k)
                        per_query_ms = (time.perf_counter() - began) * 1000.0 / len(batch)
                        for query, ranking in zip(batch, found, strict=True):
                            cache.entries[query] = CachedRanking(
                                list(ranking.chunk_ids), [float(s) for s in ranking.scores], per_query_ms
                            )
                        bar.update(len(batch))
                finally:
                    bar.close()
                    cache.save()
        return {query: cache.entries[query] for query in queries}

    def _indexed(self, name: str) -> Retriever:
        """The retriever ``name``, indexed, with its fusion inputs indexed and bound first."""
        if name in self.built:
            return self.built[name]
        spec = self.config.retriever(name)
        retriever = build_retriever(spec.name, spec.type, spec.params)
        for dependency in retriever.requires():
            self._indexed(dependency)
        retriever.bind(dict(self.built))
        with self.timer.stage(f"index:{name}"):
            build_with_marker(self.index_root, name, lambda directory: retriever.index(self.chunks, directory))
        self.built[name] = retriever
        return retriever


def build_with_marker(root: Path, name: str, build: Callable[[IndexStorage], None]) -> None:
    """Run ``build(storage)`` holding an exclusive lock (``<root>/<name>.lock``), so concurrent runs
    sharing a cache wait for each other instead of building the same index twice. ``root`` is
    ``<cache_dir>/index``; ``storage`` is :meth:`IndexStorage.under` ``(<cache_dir>, name)``.

    The lock is the runner's only part: completeness is each retriever's own (BM25's ``COMPLETE``
    file, Chroma's ``rag_complete``, the embedding store's atomic shards), so nothing here deletes
    an interrupted build's work; the next build resumes from it. The lock dies with its process."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        build(IndexStorage.under(root.parent, name))
