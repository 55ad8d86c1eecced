"""The settings every model endpoint shares (generator, embedder, reranker): where it is, which
environment variable holds its key, and how requests to it are paced and retried.

The API key is never part of the configuration: ``api_key_env`` names the environment variable that
holds it, and a value that is not an upper-case variable name (``sk-...`` pasted there, say) is
refused without being echoed. ``base_url`` must be an http(s) URL with a host.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from rag.secrets import ENV_VAR_NAME
from rag.validation import SECRET_ERROR, ConfigModel

OPENAI_BASE_URL = "https://api.openai.com/v1"


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



class EndpointAddress(ConfigModel):
    """Where an endpoint is (``base_url``) and the variable holding its key (``api_key_env``;
    endpoints that need no key work with the variable unset, on this machine only:
    :func:`rag.endpoints.keys.endpoint_api_key`)."""

    base_url: str = OPENAI_BASE_URL
    api_key_env: str = "OPENAI_API_KEY"

    _http_url = field_validator("base_url")(http_url)
    _variable_name = field_validator("api_key_env")(key_variable_name)


class EndpointSettings(EndpointAddress):
    """An endpoint's address and its request rules: ``concurrency`` requests at a time, each under a
    hard deadline of ``timeout_s``, a retryable failure retried at most ``max_retries`` times after
    ``backoff`` (:mod:`rag.endpoints.retry`)."""

    concurrency: int = Field(4, gt=0, le=256)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0)
    backoff: BackoffSettings = BackoffSettings()
