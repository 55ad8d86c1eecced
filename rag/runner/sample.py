"""Which questions the methods that call an LLM per question run on, and the plan line for each.

The rule (docs/evaluation.md, "Methods that call an LLM"): a method whose own step or any input's,
recursively, sends LLM or model-endpoint requests per question (``RetrieverParams.llm_calls_per_query()
> 0``: a query transform, an LLM reranker) is *LLM-backed*. It runs only on a sample: the answer
experiment's questions when ``generation`` is on (:func:`rag.runner.answers.answered_questions`),
else ``stages_sample`` (a seeded sample of ``questions_per_set`` per set of ``question_sets``). So that
it is compared on the same questions as every other method, each set whose sample is smaller than
the set gains a derived set ``<set>@sample`` (:func:`rag.results.schema.sampled_set`) that holds every
method on exactly the sampled questions; LLM-backed methods appear only there (or in the set itself
when the sample is the whole set, and nowhere for a set with no sample). Runs without LLM-backed
methods have no derived set.

The plan printed before any request is sent (after chunking, so with each depth bounded by the chunks
the corpus has: :func:`rag.config.bounded_by_chunks`) states for each LLM-backed method its requests
per question by what receives them (an LLM, a ``/rerank`` endpoint: :func:`requests_per_question`),
its requests in all and an estimated time of the LLM requests: calls x the mean measured latency of
the LLM calls already recorded in the run's generation caches (``<cache_dir>/generation`` and
``<cache_dir>/stages/*``); with none recorded, a range from :data:`LOCAL_SECONDS_PER_CALL`. A rerank
endpoint's time is not estimated (nothing here measures it). Cached calls cost nothing, so this is an
upper bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag.config import RunConfig
from rag.generation.cache import recorded_latencies
from rag.results import schema
from rag.runner.answers import answer_sample, answered_questions
from rag.types import Question

#: Seconds per call of the local SmolLM2: (a short prompt of a reranker or query transform, a 10-chunk
#: answer). measured: docs/measurements.md#local-llm-seconds-per-call
LOCAL_SECONDS_PER_CALL = (1.0, 3.0)


def llm_calls_per_question(config: RunConfig, method: str) -> int:
    """LLM or endpoint requests per question of ``method``'s whole chain: its own step's and its inputs', recursively."""
    params = config.retriever(method).params
    return params.llm_calls_per_query() + sum(llm_calls_per_question(config, dep) for dep in params.requires())


LLM, ENDPOINT = "an LLM", "a rerank endpoint"


def requests_per_question(config: RunConfig, method: str) -> dict[str, int]:
    """:func:`llm_calls_per_question` by what receives the requests: :data:`LLM` (query transforms, the
    llm reranker) or :data:`ENDPOINT` (the endpoint reranker's ``/rerank``), LLM first."""
    params = config.retriever(method).params
    counts = dict.fromkeys((LLM, ENDPOINT), 0)
    if own := params.llm_calls_per_query():
        counts[ENDPOINT if getattr(getattr(params, "reranker", None), "type", None) == "endpoint" else LLM] += own
    for dep in params.requires():
        for kind, calls in requests_per_question(config, dep).items():
            counts[kind] += calls
    return {kind: calls for kind, calls in counts.items() if calls}


def llm_sample(config: RunConfig, question_sets: Mapping[str, Sequence[Question]]) -> dict[str, set[str]]:
    """Per set, the ids of the questions LLM-backed methods run on (the module's rule)."""
    if config.generation is not None:
        return answered_questions(config, question_sets)
    chosen = config.stages_sample.question_sets
    return {name: answer_sample(qs, config.stages_sample.questions_per_set, config.seed, name)
            if chosen is None or name in chosen else set() for name, qs in question_sets.items()}


@dataclass(frozen=True)
class SampledSets:
    """The question sets a run evaluates (its own, each followed by its derived ``@sample`` set where
    there is one) and where each method runs."""

    sets: dict[str, list[Question]]
    llm_methods: dict[str, int]  # LLM-backed method -> LLM calls per question
    llm_sets: list[str]  # the sets LLM-backed methods run on
    requests: dict[str, dict[str, int]] = field(default_factory=dict)  # method -> requests_per_question

    @classmethod
    def of(cls, config: RunConfig, methods: Sequence[str], question_sets: Mapping[str, Sequence[Question]]) -> "SampledSets":
        llm_methods = {m: calls for m in methods if (calls := llm_calls_per_question(config, m)) > 0}
        if not llm_methods:
            return cls({name: list(qs) for name, qs in question_sets.items()}, {}, [])
        sample = llm_sample(config, question_sets)
        sets: dict[str, list[Question]] = {}
        llm_sets = []
        for name, qs in question_sets.items():
            sets[name] = list(qs)
            if sample[name] and len(sample[name]) < len(qs):
                sets[schema.sampled_set(name)] = [q for q in qs if q.qid in sample[name]]
                llm_sets.append(schema.sampled_set(name))
            elif sample[name]:
                llm_sets.append(name)
        return cls(sets, llm_methods, llm_sets, {m: requests_per_question(config, m) for m in llm_methods})

    def sets_of(self, method: str) -> list[str]:
        """The sets ``method`` is evaluated in: every set, or the LLM sets for an LLM-backed method."""
        return list(self.llm_sets) if method in self.llm_methods else list(self.sets)

    def plan_lines(self, cache_dir: Path) -> list[str]:
        """One line per LLM-backed method: calls per question, calls in all, estimated time (module docstring)."""
        latencies = [s for d in [cache_dir / "generation", *sorted((cache_dir / "stages").glob("*"))]
                     for s in recorded_latencies(d)]
        per_call = sum(latencies) / len(latencies) if latencies else None
        questions = sum(len(self.sets[name]) for name in self.llm_sets)
        where = ", ".join(f"{name} {len(self.sets[name])}" for name in self.llm_sets) or "no set"
        lines = []
        for method, calls in self.llm_methods.items():
            kinds = self.requests.get(method) or {LLM: calls}
            total = calls * questions
            what = " and ".join(f"{kind} {n} time(s)" for kind, n in kinds.items())
            to_llm = kinds.get(LLM, 0) * questions
            times = [_llm_time(to_llm, per_call, len(latencies), cache_dir) + (f" for the {to_llm} LLM calls"
                                                                              if len(kinds) > 1 else "")] if to_llm else []
            if ENDPOINT in kinds:
                times.append("the rerank endpoint's time not estimated (its speed is its own; nothing here measures it)")
            lines.append(f"{method} calls {what} per question: {questions} sampled questions "
                         f"({where}), at most {total} calls, {'; '.join(times)}")
        return lines


def _llm_time(calls: int, per_call: float | None, recorded: int, cache_dir: Path) -> str:
    """The estimated time of ``calls`` LLM calls: by the mean recorded latency, else the local range."""
    if per_call is not None:
        return (f"about {calls * per_call / 60:.1f} min at {per_call:.2f} s per call (the mean of the "
                f"{recorded} LLM calls recorded in {cache_dir}; cached calls cost nothing)")
    low, high = LOCAL_SECONDS_PER_CALL
    return (f"about {calls * low / 60:.1f}-{calls * high / 60:.1f} min at {low:.0f}-{high:.0f} s per call "
            "(what the local SmolLM2 took on 2 CPU cores; no LLM call recorded in this cache yet)")
