"""A short section joins the section before it (its parent or previous sibling), never the next one,
and a chunk's section label names only the headings all its text lies under: checked on GLib's
gtk-doc reference page (tests/fixtures/thirdparty/README.md) against the page's own markup, and on a
hand-made page whose chunks are worked out by hand."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from rag.chunking import ChunkingConfig, chunk_documents
from rag.data.convert import convert
from rag.models import load_tokenizer
from rag.types import Document

GLIB_PAGE = Path(__file__).parents[1] / "fixtures" / "thirdparty" / "gtkdoc-glib" / "glib-String-Utility-Functions.html.gz"


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def words(text: str) -> str:
    """The words of ``text``, one space apart: markup (Markdown's ``*`` and backticks, HTML's line
    breaks) left out."""
    return " ".join(re.findall(r"\w+", text))


def returns_by_function(html: bytes) -> dict[str, str]:
    """From gtk-doc's markup: each function's title (the ``h3`` of its ``div.refsect2``) -> the words of
    its "Returns" paragraphs (the ``div.refsect3`` under it whose ``h4`` is "Returns")."""
    soup = BeautifulSoup(html, "html.parser")
    found = {}
    for function in soup.select("div.refsect2"):
        for part in function.select("div.refsect3"):
            if part.h4 is not None and part.h4.get_text(strip=True) == "Returns":
                found[" ".join(function.h3.get_text().split())] = words(" ".join(p.get_text() for p in part.find_all("p")))
    return found


def test_gtk_doc_returns_stay_in_their_own_functions_chunks(tokenizer):
    html = gzip.decompress(GLIB_PAGE.read_bytes())
    returns = returns_by_function(html)
    converted = convert(html, ".html")
    document = Document("strings", "glib-String-Utility-Functions.html", converted.title, converted.text)
    # the main job's sizes: most of the page's "Returns" sections are shorter than min_section_tokens
    chunks = chunk_documents([document], ChunkingConfig(max_tokens=254, overlap_tokens=50), tokenizer=tokenizer,
                             progress=False)
    whole = words(document.text)
    unique = {name: text for name, text in returns.items() if whole.count(text) == 1}
    assert len(unique) >= 40 and "g_strndup ()" in unique  # a page of many functions, the one among them
    for name, text in unique.items():
        holding = [chunk for chunk in chunks if text in words(chunk.text)]
        assert holding, name  # the paragraph is in some chunk, whole
        for chunk in holding:  # ... and every chunk holding it is labelled by its own function
            assert name in chunk.section.split(" › "), (name, chunk.section, chunk.text[:200])


def section(name: str) -> str:
    """About 60 tokens of text: longer than min_section_tokens, well under max_tokens."""
    return " ".join(f"Sentence {i} of the {name} section adds one more plain fact." for i in range(6))


def test_short_sections_join_the_section_before_them(tokenizer):
    text = (
        "# Page\n\nA short opening.\n\n"                                   # short, first: its first child joins it
        f"## alpha\n\n{section('alpha')}\n\n"
        "### Returns\n\nthe alpha value.\n\n"                               # short, first child: joins alpha
        f"## beta\n\n{section('beta')}\n\n"
        f"### gamma\n\n{section('gamma')}\n\n"
        "## Notes\n\nOne note.\n\n"                                          # short: joins gamma (beta's last part)
        "## Functions\n\n"                                                  # a heading alone: its first child joins it
        f"### delta\n\n{section('delta')}\n\n"
        "#### Returns\n\nthe delta value.\n"                                # short, last: joins delta
    )
    config = ChunkingConfig(max_tokens=200, overlap_tokens=0, min_section_tokens=20)
    chunks = chunk_documents([Document("D", "d.html", "Guide", text)], config, tokenizer=tokenizer, progress=False)
    assert [(chunk.section, chunk.text.split("\n")[0], chunk.text.rstrip().rsplit("\n", 1)[-1]) for chunk in chunks] == [
        ("Guide › Page", "# Page", "the alpha value."),  # Page, alpha (its first child) and alpha's Returns
        ("Guide › Page › beta", "## beta", section("beta")),
        ("Guide › Page", "### gamma", "One note."),  # gamma and Notes lie only under Page together
        ("Guide › Page › Functions › delta", "## Functions", "the delta value."),  # the heading is in the path
    ]


def test_a_short_first_section_never_joins_its_next_sibling(tokenizer):
    text = f"## Summary\n\nA one-line summary.\n\n## Functions\n\n{section('functions')}\n"
    config = ChunkingConfig(max_tokens=200, overlap_tokens=0, min_section_tokens=20)
    chunks = chunk_documents([Document("D", "d.html", "Guide", text)], config, tokenizer=tokenizer, progress=False)
    assert [(chunk.section, chunk.text) for chunk in chunks] == [
        ("Guide › Summary", "## Summary\n\nA one-line summary."),
        ("Guide › Functions", f"## Functions\n\n{section('functions')}"),
    ]
