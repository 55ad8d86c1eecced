"""Checking an OpenAI-compatible endpoint before the first question is sent.

Two checks, in order; the first that fails raises a :class:`rag.errors.BenchError` (one line, exit
code 2 from the CLI) and no chat request is sent (a remote endpoint without its key was already
refused when the generator was built, :func:`rag.generation.llm.endpoint_api_key`):

1. ``GET <base_url>/models`` answers with HTTP 200 within the deadline (401/403: the key is refused);
2. when that answer lists models (OpenAI's ``{"data": [{"id": ...}, ...]}``), the configured model
   is among them.
"""

from __future__ import annotations

import httpx

from rag.errors import BenchError, ConfigError

KEY = "generation.generator"
MAX_LISTED = 10


def served_models(payload: object) -> list[str] | None:
    """The model ids of a ``/models`` answer; None when it lists none (or not in OpenAI's shape)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    ids = [item["id"] for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)]
    return ids or None


def preflight(base_url: str, model: str, api_key: str | None, api_key_env: str | None, timeout_s: float) -> None:
    """Raise unless the endpoint is usable (see the module docstring). ``api_key_env`` names the key's
    variable in the message of a refused key (None: an endpoint that needs no key)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = f"{base_url.rstrip('/')}/models"
    try:
        response = httpx.get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise BenchError(f"{KEY}.base_url: {url} does not answer ({type(exc).__name__}: {exc or 'no response'}); "
                         "expected a running OpenAI-compatible server") from None
    if response.status_code in (401, 403):
        raise ConfigError(f"{KEY}.api_key_env", f"{url} refused the key in {api_key_env} (HTTP {response.status_code})")
    if response.status_code != 200:
        raise BenchError(f"{KEY}.base_url: {url} answered HTTP {response.status_code}; expected 200 and a model list")
    try:
        listed = served_models(response.json())
    except ValueError:
        listed = None
    if listed is not None and model not in listed:
        shown = ", ".join(listed[:MAX_LISTED]) + (f", ... ({len(listed)} in all)" if len(listed) > MAX_LISTED else "")
        raise ConfigError(f"{KEY}.model", f"{model!r} is not served by {base_url}; expected one of: {shown}")
