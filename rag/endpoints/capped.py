"""One POST to an endpoint whose JSON answer is read only up to a byte cap: a larger answer stops
reading with one line (``response_too_large``, not retried) instead of filling memory. Every failure
leaves as a :class:`rag.endpoints.retry.RequestFailure` (classified for the retry loop), the server's
words redacted; the endpoint rerank (:mod:`rag.rerankers.endpoint`) and the ``http`` search method
(:mod:`rag.retrievers.http_search`) send their requests through it."""

from __future__ import annotations

import asyncio
import math

import httpx

from rag.endpoints.retry import MAX_MESSAGE_CHARS, RequestFailure, classify
from rag.secrets import Redactor


def finite_float(value: int | float) -> bool:
    """True when ``value`` (a number read from an answer) is a finite float (a JSON integer of 400
    digits is not: it overflows a float)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


async def post_json(client: httpx.AsyncClient, url: str, body: object, timeout_s: float, cap: int, too_large: str,
                    redactor: Redactor) -> object:
    """The JSON answer of ``POST url`` with ``body``, under a hard deadline of ``timeout_s``; an answer
    over ``cap`` bytes fails with ``too_large`` as its message, an HTTP status other than 200 with the
    server's words (redacted), a body that is no JSON as ``malformed_response``."""
    try:
        async with asyncio.timeout(timeout_s):
            async with client.stream("POST", url, json=body) as streamed:
                received = bytearray()
                async for piece in streamed.aiter_bytes():
                    received += piece
                    if len(received) > cap:
                        raise RequestFailure("response_too_large", too_large, False)
            headers = [(name, value) for name, value in streamed.headers.items()  # the body is decoded already
                       if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
            response = httpx.Response(streamed.status_code, headers=headers, content=bytes(received),
                                      request=streamed.request)
        if response.status_code != 200:
            said = redactor.excerpt(" ".join(redactor.text(response.text).split()), MAX_MESSAGE_CHARS)
            raise httpx.HTTPStatusError(f"HTTP {response.status_code}: {said}", request=response.request,
                                        response=response)
        return response.json()
    except (asyncio.CancelledError, RequestFailure):
        raise
    except Exception as exc:  # noqa: BLE001 - classified into retryable / final failures
        raise classify(exc, redactor) from None
