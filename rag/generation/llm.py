"""Answers through an OpenAI-compatible chat-completions endpoint, concurrently, cached, with retries.

One ``generate`` call builds every prompt (system + user template, numbered chunks trimmed to the
token budget) and its cache key (model, endpoint, messages, parameters), then:

- **one request per distinct prompt**: requests whose prompts are identical (the same question with
  the same ordered context, e.g. two fusions with the same top-k) share one answer; the others'
  results are copies with ``extra["deduplicated"] = True`` and ``attempts = 0``;
- **preflight** (:mod:`rag.endpoints.preflight`) when some distinct prompt is not cached: the
  endpoint must answer ``/models`` and list the model, or nothing is sent;
- **prefix order**: distinct prompts are sent in lexicographic order of their messages, so prompts
  that share leading chunks follow each other and a server that keeps the previous prompt's KV
  cache (llama.cpp reuses the longest common token prefix) evaluates only what differs; results
  still come back in request order.

Then an asyncio loop with ``concurrency`` workers shares one ``AsyncOpenAI`` client (its own retries
off: ``max_retries=0``). Each distinct prompt:

1. returns the cached answer when it was answered before; when the same prompt is in flight
   elsewhere (another worker, or another run on the same cache directory), waits for that answer
   instead of sending the prompt twice (see :class:`rag.generation.cache.InFlightLocks`);
2. otherwise is sent under a hard per-attempt deadline of ``timeout_s`` and retries retryable
   failures (:func:`rag.endpoints.retry.retrying`, tenacity), waiting ``Retry-After`` when the
   server sends one and exponential backoff with seeded jitter otherwise;
3. appends a success to the cache at once; after the last attempt a failure becomes a result with
   ``answer=None`` and ``error_kind``/``error_message`` — it is never raised, never cached.

The API key is read from the environment variable named in the config and only handed to the
client (a remote endpoint without one is refused before any request, :func:`api_key_for`). Answers
and error messages pass through the run's :class:`rag.secrets.Redactor` before they are cached or
returned, so a server echoing the key back cannot leak it.
"""

from __future__ import annotations

import asyncio
import math
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import openai

from rag.endpoints.clients import NO_KEY_PLACEHOLDER, ClientFactory, default_client_factory
from rag.endpoints.keys import endpoint_api_key
from rag.endpoints.preflight import preflight
from rag.endpoints.retry import Backoff, RequestFailure, classify, retry_logger, retrying
from rag.progress import progress as progress_bar
from rag.generation.base import GENERATORS, GenerationRequest, GenerationResult, Generator, ProgressCallback
from rag.generation.cache import CachedGeneration, GenerationCache, InFlightLocks, generation_cache_key
from rag.generation.config import LLMGeneratorConfig, OpenAIGeneratorConfig
from rag.generation.prompt import Prompt, PromptBuilder, TokenCounter, default_token_counter
from rag.secrets import Redactor

log = logging.getLogger(__name__)

IN_FLIGHT_POLL_S = 0.05


