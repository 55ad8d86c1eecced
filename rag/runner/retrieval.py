"""Index each retriever (fusion after its inputs) and retrieve every question, with two caches.

- Index cache: each retriever gets ``<cache_dir>/index/<name>`` for its own on-disk index and the
  shared embedding store ``<cache_dir>/embeddings``, built under a per-name lock (see
  :func:`build_with_marker`); each retriever marks its own indexes complete, so a build interrupted
  by Ctrl-C, a crash or a kill resumes from what it finished.
- Retrieval cache: ``<cache_dir>/retrieval/<key>.json`` maps query text to its ranking and the
  measured search time; the key hashes the retriever's settings and code (and those of its fusion inputs),
  the chunk set and the run's ``depth`` (every method keeps ``depth`` results, default 100;
  ``top_k`` only decides what the generator receives and the headline cut-off). A re-run (or ``--resume``) searches
  only queries not yet cached, and a
  warm run does not even build the indexes.

Costs add up: a method's cost per question is everything it runs. A fusion's or a rerank's inputs are
served to it from their own retrieval (searched and timed there, as the run ranks and reports them:
to the run's depth, the lists of their ``.trec`` files), cut to the depth it asks of them (a fusion's
``depth``, default the run's; a rerank's ``depth``): a rerank of rrf's top 10 reorders exactly rrf's
reported top 10, never rrf recomputed from its inputs' top 10. So its measured time is its own step
only, and the cost :meth:`RetrievalStage.rankings` returns (``search_ms``, and the LLM or endpoint
``llm_calls`` and ``llm_tokens`` a query transform or reranker reports in its :class:`rag.types.Ranking`)
is that step plus its inputs' costs on the same question, recursively; a dense
retriever's is its query embedding plus its search (an embedding already in the embedding store is
read, not computed, so a run after one that embedded the same questions measures the search alone).
A ranking whose stage failed (:class:`rag.types.Ranking`'s ``failed``) is returned but never cached,
and a fusion or rerank whose input failed on a question fails there too, without searching it.
A retriever that uses another's model rather than its rankings (``milvus_hybrid`` reads its dense
retriever's vectors and query embeddings) runs its own search, and its time is its own.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path


from rag.config import RetrieverSpec, RunConfig
from rag.io_utils import atomic_write_json, sha256_text
from rag.progress import progress
from rag.code_version import code_version
from rag.retrievers import RETRIEVERS, build_retriever
from rag.retrievers.base import IndexStorage, Retriever, RetrieverParams, ServedInputsParams
from rag.retrievers.precision_fidelity import int8_vs_float32
from rag.services import StageServices
from rag.runner.timing import StageTimer
from rag.types import Chunk, Ranking

log = logging.getLogger(__name__)
SEARCH_BATCH = 256
FIDELITY_SAMPLE = 200


@dataclass(frozen=True)
class CachedRanking:
    """A cached ranking and its costs per question: ``search_ms`` (time), ``llm_calls`` and
    ``llm_tokens`` (:class:`rag.types.Ranking`'s; 0 in caches written before they were recorded)."""

    chunk_ids: list[str]
    scores: list[float]
    search_ms: float
    llm_calls: int = 0
    llm_tokens: int = 0
    failed: str = ""  # a stage failed for the question (rag.types.Ranking.failed; never cached)


class RetrievalCache:
    """Rankings of one retriever setting on one chunk set, keyed by query text (atomic JSON file).

    A query is cached when it has a sound entry: a list of distinct ids of chunks of this chunk set
    with one finite score each. A file that does not parse, and each entry that is not sound (an
    unknown chunk id, as in a cache written by hand or for another corpus), is damaged: warned about
    and searched again (:meth:`missing`), like any query not cached."""

    def __init__(self, path: Path, chunk_ids: Collection[str]):
        self.path = path
        self.entries: dict[str, CachedRanking] = {}
        if path.is_file():
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                entries = {query: CachedRanking(**entry) for query, entry in raw.items()}
            except (json.JSONDecodeError, TypeError, UnicodeDecodeError, AttributeError) as exc:
                log.warning("ignoring unreadable retrieval cache %s (%s); it will be rebuilt", path, exc)
                return
            self.entries = {query: entry for query, entry in entries.items() if sound(entry, chunk_ids)}
            if len(self.entries) < len(entries):
                log.warning("retrieval cache %s: %d of %d entries are damaged (unknown chunk ids or malformed); "
                            "those queries are searched again", path, len(entries) - len(self.entries), len(entries))

    def missing(self, queries: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(q for q in queries if q not in self.entries))

    def save(self) -> None:
        atomic_write_json(self.path, {q: {k: v for k, v in vars(entry).items() if k != "failed"}
                                      for q, entry in self.entries.items()}, indent=None)


def sound(entry: CachedRanking, chunk_ids: Collection[str]) -> bool:
    """True for a cached ranking that can be used as is (see :class:`RetrievalCache`)."""
    ids, scores = entry.chunk_ids, entry.scores
    return (isinstance(ids, list) and isinstance(scores, list) and len(ids) == len(scores) == len(set(ids))
            and all(isinstance(i, str) and i in chunk_ids for i in ids)
            and all(isinstance(s, (int, float)) and math.isfinite(s) for s in scores)
            and isinstance(entry.search_ms, (int, float))
            and isinstance(entry.llm_calls, int) and isinstance(entry.llm_tokens, int) and entry.failed == "")


def spec_fingerprint(config: RunConfig, name: str) -> dict:
    """A retriever's settings and code (:func:`rag.code_version.code_version` of its class's module:
    its tokenizer and normalization included, so rankings cached by older code are not served), with
    those of the retrievers it fuses (recursively)."""
    spec: RetrieverSpec = config.retriever(name)
    source = spec.params.source_fingerprint()  # a run file's contents; only where there is one, so other keys stay
    return {
        "name": spec.name,
        "type": spec.type,
        "code": code_version(RETRIEVERS.get(spec.type).__module__),
        "params": spec.params.model_dump(mode="json"),
        "inputs": [spec_fingerprint(config, dep) for dep in spec.params.requires()],
        **({"source": source} if source else {}),
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
        services: StageServices | None = None,
    ):
        self.config = config
        self.services = services  # given to each retriever before it indexes (Retriever.use); None: none
        self.chunks = chunks
        self.chunks_fingerprint = chunks_fingerprint
        self.timer = timer
        self.progress = progress
        self.index_root = config.cache_dir / "index"
        self.built: dict[str, Retriever] = {}
        self.chunk_ids = frozenset(chunk.chunk_id for chunk in chunks)

    def _cache_path(self, name: str, suffix: str = "", depth: int | None = None) -> Path:
        key_data = {"retriever": spec_fingerprint(self.config, name), "chunks": self.chunks_fingerprint,
                    "k": depth or self.config.depth}
        if isinstance(self.config.retriever(name).params, ServedInputsParams):
            key_data["timing"] = "own step"  # a fusion's or rerank's time does not include its inputs' searches
        key = sha256_text(json.dumps(key_data, sort_keys=True))
        return self.config.cache_dir / "retrieval" / f"{name}-{key[:24]}{suffix}.json"

    def rankings(self, name: str, queries: Sequence[str], depth: int | None = None) -> dict[str, CachedRanking]:
        """The ranking of every query to ``depth`` (default the run's; searched in batches, or read from
        the cache), each with its whole cost per question in ``search_ms`` (the module docstring)."""
        depth = depth or self.config.depth
        spec = self.config.retriever(name)
        # an input is served as the run ranks and reports it (its own list, to the run's depth), cut to what
        # the method asks: never recomputed at the method's depth, so a rerank of rrf's top 10 is rrf's top 10
        inputs = ({dep: self.rankings(dep, queries) for dep in spec.params.requires()}
                  if isinstance(spec.params, ServedInputsParams) else {})
        cache = RetrievalCache(self._cache_path(name, depth=depth), self.chunk_ids)
        failed: dict[str, CachedRanking] = {}  # a failed stage is never cached: the next run tries again
        for query in queries:  # an input's failed stage fails this method too: nothing to fuse or rerank
            reason = next((f"input {dep}: {served[query].failed}" for dep, served in inputs.items()
                           if served[query].failed), "")
            if reason:
                failed[query] = CachedRanking([], [], 0.0, failed=reason)
        missing = [query for query in cache.missing(queries) if query not in failed]
        if missing:
            retriever = self._indexed(name)
            if inputs:
                retriever.bind({dep: ServedRankings(dep, self.config.retriever(dep).params, served)
                                for dep, served in inputs.items()})
            with self.timer.stage(f"retrieve:{name}"):
                bar = progress(total=len(missing), desc=f"retrieve {name}", unit="q", enabled=self.progress)
                try:
                    for start in range(0, len(missing), SEARCH_BATCH):
                        batch = missing[start : start + SEARCH_BATCH]
                        began = time.perf_counter()
                        found = retriever.search(batch, depth)
                        per_query_ms = ((time.perf_counter() - began) * 1000.0 / len(batch)
                                        if spec.params.measures_cost() else math.nan)  # a run file: made elsewhere
                        for query, ranking in zip(batch, found, strict=True):
                            entry = CachedRanking(list(ranking.chunk_ids), [float(s) for s in ranking.scores],
                                                  per_query_ms, ranking.llm_calls, ranking.llm_tokens, ranking.failed)
                            if entry.failed:
                                failed[query] = replace(entry, chunk_ids=[], scores=[])
                            else:
                                cache.entries[query] = entry
                        bar.update(len(batch))
                finally:
                    bar.close()
                    cache.save()
        return {query: with_inputs(failed.get(query) or cache.entries[query], [served[query] for served in inputs.values()])
                for query in queries}

    def hnsw_fidelity(self, name: str, queries: Sequence[str], sample_size: int = FIDELITY_SAMPLE) -> dict | None:
        """How close a dense retriever's approximate (HNSW) top-k is to exact search, measured on a
        seeded sample of ``queries``: mean |HNSW top-k ∩ exact top-k| / k and the share of identical
        top-k lists. None for retrievers without an approximate search. Cached with the rankings
        (HNSW builds are not bit-reproducible: a rebuilt index is measured again)."""
        spec = self.config.retriever(name)
        if spec.type != "dense" or spec.params.search != "hnsw":
            return None

        def measure(sample: list[str]) -> dict:
            k = self.config.top_k
            approximate = self.rankings(name, sample)
            exact = self._indexed(name).search_exact(sample, k)
            overlaps = [len(set(approximate[q].chunk_ids[:k]) & set(e.chunk_ids)) / max(len(e.chunk_ids), 1)
                        for q, e in zip(sample, exact)]
            identical = [approximate[q].chunk_ids[:k] == e.chunk_ids for q, e in zip(sample, exact)]
            return {"questions": len(sample), "k": k, "recall_vs_exact": sum(overlaps) / max(len(sample), 1),
                    "identical_top_k": sum(identical) / max(len(sample), 1)}

        return self._sampled_check(name, ".fidelity", queries, sample_size, measure)

    def int8_fidelity(self, name: str, queries: Sequence[str], sample_size: int = FIDELITY_SAMPLE) -> dict | None:
        """How close a dense retriever's int8 embeddings retrieve to float32 on a seeded sample of
        ``queries`` (:func:`rag.retrievers.precision_fidelity.int8_vs_float32`); None unless the
        retriever embeds in int8. Cached like :meth:`hnsw_fidelity`."""
        spec = self.config.retriever(name)
        if spec.type != "dense" or getattr(spec.params.embedder, "precision", None) != "int8":
            return None
        chunk_text = {chunk.chunk_id: chunk.text for chunk in self.chunks}
        return self._sampled_check(name, ".int8", queries, sample_size, lambda sample: int8_vs_float32(
            self._indexed(name), chunk_text, sample, self.config.top_k, self.config.seed))

    def _sampled_check(self, name: str, suffix: str, queries: Sequence[str], sample_size: int,
                       measure: Callable[[list[str]], dict]) -> dict:
        """``measure`` of a ``config.seed``-ed sample of ``sample_size`` distinct ``queries``, cached
        beside the rankings (``suffix``) under the sample's hash."""
        distinct = sorted(set(queries))
        sample = random.Random(self.config.seed).sample(distinct, min(sample_size, len(distinct)))
        path = self._cache_path(name, suffix)
        key = sha256_text(json.dumps(sample))
        if path.is_file():
            try:
                cached = json.loads(path.read_text(encoding="utf-8"))
                if cached.get("sample_sha256") == key:
                    return cached
            except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as exc:
                log.warning("ignoring unreadable check cache %s (%s)", path, exc)
        result = {**measure(sample), "sample_sha256": key}
        atomic_write_json(path, result)
        return result

    def _indexed(self, name: str) -> Retriever:
        """The retriever ``name``, indexed, with its fusion inputs indexed and bound first."""
        if name in self.built:
            return self.built[name]
        spec = self.config.retriever(name)
        retriever = build_retriever(spec.name, spec.type, spec.params)
        if not isinstance(spec.params, ServedInputsParams):  # served inputs are bound in rankings()
            for dependency in retriever.requires():
                self._indexed(dependency)
            retriever.bind(dict(self.built))
        if self.services is not None:
            retriever.use(self.services)
        with self.timer.stage(f"index:{name}"):
            build_with_marker(self.index_root, name, lambda directory: retriever.index(self.chunks, directory))
        self.built[name] = retriever
        return retriever


def with_inputs(own: CachedRanking, inputs: Sequence[CachedRanking]) -> CachedRanking:
    """``own`` with its inputs' costs on the same question added: time, LLM calls and tokens."""
    return replace(own, search_ms=own.search_ms + sum(i.search_ms for i in inputs),
                   llm_calls=own.llm_calls + sum(i.llm_calls for i in inputs),
                   llm_tokens=own.llm_tokens + sum(i.llm_tokens for i in inputs))


class ServedRankings(Retriever):
    """A fusion's or rerank's input as that method sees it: the rankings the input's own retrieval made
    (:meth:`RetrievalStage.rankings`: searched, timed and cached there, before the fusion searches),
    so the fusion's measured time is its own step."""

    def __init__(self, name: str, params: RetrieverParams, served: Mapping[str, CachedRanking]):
        super().__init__(name, params)
        self.served = served

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        """Nothing: the input was indexed by the stage when it searched."""

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        return [Ranking(self.served[query].chunk_ids[:k], self.served[query].scores[:k]) for query in queries]


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
