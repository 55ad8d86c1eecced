"""Checking an endpoint before the first request of a run is sent.

A remote endpoint without its key was already refused when its client was built
(:func:`rag.endpoints.keys.endpoint_api_key`). Then one probe request must answer within the deadline;
the first check that fails raises a :class:`rag.errors.BenchError` (one line, exit code 2 from the
CLI, naming the config key at fault under ``key``) and no real request is sent:

- the probe answers at all (else: ``<key>.base_url`` does not answer);
- not HTTP 401/403 (else: ``<key>.api_key_env``, the key is refused);
- HTTP 200 (else: ``<key>.base_url`` answered another status; for a ``/rerank`` probe a 4xx often
  means the model is not served, so the server's message is shown, redacted).

Chat and embeddings endpoints are probed with ``GET <base_url>/models``; when that answer lists
models (OpenAI's ``{"data": [{"id": ...}, ...]}``) the configured model must be among them. A rerank
endpoint (TEI, vLLM, Infinity, llama.cpp, Jina, Cohere: not all serve ``/models``) is probed with one
``/rerank`` request of one document (:mod:`rag.rerankers.endpoint`).
"""

from __future__ import annotations

import httpx

from rag.endpoints.clients import auth_headers
from rag.errors import BenchError, ConfigError
from rag.secrets import Redactor

GENERATOR_KEY = "generation.generator"
MAX_LISTED = 10
MAX_SHOWN_CHARS = 200


def served_models(payload: object) -> list[str] | None:
    """The model ids of a ``/models`` answer; None when it lists none (or not in OpenAI's shape)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    ids = [item["id"] for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)]
    return ids or None


def probe(request: httpx.Request, api_key_env: str | None, timeout_s: float, key: str,
          redactor: Redactor | None = None) -> httpx.Response:
    """Send one probe request; its 200 response, or the error the module docstring names.
    ``redactor`` scrubs the server's message shown for a status other than 200 (None: not shown)."""
    url = str(request.url)
    try:
        with httpx.Client(timeout=timeout_s) as client:
            response = client.send(request)
    except httpx.HTTPError as exc:
        raise BenchError(f"{key}.base_url: {url} does not answer ({type(exc).__name__}: {exc or 'no response'}); "
                         "expected a running server") from None
    if response.status_code in (401, 403):
        raise ConfigError(f"{key}.api_key_env", f"{url} refused the key in {api_key_env} (HTTP {response.status_code})")
    if response.status_code != 200:
        said = f" ({redactor.excerpt(response.text, MAX_SHOWN_CHARS)})" if redactor is not None and response.text else ""
        raise BenchError(f"{key}.base_url: {url} answered HTTP {response.status_code}{said}; expected 200")
    return response


def preflight(base_url: str, model: str, api_key: str | None, api_key_env: str | None, timeout_s: float,
              key: str = GENERATOR_KEY) -> None:
    """Raise unless the OpenAI-compatible endpoint is usable (see the module docstring). ``api_key_env``
    names the key's variable in the message of a refused key (None: an endpoint that needs no key)."""
    url = f"{base_url.rstrip('/')}/models"
    response = probe(httpx.Request("GET", url, headers=auth_headers(api_key)), api_key_env, timeout_s, key)
    try:
        listed = served_models(response.json())
    except ValueError:
        listed = None
    if listed is not None and model not in listed:
        shown = ", ".join(listed[:MAX_LISTED]) + (f", ... ({len(listed)} in all)" if len(listed) > MAX_LISTED else "")
        raise ConfigError(f"{key}.model", f"{model!r} is not served by {base_url}; expected one of: {shown}")