class ChatGenerator(Generator):
    """The request engine shared by the ``openai`` and ``local`` generators.

    ``endpoint_id`` identifies the endpoint in cache keys: the base URL for remote servers, the model
    file for the managed local server (whose port changes from run to run). ``redactor`` scrubs
    answers and error messages (default: :meth:`Redactor.for_config` of ``config``). ``api_key_env``
    names the key variable for the preflight (None: an endpoint that needs no key). ``prompt_builder``
    (anything with ``build(request) -> Prompt``) replaces the answer prompt of ``config``: question
    synthesis (:mod:`rag.data.questions.llm`) sends its own messages through the same engine.
    """

    def __init__(
        self,
        config: LLMGeneratorConfig,
        cache_dir: str | Path,
        *,
        base_url: str,
        endpoint_id: str,
        api_key: str | None,
        api_key_env: str | None = None,
        token_counter: TokenCounter | None = None,
        client_factory: ClientFactory = default_client_factory,
        redactor: Redactor | None = None,
        prompt_builder: PromptBuilder | None = None,
    ):
        self.config = config
        self.base_url = base_url
        self.endpoint_id = endpoint_id
        self._api_key = api_key
        self._api_key_env = api_key_env
        self._client_factory = client_factory
        self.redactor = redactor if redactor is not None else Redactor.for_config(config)
        self._checked = False
        self.prompts = prompt_builder or PromptBuilder(
            config.system_prompt, config.user_prompt, config.context_token_budget, config.max_chunks,
            token_counter or default_token_counter(),
            closed_book_prompts=(config.closed_book_system_prompt, config.closed_book_user_prompt),
        )
        self.cache = GenerationCache(cache_dir)
        self.in_flight = InFlightLocks(cache_dir)
        self._backoff = Backoff(config.backoff, config.seed)
        self._params = {"temperature": config.temperature, "max_tokens": config.max_tokens, "seed": config.seed}
        if config.top_logprobs is not None:
            self._params |= {"logprobs": True, "top_logprobs": config.top_logprobs}

    # -- public API ------------------------------------------------------------------------------
    def generate(
        self, requests: Sequence[GenerationRequest], on_result: ProgressCallback | None = None
    ) -> list[GenerationResult]:
        """One result per request, in request order (see the module docstring). Not callable from
        inside a running event loop. Raises :class:`rag.errors.BenchError` when the preflight fails."""
        requests = list(requests)
        prompts, keys = self._plan(requests)
        if not self._checked and any(self.cache.get(key) is None for key in keys):
            self.preflight()
        return asyncio.run(self._generate_all(requests, prompts, keys, on_result))

    def _plan(self, requests: list[GenerationRequest]) -> tuple[list[Prompt], list[str]]:
        """Each request's prompt and cache key (model, endpoint, messages, parameters)."""
        prompts = [self.prompts.build(request) for request in requests]
        return prompts, [generation_cache_key(self.config.model, self.endpoint_id, p.messages, self._params)
                         for p in prompts]

    @staticmethod
    def _sharing(keys: list[str]) -> dict[str, list[int]]:
        """Each distinct cache key and the requests (indices) whose prompt it is."""
        sharing: dict[str, list[int]] = {}
        for index, key in enumerate(keys):
            sharing.setdefault(key, []).append(index)
        return sharing

    @staticmethod
    def _deliver(result: GenerationResult, requests: list[GenerationRequest], indices: list[int],
                 results: list, progress, on_result: ProgressCallback | None) -> None:
        """A prompt's result put in place for every request that has it (the first request's own,
        the others' copies marked ``deduplicated``, ``attempts`` 0), each counted on the bar and
        reported to ``on_result``."""
        first, *others = indices
        copies = [(i, dataclasses.replace(result, key=requests[i].key, attempts=0,
                                          extra={**result.extra, "deduplicated": True})) for i in others]
        for index, item in [(first, result), *copies]:
            results[index] = item
            progress.update()
            if on_result is not None:
                on_result(item)

    @staticmethod
    def _extra(prompt: Prompt, key: str) -> dict:
        """What a result records of its prompt (chunks used and truncated, context tokens, cache key)."""
        return {"chunks_used": prompt.chunks_used, "chunks_truncated": prompt.chunks_truncated,
                "context_tokens": prompt.context_tokens, "cache_key": key}

    @staticmethod
    def _from_cache(request: GenerationRequest, cached: CachedGeneration, extra: dict) -> GenerationResult:
        if cached.top_logprobs is not None:
            extra["top_logprobs"] = cached.top_logprobs
        return GenerationResult(
            key=request.key, answer=cached.answer, prompt_tokens=cached.prompt_tokens,
            completion_tokens=cached.completion_tokens, latency_s=cached.latency_s,
            attempts=0, cached=True, extra=extra,
        )

    def preflight(self) -> None:
        """Check the endpoint once (:func:`rag.endpoints.preflight.preflight`)."""
        preflight(self.base_url, self.config.model, self._api_key, self._api_key_env, min(self.config.timeout_s, 10.0))
        self._checked = True

    def close(self) -> None:
        self.cache.close()

    # -- engine ----------------------------------------------------------------------------------
    async def _generate_all(
        self, requests: list[GenerationRequest], prompts: list[Prompt], keys: list[str],
        on_result: ProgressCallback | None,
    ) -> list[GenerationResult]:
        results: list[GenerationResult | None] = [None] * len(requests)
        sharing = self._sharing(keys)
        distinct = sorted(sharing, key=lambda key: [m["content"] for m in prompts[sharing[key][0]].messages])
        pending = iter(distinct)
        # the caller's on_result draws its own bar (rag.runner.answers); one bar, not two
        progress = progress_bar(total=len(requests), desc="generate", unit="q", enabled=on_result is None)
        client = self._client_factory(self.base_url, self._api_key or NO_KEY_PLACEHOLDER)

        async def worker() -> None:
            for key in pending:
                first = sharing[key][0]
                result = await self._answer(client, requests[first], prompts[first], key)
                self._deliver(result, requests, sharing[key], results, progress, on_result)

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.config.concurrency, len(distinct)) or 1)))
        finally:
            progress.close()
            await client.close()
        return results  # type: ignore[return-value]  # every index was filled by a worker

    async def _answer(
        self, client: openai.AsyncOpenAI, request: GenerationRequest, prompt: Prompt, key: str
    ) -> GenerationResult:
        extra = self._extra(prompt, key)
        cached = self.cache.get(key)
        if cached is None:
            async with self._claim(key):
                cached = self.cache.get(key)  # answered meanwhile by whoever held the claim
                if cached is None:
                    return await self._send(client, request, prompt, key, extra)
        return self._from_cache(request, cached, extra)

    @asynccontextmanager
    async def _claim(self, key: str) -> AsyncIterator[None]:
        """Hold the in-flight lock of ``key``, polling without blocking the event loop while another
        worker or run holds it; the cache is re-read once the lock is ours."""
        lock = self.in_flight.try_acquire(key)
        if lock is None:
            log.info("%s: the same prompt is in flight elsewhere; waiting for its answer", key[:16])
        while lock is None:
            await asyncio.sleep(IN_FLIGHT_POLL_S)
            lock = self.in_flight.try_acquire(key)
        try:
            self.cache.refresh()
            yield
        finally:
            lock.release()

    async def _send(
        self, client: openai.AsyncOpenAI, request: GenerationRequest, prompt: Prompt, key: str, extra: dict
    ) -> GenerationResult:
        """Send one prompt with retries; cache a success (see the module docstring)."""
        started = time.perf_counter()
        attempts = 0
        attempt_errors: list[str] = []  # the kind of every failed attempt, for the report
        extra["attempt_errors"] = attempt_errors
        try:
            async for attempt in retrying(
                self.config.max_retries, self._backoff, retry_logger(log, f"{request.key}:")
            ):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    try:
                        answer, usage, top_logprobs = await self._attempt(client, prompt)
                    except RequestFailure as failure:
                        attempt_errors.append(failure.kind)
                        raise
        except RequestFailure as failure:
            # a dead server's cause was logged once where it was found; not once per request
            log.log(logging.DEBUG if failure.kind == "server_dead" else logging.WARNING,
                    "%s: failed after %d attempt(s): %s", request.key, attempts, failure)
            return GenerationResult(
                key=request.key, answer=None, error_kind=failure.kind, error_message=failure.message,
                latency_s=time.perf_counter() - started, attempts=attempts, extra=extra,
            )
        latency = time.perf_counter() - started
        entry = CachedGeneration(answer, usage[0], usage[1], latency, attempts, top_logprobs)
        self.cache.put(key, entry)
        if top_logprobs is not None:
            extra["top_logprobs"] = top_logprobs
        return GenerationResult(
            key=request.key, answer=answer, prompt_tokens=usage[0], completion_tokens=usage[1],
            latency_s=latency, attempts=attempts, extra=extra,
        )

    async def _attempt(
        self, client: openai.AsyncOpenAI, prompt: Prompt
    ) -> tuple[str, tuple[int, int], dict[str, float] | None]:
        """One request: the answer, its (prompt, completion) tokens and, when asked (``top_logprobs``),
        the first answer token's alternatives {token: log-prob} (None when not asked or not given).
        Every failure leaves as a :class:`RequestFailure`."""
        try:
            await self._ensure_endpoint()
            async with asyncio.timeout(self.config.timeout_s):
                completion = await client.chat.completions.create(
                    model=self.config.model, messages=prompt.messages, timeout=self.config.timeout_s,
                    **self._params,
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified into retryable / final failures
            raise classify(exc, self.redactor) from None
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list):
            raise RequestFailure("malformed_response", f"not a chat completion: {type(completion).__name__}", True)
        if not choices or not (choices[0].message and (choices[0].message.content or "").strip()):
            raise RequestFailure("empty_response", "the response has no choices or an empty message", True)
        content = choices[0].message.content
        cap = reply_cap(self.config.max_tokens)
        if len(content) > cap:
            raise RequestFailure("malformed_response", f"a reply of {len(content)} characters, over the cap of {cap} "
                                 f"({CHARS_PER_TOKEN} characters per token of max_tokens {self.config.max_tokens})",
                                 False)
        usage = completion.usage
        tokens = (usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage else (0, 0)
        alternatives = first_token_logprobs(choices[0])
        if alternatives is not None:
            alternatives = {self.redactor.text(token): logprob for token, logprob in alternatives.items()}
        return self.redactor.text(choices[0].message.content.strip()), tokens, alternatives

    async def _ensure_endpoint(self) -> None:
        """Hook run before every attempt (the local generator restarts a dead server here)."""


#: A reply longer than this many characters per token of ``max_tokens`` (plus 1,000) is refused as it
#: arrives (never cached): no tokenizer writes tokens that long, a server ignoring ``max_tokens`` does.
CHARS_PER_TOKEN = 64
#: The most log-prob alternatives and the longest token accepted (OpenAI gives at most 20).
MAX_ALTERNATIVES, MAX_TOKEN_CHARS = 100, 256


def reply_cap(max_tokens: int) -> int:
    """The longest reply accepted for ``max_tokens`` (:data:`CHARS_PER_TOKEN`)."""
    return CHARS_PER_TOKEN * max_tokens + 1000


def first_token_logprobs(choice) -> dict[str, float] | None:
    """{token: log-prob} of the first answer token's most likely alternatives, as an OpenAI-style
    ``logprobs.content[0].top_logprobs`` gives them; None when the answer carries none. Validated as
    they arrive (:func:`valid_logprobs`), so nothing invalid is cached."""
    content = _field(_field(choice, "logprobs"), "content")
    if not content:
        return None
    if not isinstance(content, list):
        raise RequestFailure("malformed_response", "logprobs.content is not a list", False)
    alternatives = _field(content[0], "top_logprobs") or []
    if not isinstance(alternatives, list):
        raise RequestFailure("malformed_response", "top_logprobs is not a list", False)
    return valid_logprobs([(_field(item, "token"), _field(item, "logprob")) for item in alternatives])


def _field(value, name: str):
    """``value.name``, or ``value[name]`` where the client left a mapping it could not type (a value
    out of its model's range, as an integer of 400 digits for a float)."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def valid_logprobs(pairs) -> dict[str, float] | None:
    """``{token: log-prob}`` from (token, log-prob) pairs, each token a string and each log-prob a
    number in (-inf, 0] (a probability's logarithm); a non-retryable ``malformed_response``
    :class:`RequestFailure` naming the first that is not (NaN, Infinity, 1000, ``"high"``, an integer
    of 400 digits). None for no pairs."""
    found: dict[str, float] = {}
    if len(pairs) > MAX_ALTERNATIVES:
        raise RequestFailure("malformed_response", f"{len(pairs)} top_logprobs alternatives, over the cap of "
                             f"{MAX_ALTERNATIVES}", False)
    for token, logprob in pairs:
        if isinstance(token, str) and len(token) > MAX_TOKEN_CHARS:
            raise RequestFailure("malformed_response", f"a top_logprobs token of {len(token)} characters, over the "
                                 f"cap of {MAX_TOKEN_CHARS}", False)
        value = None
        if isinstance(logprob, (int, float)) and not isinstance(logprob, bool):
            try:
                value = float(logprob)
            except OverflowError:
                value = None
        if not isinstance(token, str) or value is None or not (-math.inf < value <= 0.0):
            shown = repr(logprob) if not isinstance(logprob, int) or abs(logprob) < 10**20 else "an integer of " \
                f"{len(str(abs(logprob)))} digits"
            raise RequestFailure("malformed_response", f"a top_logprobs log-prob is not a number in (-inf, 0]: "
                                 f"{shown[:40]}", False)
        found[token] = value
    return found or None


def api_key_for(config: object, environ: Mapping[str, str] | None = None) -> str | None:
    """The API key of an ``openai`` generator config (None for other generators), see :func:`endpoint_api_key`."""
    if not isinstance(config, OpenAIGeneratorConfig):
        return None
    return endpoint_api_key(config.api_key_env, config.base_url, "generation.generator.api_key_env", environ)


@GENERATORS.register("openai")
class OpenAIGenerator(ChatGenerator):
    """Any OpenAI-compatible endpoint named by ``base_url``."""

    @classmethod
    def from_config(cls, config: OpenAIGeneratorConfig, cache_dir: Path, **injected) -> "OpenAIGenerator":
        return cls(config, cache_dir, base_url=config.base_url, endpoint_id=config.base_url,
                   api_key=api_key_for(config), api_key_env=config.api_key_env, **injected)
