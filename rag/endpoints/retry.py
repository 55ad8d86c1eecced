"""Classifying a failed request to an endpoint (chat completion, embeddings, rerank), and the backoff
before the next attempt: the one retry policy of every endpoint client.

Exceptions of the ``openai`` client and of ``httpx`` (the ``/rerank`` client) are classified alike.
Every failed attempt becomes a :class:`RequestFailure` with an ``error_kind`` that ends up in the
per-question failure record when retries are exhausted:

=====================  =========  ==============================================================
error_kind             retried    cause
=====================  =========  ==============================================================
``timeout``            yes        no complete response within ``timeout_s``
``connection``         yes        connection refused / reset / closed without a response
``rate_limit``         yes        HTTP 429 (``Retry-After`` / ``retry-after-ms`` honoured)
``server_error``       yes        HTTP 5xx, 408, 409
``malformed_response`` yes        a body that is not valid JSON / not the answer's expected shape
``empty_response``     yes        no choices, or an empty message (chat completions)
``auth_error``         no         HTTP 401 / 403
``client_error``       no         any other HTTP 4xx (bad model name, prompt too long, ...)
``unexpected_error``   no         anything else (the exception type is in the message)
``server_dead``        no         the managed local server died and is not restarted again; the
                                  request is not sent, the message is the one-line cause (signal,
                                  log lines) shared by every such request
=====================  =========  ==============================================================
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import openai
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from rag.endpoints.settings import BackoffSettings
from rag.secrets import Redactor

MAX_MESSAGE_CHARS = 500


@dataclass
class RequestFailure(Exception):
    kind: str
    message: str
    retryable: bool
    retry_after_s: float | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def parse_retry_after(headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (delta-seconds or an HTTP date,
    RFC 9110 section 10.2.3); None when absent or unreadable."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else max(0.0, email.utils.mktime_tz(parsed) - time.time())


def classify(exc: BaseException, redactor: Redactor) -> RequestFailure:
    """Map an exception raised by one attempt to a :class:`RequestFailure` (message redacted, then
    cut to :data:`MAX_MESSAGE_CHARS`)."""
    if isinstance(exc, RequestFailure):
        return exc
    detail = str(exc) or "no complete response within the deadline"
    message = redactor.excerpt(f"{type(exc).__name__}: {detail}", MAX_MESSAGE_CHARS)
    if isinstance(exc, (openai.APITimeoutError, TimeoutError, asyncio.TimeoutError, httpx.TimeoutException)):
        return RequestFailure("timeout", message, True)
    if isinstance(exc, (openai.APIConnectionError, httpx.TransportError)):
        return RequestFailure("connection", message, True)
    if isinstance(exc, (openai.APIStatusError, httpx.HTTPStatusError)):
        status = exc.response.status_code
        retry_after = parse_retry_after(exc.response.headers)
        if status == 429:
            return RequestFailure("rate_limit", message, True, retry_after)
        if status >= 500 or status in (408, 409):
            return RequestFailure("server_error", message, True, retry_after)
        if status in (401, 403):
            return RequestFailure("auth_error", message, False)
        return RequestFailure("client_error", message, False)
    if isinstance(exc, (openai.APIResponseValidationError, json.JSONDecodeError)):
        return RequestFailure("malformed_response", message, True)
    return RequestFailure("unexpected_error", message, False)


class Backoff:
    """Exponential backoff with jitter from a seeded RNG (see :class:`BackoffSettings`)."""

    def __init__(self, settings: BackoffSettings, seed: int | None):
        self.settings = settings
        self._rng = random.Random(seed)

    def delay(self, retry_number: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait before retry ``retry_number`` (1 = the first retry)."""
        s = self.settings
        if retry_after_s is not None:
            return min(retry_after_s, s.max_retry_after_s)
        base = min(s.max_s, s.initial_s * s.multiplier ** (retry_number - 1))
        return base * (1 - s.jitter * self._rng.random())


def retrying(
    max_retries: int, backoff: Backoff, before_sleep: Callable[[RetryCallState], None] | None = None
) -> AsyncRetrying:
    """tenacity's retry loop for one request (``async for attempt in retrying(...)``): an attempt that
    raises a retryable :class:`RequestFailure` is repeated, at most ``max_retries`` times, after the
    server's ``Retry-After`` when it sent one, else after ``backoff``'s delay; the last failure is
    re-raised."""

    def wait(state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        retry_after = failure.retry_after_s if isinstance(failure, RequestFailure) else None
        return backoff.delay(state.attempt_number, retry_after)

    return AsyncRetrying(
        stop=stop_after_attempt(max_retries + 1),
        retry=retry_if_exception(lambda exc: isinstance(exc, RequestFailure) and exc.retryable),
        wait=wait,
        before_sleep=before_sleep,
        reraise=True,
    )


def retry_logger(log: logging.Logger, what: str) -> Callable[[RetryCallState], None]:
    """A ``before_sleep`` for :func:`retrying` that logs each failed attempt of ``what`` at INFO."""

    def before_sleep(state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome else None
        log.info("%s attempt %d failed (%s); retrying in %.2f s", what, state.attempt_number, failure,
                 state.next_action.sleep if state.next_action else 0.0)

    return before_sleep
