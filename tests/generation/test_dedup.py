"""One request per distinct prompt, counted by the stand-in server; prompts sent in prefix order."""

from __future__ import annotations

import hashlib

from rag.generation import GenerationRequest, OpenAIGeneratorConfig, build_generator
from rag.runner.generation_stats import GenerationCounts

PASSAGES = ["Paris is the capital of France.", "Berlin is the capital of Germany.", "Rome is in Italy."]


def config(base_url: str, **overrides) -> OpenAIGeneratorConfig:
    return OpenAIGeneratorConfig(**{"model": "stand-in", "base_url": base_url, "api_key_env": "RAG_TEST_NO_SUCH_VAR",
                                    "concurrency": 4, **overrides})


def requests() -> list[GenerationRequest]:
    """Three methods x two questions; 'rrf' and 'convex' have the same top-k: 4 distinct prompts."""
    lists = {"dense": PASSAGES, "rrf": PASSAGES[::-1], "convex": PASSAGES[::-1]}
    return [GenerationRequest(f"{method}/q{i}", question, contexts)
            for method, contexts in lists.items()
            for i, question in enumerate(["What is the capital of France?", "Where is Rome?"])]


def test_identical_prompts_are_sent_once_and_answered_alike(stand_in, tmp_path):
    with build_generator(config(stand_in.base_url), tmp_path) as generator:
        results = generator.generate(requests())
    assert [r.key for r in results] == [r.key for r in requests()]
    assert stand_in.stats.completions_requests == 4
    assert set(stand_in.stats.attempts_by_prompt.values()) == {1}
    by_key = {r.key: r for r in results}
    for i in range(2):
        rrf, convex, dense = by_key[f"rrf/q{i}"], by_key[f"convex/q{i}"], by_key[f"dense/q{i}"]
        assert rrf.answer == convex.answer != dense.answer
        assert [rrf.extra.get("deduplicated", False), convex.extra.get("deduplicated", False)].count(True) == 1
    counts = GenerationCounts.of(results)
    assert (counts.needed, counts.distinct, counts.cached, counts.sent, counts.attempts) == (6, 4, 0, 4, 4)


def test_a_rerun_is_all_cache_and_sends_nothing(stand_in, tmp_path):
    with build_generator(config(stand_in.base_url), tmp_path) as generator:
        generator.generate(requests())
    with build_generator(config(stand_in.base_url), tmp_path) as generator:
        results = generator.generate(requests())
    assert stand_in.stats.completions_requests == 4
    counts = GenerationCounts.of(results)
    assert (counts.distinct, counts.cached, counts.sent) == (4, 4, 0)


def test_distinct_prompts_are_sent_in_prefix_order(stand_in, tmp_path):
    """With one worker the results arrive in sending order: sorted by prompt text, so the two prompts
    whose contexts start with the same passage follow each other."""
    seen = []
    with build_generator(config(stand_in.base_url, concurrency=1), tmp_path) as generator:
        generator.generate(requests(), on_result=seen.append)
        sent = [generator.prompts.build(r).messages for r in requests()]
    first_of_each = list(dict.fromkeys(
        hashlib.sha256(repr(sent[[r.key for r in requests()].index(result.key)]).encode()).hexdigest() for result in seen))
    ordered = sorted(dict.fromkeys(hashlib.sha256(repr(m).encode()).hexdigest() for m in sent),
                     key=lambda h: next([x["content"] for x in m] for m in sent
                                        if hashlib.sha256(repr(m).encode()).hexdigest() == h))
    assert first_of_each == ordered
