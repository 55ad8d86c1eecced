"""Canonical English Wikipedia URLs from article titles, and back.

The canonical form is MediaWiki's (``wfUrlencode``): spaces become underscores, the title is UTF-8
percent-encoded, and the characters ``; @ $ ! * ( ) , / ~ :`` stay literal. So ``Newton's laws of
motion`` -> ``https://en.wikipedia.org/wiki/Newton%27s_laws_of_motion``, ``Cell (biology)`` ->
``.../Cell_(biology)``, ``René Descartes`` -> ``.../Ren%C3%A9_Descartes``, ``AC/DC`` -> ``.../AC/DC``,
``Who's Afraid of Virginia Woolf?`` -> ``.../Who%27s_Afraid_of_Virginia_Woolf%3F``.
"""

from __future__ import annotations

from urllib.parse import quote, unquote, urlsplit

WIKI_BASE = "https://en.wikipedia.org/wiki/"
_MEDIAWIKI_SAFE = ";@$!*(),/~:"


def page_name(title: str) -> str:
    """The page name as written in URLs: surrounding white space dropped, spaces -> underscores."""
    return "_".join(title.strip().split(" "))


def wiki_url(title: str, base: str = WIKI_BASE) -> str:
    """``https://en.wikipedia.org/wiki/<Title_with_underscores>``, percent-encoded like MediaWiki."""
    if not title.strip():
        raise ValueError("a Wikipedia title must not be empty")
    return base + quote(page_name(title), safe=_MEDIAWIKI_SAFE)


def title_from_wiki_url(url: str) -> str:
    """The article title of a ``/wiki/<page>`` URL (percent-decoded, underscores -> spaces)."""
    path = urlsplit(url).path
    marker = "/wiki/"
    if marker not in path:
        raise ValueError(f"not a Wikipedia article URL (no /wiki/ path): {url!r}")
    title = unquote(path.split(marker, 1)[1]).replace("_", " ").strip()
    if not title:
        raise ValueError(f"no article title in URL {url!r}")
    return title
