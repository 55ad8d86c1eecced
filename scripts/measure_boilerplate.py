"""Measure boilerplate removal on folders of HTML pages against each tool's own markup (docs/data.md,
"Boilerplate: measured").

Usage: python scripts/measure_boilerplate.py FOLDER... [--cache-dir DIR] [--compare] [--footer TEXT]...

Each folder is read as ``rag-bench run --docs FOLDER`` reads it (``load_dataset`` of a ``files`` data
set, every file the default ``include`` matches) and chunked with the default settings
(``chunk_documents``). Oracle: each page's own markup, read here with BeautifulSoup, by the tool named
in its ``<meta name="generator">`` (:data:`ORACLES`): the page's body region, its notes (Sphinx's
``versionmodified`` notes, "New in version 3.8." and "Changed in version ...", gtk-doc's "Since:"
lines), and its furniture regions (navigation, footer). Measured over the pages that became documents
(pages the loader left out as generated are counted apart):

- paragraphs kept: share of the body's paragraphs (``<p>`` with a letter or digit, outside a table of
  contents) found in the page's chunks (the document's text the chunks cover, in order);
- notes kept: share of the notes found in the page's chunks;
- furniture left: pages whose chunks hold a line of their furniture regions (2 words or more, split
  at ``<br>`` and block elements) that the page's body does not also hold;
- chunks with a footer line: chunks of the whole folder holding a line of any page's footer region
  (2 words or more, not also in that page's body);
- seconds for the load and the chunking.

All text is compared as lower-cased letters and digits (Markdown's backticks and asterisks left
out). With ``--compare`` (needs trafilatura and jusText, which are not dependencies of the project),
trafilatura 2 (``extract``, tables and formatting kept) and jusText 3 (English stop list) are
measured on the same pages, their whole output in place of the chunks, and pages whose output holds
a ``--footer`` text are counted.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString

BLOCKS = ["p", "div", "li", "dt", "dd", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol",
          "dl", "pre", "hr", "section"]


def words(text: str) -> str:
    """Lower-cased letters and digits, Markdown's code and emphasis marks left out (``field``s -> fields)."""
    return " ".join(re.findall(r"[0-9a-z]+", re.sub(r"[`*]", "", text.lower())))


@dataclass(frozen=True)
class Oracle:
    """Where a tool puts a page's body, its notes and its furniture: functions of the parsed page."""

    body: Callable  # soup -> the body region (the whole <body> less the furniture, where the tool marks no body)
    notes: Callable = lambda body: []  # body -> note elements
    navigation: tuple[str, ...] = ()  # CSS selectors of furniture regions
    footer: tuple[str, ...] = ()  # CSS selectors of footer regions (checked over the whole folder)


def _body_less(*selectors: str) -> Callable:
    def body(soup):
        region = soup.body or soup
        for element in region.select(", ".join(selectors)):
            element.decompose()
        return region
    return body


ORACLES = {
    # Sphinx (its pages name Docutils) marks the body ``div.body`` with role="main"; its notes are the
    # paragraphs holding a span of class versionmodified.
    "sphinx": Oracle(lambda soup: soup.find(attrs={"role": "main"}),
                     lambda body: [span.find_parent(["p", "div"]) for span in body.select("span.versionmodified")],
                     ("div.related", "div.sphinxsidebar", "div.footer"), ("div.footer",)),
    "gtk-doc": Oracle(_body_less("table.navigation", "div.footer"), lambda body: body.select("p.since"),
                      ("table.navigation", "div.footer"), ("div.footer",)),
    "docbook": Oracle(_body_less('table[summary="Navigation header"]', 'table[summary="Navigation footer"]',
                                 "div.navheader", "div.navfooter"), lambda body: [],
                      ('table[summary="Navigation header"]', 'table[summary="Navigation footer"]', "div.navheader",
                       "div.navfooter")),
    "asciidoc": Oracle(lambda soup: soup.find(id="content"), lambda body: [], ("#footer",), ("#footer",)),
}


def tool_of(soup) -> str | None:
    generators = " ".join(meta.get("content", "") for meta in soup.find_all("meta", attrs={"name": "generator"})).lower()
    if "gtk-doc" in generators:
        return "gtk-doc"
    if "docbook" in generators:
        return "docbook"
    if "asciidoc" in generators:
        return "asciidoc"
    if soup.find("div", class_="body", attrs={"role": "main"}) is not None:
        return "sphinx"
    return None


def region_lines(element) -> list[str]:
    """The element's text split at ``<br>`` and block elements, as words; lines of 2 words or more."""
    for tag in element.find_all(["br", *BLOCKS]):
        tag.insert_before(NavigableString("\n"))
        tag.insert_after(NavigableString("\n"))
    lines = (words(line) for line in element.get_text("").split("\n"))
    return [line for line in lines if len(line.split()) >= 2]


@dataclass
class Page:
    paragraphs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    furniture: list[str] = field(default_factory=list)  # lines the body does not hold
    footer: list[str] = field(default_factory=list)


def page_oracle(html: bytes) -> tuple[str | None, Page]:
    soup = BeautifulSoup(html, "html.parser")
    tool = tool_of(soup)
    if tool is None:
        return None, Page()
    oracle = ORACLES[tool]
    regions = {selector: [BeautifulSoup(str(e), "html.parser") for e in soup.select(selector)]
               for selector in oracle.navigation}
    body = oracle.body(soup)
    if body is None:
        return tool, Page()
    for toc in body.select(".toc, .toctree-wrapper"):
        toc.decompose()
    body_words = words(body.get_text(" "))
    page = Page([words(p.get_text()) for p in body.find_all("p") if words(p.get_text())],
                [words(note.get_text()) for note in oracle.notes(body) if note is not None])
    for selector, elements in regions.items():
        lines = [line for element in elements for line in region_lines(element) if line not in body_words]
        page.furniture += lines
        if selector in oracle.footer:
            page.footer += lines
    return tool, page


