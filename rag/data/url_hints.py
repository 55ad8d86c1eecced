"""The hint of an unknown gold URL: the nearest corpus URL, and where a folder's URLs come from.

A gold URL one folder level off (``library/abc.html`` for the corpus's ``python/library/abc.html``, or
the other way round) is matched by its trailing path parts first (through an index by last part, built
once per URL set); otherwise the closest by :func:`difflib.get_close_matches`, over at most
:data:`MAX_FUZZY` URLs, to bound the time each bad record of a skipped set takes.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

MAX_FUZZY = 5_000
_index: tuple[Collection[str], int, dict[str, list[str]]] | None = None  # the last URL set and its index


def _parts(url: str) -> list[str]:
    return [part for part in url.split("/") if part]


def _common_tail(a: list[str], b: list[str]) -> int:
    count = 0
    while count < min(len(a), len(b)) and a[-1 - count] == b[-1 - count]:
        count += 1
    return count


def _by_last_part(known_urls: Collection[str]) -> dict[str, list[str]]:
    global _index
    if _index is None or _index[0] is not known_urls or _index[1] != len(known_urls):
        index: dict[str, list[str]] = {}
        for known in known_urls:
            if parts := _parts(known):
                index.setdefault(parts[-1], []).append(known)
        _index = (known_urls, len(known_urls), index)
    return _index[2]


def nearest_url(url: str, known_urls: Collection[str]) -> str | None:
    """The corpus URL most like ``url``: the longest shared run of trailing path parts (ties by
    similarity, then by name), else the closest by similarity; ``None`` when nothing is close."""
    parts = _parts(url)
    if parts:
        candidates = _by_last_part(known_urls).get(parts[-1], [])
        scored = [(tail, known) for known in candidates if (tail := _common_tail(parts, _parts(known)))]
        if scored:
            best = max(tail for tail, _ in scored)
            tied = sorted(known for tail, known in scored if tail == best)
            return max(tied, key=lambda known: difflib.SequenceMatcher(None, url, known).ratio())
    if len(known_urls) > MAX_FUZZY:
        return None
    close = difflib.get_close_matches(url, sorted(known_urls), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_url_message(qid: str, url: str, known_urls: Collection[str]) -> str:
    """The one line for a question whose gold URL ``url`` names no corpus document."""
    message = f"question {qid!r}: gold URL {url!r} is not in the corpus"
    nearest = nearest_url(url, known_urls)
    if nearest is not None:
        message += f"; the nearest corpus URL is {nearest!r}"
    if "://" not in url:
        message += " (a folder's document URLs are their paths relative to the --docs folder, dataset.path)"
    return message
