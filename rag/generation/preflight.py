"""Checking an OpenAI-compatible endpoint before the first question is sent.

Three checks, in order; the first that fails raises a :class:`rag.errors.BenchError` (one line, exit
code 2 from the CLI) and no chat request is sent:

1. the key variable (``api_key_env``) is set when the endpoint is not on this machine (a loopback
   host: ``localhost``, ``127.0.0.0/8``, ``::1``) — checked before any connection;
2. ``GET <base_url>/models`` answers with HTTP 200 within the deadline;
3. when that answer lists models (OpenAI's ``{"data": [{"id": ...}, ...]}``), the configured model
   is among them.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import httpx

from rag.errors import BenchError, ConfigError

KEY = "generation.generator"
MAX_LISTED = 10


def is_loopback(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def served_models(payload: object) -> list[str] | None:
    """The model ids of a ``/models`` answer; None when it lists none (or not in OpenAI's shape)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    ids = [item["id"] for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)]
    return ids or None


def preflight(base_url: str, model: str, api_key: str | None, api_key_env: str | None, timeout_s: float) -> None:
    """Raise unless the endpoint is usable (see the module docstring). ``api_key_env`` None: an
    endpoint that needs no key (the managed local server)."""
    if api_key_env is not None and api_key is None and not is_loopback(base_url):
        raise ConfigError(f"{KEY}.api_key_env", f"{api_key_env} is not set, and {base_url} is not on this machine; "
                          "expected the variable to hold the endpoint's API key (any value for a keyless server)")
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
