"""The clients that talk to endpoints: the ``openai`` client for chat completions and embeddings, and
an ``httpx`` client for APIs the ``openai`` client does not have (``/rerank``). Neither retries on
its own: retries are :mod:`rag.endpoints.retry`'s."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import openai

NO_KEY_PLACEHOLDER = "no-key"  # the openai client insists on some key; keyless servers ignore it

ClientFactory = Callable[[str, str], openai.AsyncOpenAI]


def default_client_factory(base_url: str, api_key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)


def auth_headers(api_key: str | None) -> dict[str, str]:
    """``Authorization: Bearer <key>`` when there is a key (the header every endpoint here reads)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def http_client(api_key: str | None, timeout_s: float) -> httpx.AsyncClient:
    """An ``httpx`` client sending the key (if any) with every request, under ``timeout_s``."""
    return httpx.AsyncClient(headers=auth_headers(api_key), timeout=timeout_s)
