"""Live Wikipedia corpus builder (runs only when asked: it needs the network).

It fetches a list of article titles/URLs plus ``n_random`` random articles through the MediaWiki
Action API with httpx, one page per request (``action=query&prop=extracts|revisions|info
&explaintext=1&redirects=1&rvprop=ids&inprop=url``: full plain-text extracts are only returned one
page at a time), and writes our corpus JSONL format with each page's revision id.

Reproducibility: every API response is cached on disk (``<cache>/pages/<sha256 of title>.json``) and
the random titles are recorded in ``<cache>/random_titles.json`` the first time (the API's random
list takes no seed), so a rebuild from the same cache makes no request and writes identical bytes.
Politeness: a descriptive User-Agent, at most one request per ``min_interval_s``, retries with
exponential back-off (tenacity) on HTTP 429/5xx and connection errors.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential
from rag.progress import progress as progress_bar

from rag.data.records import document_record, write_jsonl
from rag.data.urls import page_name, title_from_wiki_url, wiki_url
from rag.errors import BenchError
from rag.io_utils import atomic_write_json, sha256_text
from rag.types import Document
from rag.validation import ConfigModel

DEFAULT_API_URL = "https://en.wikipedia.org/w/api.php"


class LiveWikiConfig(ConfigModel):
    api_url: str = DEFAULT_API_URL
    user_agent: str = "hybrid-rag-bench/0.1 (retrieval benchmark corpus builder; python-httpx)"
    min_interval_s: float = Field(1.0, ge=0, description="at least this long between two requests")
    max_attempts: int = Field(5, ge=1)
    backoff_s: float = Field(2.0, ge=0, description="first retry wait; doubles each attempt (max 60 s)")
    timeout_s: float = Field(30.0, gt=0)


class _RetryableStatus(Exception):
    """HTTP 429 or 5xx: worth retrying."""


@dataclass
class LiveWikiResult:
    documents: list[Document]
    missing: list[str] = field(default_factory=list)
    requests_made: int = 0


class LiveWikiBuilder:
    """Fetches and caches pages; ``client`` is injectable (tests point ``api_url`` at 127.0.0.1)."""

    def __init__(self, cache_dir: str | Path, config: LiveWikiConfig | None = None, client: httpx.Client | None = None):
        self.cache_dir = Path(cache_dir)
        self.config = config or LiveWikiConfig()
        self._client = client
        self._last_request = float("-inf")
        self.requests_made = 0

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(headers={"User-Agent": self.config.user_agent}, timeout=self.config.timeout_s)
        return self._client

    def _get_once(self, params: dict[str, Any]) -> dict[str, Any]:
        wait = self._last_request + self.config.min_interval_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_request = time.monotonic()
        self.requests_made += 1
        response = self._http().get(self.config.api_url, params={"format": "json", "formatversion": "2", **params})
        if response.status_code == 429 or response.status_code >= 500:
            raise _RetryableStatus(f"HTTP {response.status_code} from {self.config.api_url}")
        response.raise_for_status()
        payload = response.json()
        if "error" in payload:
            raise BenchError(f"MediaWiki API error from {self.config.api_url}: {payload['error']}")
        return payload

    def api_get(self, params: dict[str, Any]) -> dict[str, Any]:
        """One API call, rate-limited, retried on 429/5xx and transport errors."""
        retrying = Retrying(
            stop=stop_after_attempt(self.config.max_attempts),
            wait=wait_exponential(multiplier=self.config.backoff_s, max=60),
            retry=retry_if_exception_type((_RetryableStatus, httpx.TransportError)),
            reraise=True,
        )
        return retrying(self._get_once, params)

    def random_titles(self, count: int) -> list[str]:
        """``count`` random article titles, recorded in the cache so a rebuild reuses them."""
        record = self.cache_dir / "random_titles.json"
        titles: list[str] = json.loads(record.read_text("utf-8")) if record.is_file() else []
        while len(titles) < count:
            payload = self.api_get({"action": "query", "list": "random", "rnnamespace": 0, "rnlimit": min(500, count - len(titles))})
            titles += [item["title"] for item in payload["query"]["random"] if item["title"] not in titles]
            atomic_write_json(record, titles)
        return titles[:count]

    def page_response(self, title: str) -> dict[str, Any]:
        """The API response for one title, from the disk cache or fetched (and then cached)."""
        path = self.cache_dir / "pages" / f"{sha256_text(title)}.json"
        if path.is_file():
            return json.loads(path.read_text("utf-8"))["response"]
        response = self.api_get({
            "action": "query", "prop": "extracts|revisions|info", "explaintext": 1, "redirects": 1,
            "rvprop": "ids", "inprop": "url", "titles": title,
        })
        atomic_write_json(path, {"title": title, "response": response})
        return response

    def build(self, titles: Sequence[str], progress: bool = True) -> LiveWikiResult:
        """Documents for ``titles`` (in order; a page reached twice through redirects is kept once)."""
        result = LiveWikiResult(documents=[])
        seen: set[str] = set()
        for title in progress_bar(titles, desc="wikipedia pages", unit="page", enabled=progress):
            document = document_from_response(title, self.page_response(title))
            if document is None:
                result.missing.append(title)
            elif document.doc_id not in seen:
                seen.add(document.doc_id)
                result.documents.append(document)
        result.requests_made = self.requests_made
        return result


def document_from_response(requested_title: str, response: dict[str, Any]) -> Document | None:
    """A document from a ``formatversion=2`` query response; None for a missing or empty page."""
    pages = response.get("query", {}).get("pages", [])
    page = pages[0] if pages else {}
    text = (page.get("extract") or "").strip()
    if page.get("missing") or page.get("invalid") or not text:
        return None
    revisions = page.get("revisions") or [{}]
    return Document(
        doc_id=page_name(page["title"]), url=wiki_url(page["title"]), title=page["title"], text=text,
        metadata={"revision_id": revisions[0].get("revid"), "page_id": page.get("pageid"), "requested_title": requested_title},
    )


def titles_from_urls(urls: Sequence[str]) -> list[str]:
    return [title_from_wiki_url(url) for url in urls]


def build_live_corpus(
    titles: Sequence[str], n_random: int, cache_dir: str | Path, out_path: str | Path,
    config: LiveWikiConfig | None = None, client: httpx.Client | None = None, progress: bool = True,
) -> LiveWikiResult:
    """Fetch ``titles`` plus ``n_random`` random pages; write the corpus JSONL and a manifest beside it
    (``<out>.manifest.json``: api url, requested titles, random titles, revision ids, missing pages)."""
    builder = LiveWikiBuilder(cache_dir, config, client)
    random_titles = builder.random_titles(n_random) if n_random else []
    result = builder.build([*titles, *random_titles], progress=progress)
    out_path = Path(out_path)
    write_jsonl(out_path, (document_record(d) for d in result.documents))
    atomic_write_json(out_path.with_name(out_path.name + ".manifest.json"), {
        "api_url": builder.config.api_url, "titles": list(titles), "random_titles": random_titles,
        "revisions": {d.url: d.metadata["revision_id"] for d in result.documents}, "missing": result.missing,
    })
    return result
