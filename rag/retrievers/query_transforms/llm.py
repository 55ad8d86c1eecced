"""How an LLM query transform asks its questions: through the run's generator factory
(:class:`rag.retrievers.base.StageServices`), so the generation cache, the retry rules and the
managed local server are the answer generator's.

The generator is the transform's ``generator:`` setting, else the run's default one (an extractive
default, which is no LLM, is replaced by the local SmolLM2); its closed-book prompt becomes the
transform's ``system_prompt`` and ``user_prompt``, its ``max_tokens`` and ``temperature`` the
transform's, and pass p of several (HyDE's n passages) uses seed + p, so sampled passes differ and
each is cached under its own key. Requests are closed-book requests (no context). Generations are
cached under ``<cache_dir>/stages/<method name>``.

A generation that fails for good (retries exhausted) stops the run with one line naming the method,
the count and the first cause, as a reranker's failed request does (:mod:`rag.rerankers.llm`): a
method whose queries silently lost their passages or paraphrases would be a different method, and a
ranking made that way would be cached as if it were the method's. Every reply already made is in the
stage's generation cache, so the next run sends only what is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.errors import BenchError
from rag.generation.base import GenerationRequest
from rag.generation.config import stage_generator_config
from rag.retrievers.query_transforms.config import LLMTransformParams



@dataclass(frozen=True)
class Replies:
    """Per question: its successful replies (pass order), the requests sent for it and their tokens."""

    texts: list[list[str]]
    calls: list[int]
    tokens: list[int]


def generator_config(params: LLMTransformParams, default, temperature: float, pass_index: int = 0):
    """The generator config a transform's pass ``pass_index`` uses (module docstring)."""
    base = stage_generator_config(params.generator, default)
    seed = base.seed if pass_index == 0 else (base.seed or 0) + pass_index
    return base.model_copy(update={
        "closed_book_system_prompt": params.system_prompt, "closed_book_user_prompt": params.prompt(),
        "max_tokens": params.max_tokens, "temperature": temperature, "seed": seed,
    })


def ask(transform, questions: Sequence[str], passes: int, temperature: float) -> Replies:
    """``passes`` replies per question from the transform's LLM (fewer where generations failed)."""
    services = transform.services
    if services is None:
        raise BenchError(f"retriever {transform.method!r}: its query transform {transform.params.type!r} calls an "
                         "LLM and needs the run's services (Retriever.use) before searching")
    texts: list[list[str]] = [[] for _ in questions]
    calls, tokens = [0] * len(questions), [0] * len(questions)
    failed: list = []
    cache_dir = services.stage_cache(transform.method)
    for pass_index in range(passes):
        config = generator_config(transform.params, services.default_generator, temperature, pass_index)
        requests = [GenerationRequest(f"{transform.method}/{pass_index}/{i}", question, [], closed_book=True)
                    for i, question in enumerate(questions)]
        with services.generator_factory(config, cache_dir) as generator:
            results = generator.generate(requests)
        for i, result in enumerate(results):
            calls[i] += 1
            tokens[i] += result.prompt_tokens + result.completion_tokens
            if result.failed:
                failed.append(result)
            else:
                texts[i].append(result.answer)
    if failed:
        first = failed[0]
        raise BenchError(f"retriever {transform.method!r}: {len(failed)} of {passes * len(questions)} "
                         f"{transform.params.type} generations failed for good (first: {first.error_kind}: "
                         f"{first.error_message}); the replies made so far are cached")
    return Replies(texts, calls, tokens)
