"""``http``: the user's own search endpoint as a method (an Elasticsearch or OpenSearch query behind a
small service, a vendor's search API, a LangChain or LlamaIndex pipeline).

Config shape::

    {name: prod, type: http, params: {base_url: "http://localhost:9000/search", api_key_env: SEARCH_KEY}}

One request per question: ``POST <base_url>`` (the URL as written) with ``{"query": <question>, "k":
<results wanted>}``, answered by ``{"results": [{"id": <chunk id>, "score": <number>}, ...]}`` or with
``"url": <page>`` in place of ``"id"`` (a page as the tool names it; it stands for its first passage,
as in a run file: :mod:`rag.retrievers.run_file`). Results are ordered by the project's tie rule
(float32 score descending, then chunk id descending) and cut to ``k``; the endpoint need not sort them.

The request rules are every endpoint's (:mod:`rag.endpoints`): the key only from the variable
``api_key_env`` names (sent as ``Authorization: Bearer``; a remote endpoint without it is refused
before any work; redacted everywhere), a hard deadline ``timeout_s`` per attempt, retryable failures
(timeouts, dropped connections, 429 and 5xx) retried ``max_retries`` times after ``Retry-After`` or the
seeded backoff, an answer read only up to 1 MiB plus 2 KiB per result asked (:func:`answer_cap`), and
one probe request before the first question. A question whose request still fails, or whose answer is
not in the shape above (a result naming no chunk or page of this corpus, a score that is not a finite
number, a document twice), is a **failed stage**: no ranking for it, the reason in ``stage_error``, the
method's results on its set withheld (docs/evaluation.md, "Failed stages"), never another method's
ranking in its place; failed questions are not cached, so the next run asks them again.

Cost: the measured time per question. ``concurrency`` is 1 by default, so that time is the endpoint's
latency (with more, the run measures throughput: the batch's time over its questions).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

import httpx
from pydantic import Field

from rag.endpoints.capped import finite_float, post_json
from rag.endpoints.clients import auth_headers, http_client
from rag.endpoints.keys import endpoint_api_key
from rag.endpoints.preflight import probe
from rag.endpoints.retry import Backoff, RequestFailure, retry_logger, retrying
from rag.endpoints.settings import EndpointSettings
from rag.errors import BenchError
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, RetrieverParams
from rag.retrievers.ranking import ranking_from_pairs
from rag.retrievers.run_file import first_passages
from rag.secrets import Redactor
from rag.types import Chunk, Ranking

log = logging.getLogger(__name__)
BACKOFF_SEED = 0
PREFLIGHT_TIMEOUT_S = 10.0
MAX_ITEM_CHARS = 80


class HttpSearchParams(RetrieverParams, EndpointSettings):
    """``base_url``: the search endpoint's whole URL (POSTed to as written); the request rules of
    :class:`EndpointSettings`, one question at a time by default."""

    base_url: str
    concurrency: int = Field(1, gt=0, le=256)


def answer_cap(k: int) -> int:
    """The largest answer read for ``k`` results, in bytes: 1 MiB plus 2 KiB per result."""
    return 2**20 + 2048 * k


def parse_results(payload: object, chunk_ids: Mapping[str, str], pages: Mapping[str, str],
                  redactor: Redactor) -> list[tuple[str, float]]:
    """(chunk id, score) of each result of an answer; a :class:`RequestFailure` for any other shape
    (``malformed_response``, retried: a server may answer well next time) or for a result naming no chunk
    or page of this corpus or a chunk twice (``unknown_result``, not retried). ``chunk_ids`` maps each
    chunk id to itself, ``pages`` each page to its first passage."""
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        raise RequestFailure("malformed_response", "the answer has no 'results' list", True)
    pairs: dict[str, float] = {}
    for item in results:
        given = [field for field in ("id", "url") if isinstance(item, dict) and field in item]
        score = item.get("score") if isinstance(item, dict) else None
        if (len(given) != 1 or not isinstance(item[given[0]], str) or isinstance(score, bool)
                or not isinstance(score, (int, float)) or not finite_float(score)):
            shown = redactor.excerpt(repr(item), MAX_ITEM_CHARS)
            raise RequestFailure("malformed_response", f"a result is not {{id or url, score}}: {shown}", True)
        named = item[given[0]]
        chunk = (chunk_ids if given[0] == "id" else pages).get(named)
        if chunk is None:
            what = "chunk id" if given[0] == "id" else "page"
            raise RequestFailure("unknown_result", f"{redactor.excerpt(repr(named), MAX_ITEM_CHARS)} is no {what} of this "
                                 "corpus", False)
        if chunk in pairs:
            raise RequestFailure("unknown_result", f"the chunk {chunk!r} is given twice", False)
        pairs[chunk] = float(score)
    return list(pairs.items())


@RETRIEVERS.register("http")
class HttpSearchRetriever(Retriever):
    """Asks the user's search endpoint (module docstring)."""

    Params = HttpSearchParams
    params: HttpSearchParams

    def __init__(self, name: str, params: HttpSearchParams):
        super().__init__(name, params)
        self.key = f"retrievers.{name}.params"
        self._api_key = endpoint_api_key(params.api_key_env, params.base_url, f"{self.key}.api_key_env")
        self._redactor = Redactor([self._api_key] if self._api_key else [])
        self._backoff = Backoff(params.backoff, BACKOFF_SEED)
        self.chunk_ids: dict[str, str] = {}
        self.pages: dict[str, str] = {}
        self._checked = False

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        """Nothing is built: the endpoint holds its own index. Keeps which ids and pages are this corpus'."""
        self.chunk_ids = {chunk.chunk_id: chunk.chunk_id for chunk in chunks}
        self.pages = {url: chunk.chunk_id for url, chunk in first_passages(chunks).items()}

    def preflight(self) -> None:
        """One request (``{"query": "preflight", "k": 1}``): it must answer 200 with a results list."""
        request = httpx.Request("POST", self.params.base_url, json={"query": "preflight", "k": 1},
                                headers=auth_headers(self._api_key))
        response = probe(request, self.params.api_key_env, min(self.params.timeout_s, PREFLIGHT_TIMEOUT_S), self.key,
                         self._redactor)
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or not isinstance(payload.get("results"), list):
            raise BenchError(f"{self.key}.base_url: {self.params.base_url} did not answer in the search shape; "
                             "expected {\"results\": [{\"id\" or \"url\", \"score\"}]}")
        self._checked = True

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        if not queries:
            return []
        if not self._checked:
            self.preflight()
        return asyncio.run(self._search_all(list(queries), k))

    async def _search_all(self, queries: list[str], k: int) -> list[Ranking]:
        gate = asyncio.Semaphore(self.params.concurrency)
        async with http_client(self._api_key, self.params.timeout_s) as client:
            async def one(question: str) -> Ranking:
                async with gate:
                    return await self._request(client, question, k)

            return list(await asyncio.gather(*(one(question) for question in queries)))

    async def _request(self, client: httpx.AsyncClient, question: str, k: int) -> Ranking:
        attempts = 0
        try:
            async for attempt in retrying(self.params.max_retries, self._backoff, retry_logger(log, "search request")):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    payload = await post_json(client, self.params.base_url, {"query": question, "k": k},
                                              self.params.timeout_s, answer_cap(k),
                                              f"the search answer exceeds the cap of {answer_cap(k):,} bytes for k = {k} "
                                              "(1 MiB + 2 KiB per result)", self._redactor)
                    pairs = parse_results(payload, self.chunk_ids, self.pages, self._redactor)
        except RequestFailure as failure:
            return Ranking([], [], failed=self._redactor.text(f"http endpoint: {failure} (gave up after {attempts} "
                                                              "attempt(s))"))
        return ranking_from_pairs(pairs, k)