def covered_text(text: str, chunk_texts: list[str]) -> str:
    """The part of a document's ``text`` its chunks (verbatim slices, in order) cover, as words."""
    spans: list[list[int]] = []
    start = 0
    for chunk in chunk_texts:
        at = text.find(chunk, start)
        if at < 0:
            raise SystemExit("a chunk is not a slice of its document's text (a section prefix?)")
        if spans and at <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], at + len(chunk))  # overlapping or adjacent chunks: one span
        else:
            spans.append([at, at + len(chunk)])
        start = at
    return words(" ".join(text[a:b] for a, b in spans))


def project_chunks(folder: Path, cache_dir: Path | None) -> tuple[dict[str, list[str]], dict[str, str], int]:
    from rag.chunking import ChunkingConfig, chunk_documents
    from rag.data import load_dataset

    dataset = load_dataset({"format": "files", "path": str(folder)}, cache_dir=cache_dir)
    chunks = chunk_documents(dataset.documents, ChunkingConfig(), progress=False)
    by_url: dict[str, list[str]] = {}
    for chunk in chunks:
        by_url.setdefault(chunk.url, []).append(chunk.text)
    texts = {document.url: document.text for document in dataset.documents}
    return by_url, texts, len(dataset.generated)


def share(found: int, total: int) -> str:
    return f"{found}/{total} ({found / total:.4f})" if total else "0/0"


@dataclass
class Measured:
    folder: str
    tools: set[str] = field(default_factory=set)
    pages: int = 0
    generated: int = 0
    paragraphs: int = 0
    paragraphs_kept: int = 0
    notes: int = 0
    notes_kept: int = 0
    furniture_left: int = 0  # pages
    footer_chunks: int = 0
    chunks: int = 0
    seconds: float = 0.0
    missing: list[tuple[str, str]] = field(default_factory=list)  # (page, paragraph or note) not in its chunks
    footer_lines: set[str] = field(default_factory=set)

    def row(self) -> str:
        return (f"| {self.folder} | {'/'.join(sorted(self.tools))} | {self.pages} (+{self.generated} generated) | "
                f"{share(self.paragraphs_kept, self.paragraphs)} | {share(self.notes_kept, self.notes)} | "
                f"{self.furniture_left} | {self.footer_chunks} of {self.chunks} | {self.seconds:.0f} |")


def measure(folder: Path, cache_dir: Path | None = None) -> Measured:
    """The shares of the module docstring for ``folder``."""
    start = time.perf_counter()
    chunks, texts, generated = project_chunks(folder, cache_dir)
    measured = Measured(folder.name, generated=generated, seconds=time.perf_counter() - start,
                        chunks=sum(len(parts) for parts in chunks.values()))
    for url in sorted(chunks):
        path = folder / url
        if path.suffix.lower() not in (".html", ".htm", ".xhtml"):
            continue
        tool, page = page_oracle(path.read_bytes())
        if tool is None:
            continue
        measured.tools.add(tool)
        kept = covered_text(texts[url], chunks[url])
        measured.pages += 1
        measured.paragraphs += len(page.paragraphs)
        measured.paragraphs_kept += sum(paragraph in kept for paragraph in page.paragraphs)
        measured.notes += len(page.notes)
        measured.notes_kept += sum(note in kept for note in page.notes)
        measured.furniture_left += any(line in kept for line in page.furniture)
        measured.footer_lines.update(page.footer)
        measured.missing += [(url, text) for text in page.paragraphs + page.notes if text not in kept]
    measured.footer_chunks = sum(any(line in words(chunk) for line in measured.footer_lines)
                                 for parts in chunks.values() for chunk in parts)
    return measured


def compare(folder: Path, footers: list[str]) -> None:
    """trafilatura and jusText on the folder's pages, against the same oracle (their whole output)."""
    import justext
    import trafilatura

    pages = {path: path.read_bytes() for path in sorted(folder.rglob("*.html")) if not path.is_symlink()}
    stoplist = justext.get_stoplist("English")
    candidates = {
        "trafilatura": lambda html: trafilatura.extract(html.decode("utf-8"), include_tables=True, include_formatting=True) or "",
        "jusText": lambda html: "\n\n".join(p.text for p in justext.justext(html, stoplist) if not p.is_boilerplate),
    }
    for name, extract in candidates.items():
        start = time.perf_counter()
        found = total = left = 0
        for html in pages.values():
            tool, page = page_oracle(html)
            if tool is None:
                continue
            text = words(extract(html))
            total += len(page.paragraphs)
            found += sum(paragraph in text for paragraph in page.paragraphs)
            left += any(words(footer) in text for footer in footers)
        print(f"| {folder.name} | {name} | {share(found, total)} | pages with footer left: {left} | "
              f"{time.perf_counter() - start:.1f} s |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--footer", action="append", default=None)
    parser.add_argument("--cache-dir", type=Path, help="cache the converted files here (as a run's cache_dir)")
    args = parser.parse_args(argv)
    for folder in args.folders:
        if not folder.is_dir():
            print(f"{folder}: not a folder", file=sys.stderr)
            return 2
    print("| folder | tool | pages | paragraphs kept | notes kept | pages with furniture left | chunks with a footer line | s |")
    print("|---|---|---|---|---|---|---|---|")
    for folder in args.folders:
        measured = measure(folder, args.cache_dir)
        print(measured.row(), flush=True)
        for url, text in measured.missing[:10]:
            print(f"    missing in {url}: {text[:120]}", file=sys.stderr)
    if args.compare:
        for folder in args.folders:
            compare(folder, args.footer or ["Last updated", "Please donate"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
