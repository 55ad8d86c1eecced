"""How far a method's measured cost per question can be trusted: its timing noise.

A method's cost per question (``retrieval_ms``) is the time its searches took in the run, divided by
the questions searched; one-time work (index build or load, kernel compile, model load) belongs to the
index step and is reported once, as the run's ``index:<method>`` stage time. Two such costs are told
apart only beyond their noise (:mod:`rag.results.recommendation`), measured here per method:

- a seeded sample of at most :data:`SAMPLE` distinct questions of the run is searched again
  :data:`PASSES` times, each pass timed as one batch (ms per question);
- the noise is the spread (max - min) of those passes together with the run's own time on the same
  questions, so a cost that a one-time load inflated in the run shows as noise, not as a difference;
- a method whose inputs are served to it (a fusion, a rerank) times its own step the same way, on its
  inputs' cached rankings; its noise is that spread plus its inputs' noise;
- an LLM-backed method is not searched again (every pass would send the sample to the LLM): its noise
  is unknown (NaN), and its cost separates it from nothing;
- a method whose rankings were made elsewhere (a run file, ``measures_cost()`` false) has no measured
  cost (NaN) and no noise (NaN): its cost separates it from nothing, and a fusion over it costs NaN too.

Cached under ``<cache_dir>/costs`` by the method's retrieval key and the sample, so a warm re-run reads
the same noise it measured.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Collection, Sequence

from rag.io_utils import atomic_write_json, sha256_text
from rag.retrievers.base import ServedInputsParams
from rag.runner.retrieval import RetrievalStage, ServedRankings

log = logging.getLogger(__name__)
#: Repeated timing passes per method, and the most questions each pass searches.
PASSES, SAMPLE = 5, 32


def cost_noise(stage: RetrievalStage, methods: Sequence[str], llm_methods: Collection[str],
               questions: Sequence[str]) -> dict[str, float]:
    """Each method's timing noise in ms per question (module docstring; NaN for LLM-backed methods).

    Args:
        stage: the run's retrieval stage, after every method has retrieved ``questions``.
        methods: the methods to measure.
        llm_methods: the LLM-backed methods (not searched again).
        questions: the question texts the sample is drawn from.

    Returns:
        ``{method: noise}``, noise in ms per question.
    """
    noise: dict[str, float] = {}

    def of(name: str) -> float:
        if name not in noise:
            unmeasured = name in llm_methods or not stage.config.retriever(name).params.measures_cost()
            noise[name] = math.nan if unmeasured else _measured(stage, name, questions, of)
        return noise[name]

    return {method: of(method) for method in methods}


def _measured(stage: RetrievalStage, name: str, questions: Sequence[str], of) -> float:
    params = stage.config.retriever(name).params
    inputs = params.requires() if isinstance(params, ServedInputsParams) else []
    depth = stage.config.depth

    def measure(sample: list[str]) -> dict:
        served = {dep: stage.rankings(dep, sample, params.input_depth(depth)) for dep in inputs}
        run_ms = (sum(r.search_ms for r in stage.rankings(name, sample).values())
                  - sum(r.search_ms for ranked in served.values() for r in ranked.values())) / len(sample)
        retriever = stage._indexed(name)
        if inputs:
            retriever.bind({dep: ServedRankings(dep, stage.config.retriever(dep).params, ranked)
                            for dep, ranked in served.items()})
        passes = []
        for _ in range(PASSES):
            began = time.perf_counter()
            retriever.search(sample, depth)
            passes.append((time.perf_counter() - began) * 1000.0 / len(sample))
        return {"questions": len(sample), "run_ms": run_ms, "passes_ms": passes,
                "own_noise_ms": max(run_ms, *passes) - min(run_ms, *passes)}

    if not questions:
        return math.nan
    distinct = sorted(set(questions))
    sample = random.Random(stage.config.seed).sample(distinct, min(SAMPLE, len(distinct)))
    key = sha256_text(json.dumps(sample))
    path = stage.config.cache_dir / "costs" / f"{stage._cache_path(name).stem}.noise.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        log.warning("ignoring unreadable cost cache %s (%s)", path, exc)
        cached = {}
    if not isinstance(cached, dict) or cached.get("sample_sha256") != key or "own_noise_ms" not in cached:
        cached = {**measure(sample), "sample_sha256": key}
        atomic_write_json(path, cached)
    return float(cached["own_noise_ms"]) + sum(of(dep) for dep in inputs)
