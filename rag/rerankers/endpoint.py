"""The ``endpoint`` reranker: the ``/rerank`` API that vLLM, Infinity, llama.cpp's server and the
hosted Jina and Cohere APIs share.

One request per question: ``POST {base_url}/rerank`` with::

    {"model": <model>, "query": <question>, "documents": [<chunk text>, ...], "top_n": <number of documents>}

answered by ``{"results": [{"index": i, "relevance_score": s}, ...], "usage": {"total_tokens": t}?}``
(any order; every index 0..n-1 exactly once, or the answer is malformed). Hugging Face TEI's own
``/rerank`` takes ``texts`` and answers ``[{"index", "score"}]``: serve TEI models through one of
the servers above.

The request rules are every endpoint's (:mod:`rag.endpoints`): the key from ``api_key_env`` (a remote
endpoint without one is refused at config load), ``concurrency`` questions at a time, a hard deadline
``timeout_s`` per attempt, retryable failures retried ``max_retries`` times with ``Retry-After`` or
seeded backoff, error messages redacted, and one probe ``/rerank`` request (one document) before the
first real one. A question still failing after its retries stops the run with one line (rankings
already made are cached). Cost per question: ``llm_calls`` = the attempts sent for it (1 when none
failed), ``llm_tokens`` = the server's ``usage.total_tokens`` (0 where it reports none).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Literal

import httpx
from pydantic import Field

from rag.endpoints.clients import auth_headers, http_client
from rag.endpoints.keys import endpoint_api_key
from rag.endpoints.preflight import probe
from rag.endpoints.pool import all_or_nothing
from rag.endpoints.capped import finite_float, post_json
from rag.endpoints.retry import Backoff, RequestFailure, retry_logger, retrying
from rag.endpoints.settings import EndpointSettings
from rag.errors import BenchError
from rag.rerankers.base import RERANKERS, Candidate, Reranker, RerankerParams, Scored
from rag.secrets import Redactor

log = logging.getLogger(__name__)
BACKOFF_SEED = 0
PREFLIGHT_TIMEOUT_S = 10.0


class EndpointRerankerParams(RerankerParams, EndpointSettings):
    """A ``/rerank`` endpoint serving ``model`` (``base_url`` without the ``/rerank`` part, e.g.
    ``http://localhost:8000/v1``); the request rules of :class:`EndpointSettings`."""

    type: Literal["endpoint"] = "endpoint"
    model: str = Field(min_length=1)
    base_url: str

    def calls_per_query(self, depth: int) -> int:
        return 1


MAX_ITEM_CHARS = 80


def parse_results(payload: object, n_documents: int, redactor: Redactor) -> tuple[list[float], int]:
    """The relevance score of each document, in the documents' order, and the answer's token count;
    a :class:`RequestFailure` (``malformed_response``) for any other shape, showing the bad item
    redacted by ``redactor`` before it is cut (the server may echo the key in it)."""
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        raise RequestFailure("malformed_response", "the answer has no 'results' list", True)
    scores: dict[int, float] = {}
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if (not isinstance(index, int) or isinstance(index, bool) or not isinstance(score, (int, float))
                or isinstance(score, bool) or not finite_float(score)):
            shown = redactor.excerpt(repr(item), MAX_ITEM_CHARS)
            raise RequestFailure("malformed_response", f"a result is not {{index, relevance_score}}: {shown}", True)
        scores[index] = float(score)
    if sorted(scores) != list(range(n_documents)) or len(results) != n_documents:
        raise RequestFailure("malformed_response",
                             f"expected one result for each of the {n_documents} documents, got {len(results)}", True)
    usage = payload.get("usage")
    tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
    return [scores[i] for i in range(n_documents)], tokens if isinstance(tokens, int) and tokens >= 0 else 0


@RERANKERS.register("endpoint")
class EndpointReranker(Reranker):
    """Scores through ``POST {base_url}/rerank`` (module docstring). Constructing one reads the key
    and sends nothing; the probe goes before the first ``score``'s requests."""

    Params = EndpointRerankerParams
    params: EndpointRerankerParams

    def __init__(self, params: EndpointRerankerParams, services=None, method: str = "rerank"):
        super().__init__(params, services, method)
        self._api_key = endpoint_api_key(params.api_key_env, params.base_url, f"{self.key}.api_key_env")
        self._redactor = Redactor([self._api_key] if self._api_key else [])
        self._backoff = Backoff(params.backoff, BACKOFF_SEED)
        self.url = f"{params.base_url.rstrip('/')}/rerank"
        self._checked = False

    def body(self, question: str, documents: list[str]) -> dict:
        return {"model": self.params.model, "query": question, "documents": documents, "top_n": len(documents)}

    def preflight(self) -> None:
        """One ``/rerank`` request of one document: it must answer 200 in the documented shape."""
        request = httpx.Request("POST", self.url, json=self.body("preflight", ["preflight"]),
                                headers=auth_headers(self._api_key))
        response = probe(request, self.params.api_key_env, min(self.params.timeout_s, PREFLIGHT_TIMEOUT_S), self.key,
                         self._redactor)
        try:
            parse_results(response.json(), 1, self._redactor)
        except (ValueError, RequestFailure) as exc:
            raise BenchError(f"{self.key}.base_url: {self.url} did not answer in the /rerank shape "
                             f"({self._redactor.text(str(exc))}); expected {{results: [{{index, relevance_score}}]}}") from None
        self._checked = True

    def score(self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]]) -> list[Scored]:
        if not questions:
            return []
        if not self._checked:
            self.preflight()
        return asyncio.run(self._score_all(list(questions), [[c.text for c in found] for found in candidates]))

    async def _score_all(self, questions: list[str], documents: list[list[str]]) -> list[Scored]:
        async with http_client(self._api_key, self.params.timeout_s) as client:
            return await all_or_nothing(len(questions), self.params.concurrency,
                                        lambda i: self._request(client, questions[i], documents[i]))

    async def _request(self, client: httpx.AsyncClient, question: str, documents: list[str]) -> Scored:
        attempts = 0
        try:
            async for attempt in retrying(self.params.max_retries, self._backoff, retry_logger(log, "rerank request")):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    scores, tokens = await self._attempt(client, question, documents)
        except RequestFailure as failure:
            raise BenchError(f"{self.key}: {self.url} (model {self.params.model!r}): {failure} "
                             f"(gave up after {attempts} attempt(s))") from None
        return Scored(scores, llm_calls=attempts, llm_tokens=tokens)

    async def _attempt(self, client: httpx.AsyncClient, question: str, documents: list[str]) -> tuple[list[float], int]:
        """One request; every failure leaves as a :class:`RequestFailure`."""
        cap = body_cap(documents)
        payload = await post_json(client, self.url, self.body(question, documents), self.params.timeout_s, cap,
                                  f"the /rerank answer exceeds the cap of {cap:,} bytes for {len(documents)} documents "
                                  "(1 MiB + twice the documents' bytes)", self._redactor)
        return parse_results(payload, len(documents), self._redactor)


def body_cap(documents: Sequence[str]) -> int:
    """The largest ``/rerank`` answer read for ``documents``, in bytes: 1 MiB, plus twice the documents'
    UTF-8 bytes (Jina's answer repeats each document): a larger body stops reading with one line
    instead of filling memory (measured: docs/measurements.md#rerank-answer-cap)."""
    return 2**20 + 2 * sum(len(document.encode("utf-8")) for document in documents)
