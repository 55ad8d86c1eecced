"""Converters from files to Markdown-ish text, one per file format, chosen by suffix through a registry.

Every format becomes text whose section headings are Markdown ATX lines (``# Title``, ``## Section``),
so one heading-aware chunker (:mod:`rag.chunking`) serves them all:

- ``.txt``: the text as is (no headings); ``.md``/``.markdown``: the text as is, minus a YAML front
  matter block (whose ``title:`` becomes the title);
- ``.rst``: section titles (a line underlined, optionally overlined, by a repeated punctuation
  character at least as long as the title) become ATX headings; levels follow the order in which
  the adornment styles first appear, which is reStructuredText's own rule;
- ``.html``/``.htm``: BeautifulSoup, minus ``script``/``style``/``template``/``noscript``, then
  markdownify with ATX headings; links and images keep only their text; ``<title>`` is the title;
- ``.pdf``: pypdf's text of each page (PDFs hold no heading structure); an encrypted PDF that does not
  open with the empty password is unreadable;
- ``.docx``: python-docx, paragraphs and tables in document order; paragraphs of style
  ``Heading N`` become level-N headings, ``Title`` a level-1 heading; a table row is one line,
  its cells joined by ``" | "``.

Work is bounded by counts, not bytes (a small file can hold much work: a 45 KB DOCX holds a million
empty paragraphs): a DOCX with more than :data:`MAX_BLOCKS` paragraphs and table cells, or a PDF
with more than :data:`MAX_PAGES` pages, is skipped as ``too_complex`` before its text is extracted.

Titles of a document that names none come from its first heading (:func:`rag.data.sections.first_heading`).
The choice of libraries was measured (docs/data.md, "Converter choice"). A file that cannot be
read raises :class:`Unreadable` with a kind (a key of ``Dataset.skipped``) and a reason.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass

from rag.errors import BenchError

BINARY = "binary"
NON_UTF8 = "non_utf8"
EMPTY = "empty"
ENCRYPTED = "encrypted"
NO_TEXT = "no_text"
UNREADABLE = "unreadable"
TOO_COMPLEX = "too_complex"

SNIFF_BYTES = 8192  # a NUL byte among the first ones marks a text file as binary
MAX_BLOCKS = 200_000  # paragraphs and table cells of a DOCX (100,000 short ones: 10 s at load average 9 on 2 cores)
MAX_PAGES = 20_000  # pages of a PDF


class Unreadable(BenchError):
    """A file the data set skips (or, with ``dataset.strict``, refuses): ``kind`` and a reason."""

    def __init__(self, kind: str, reason: str):
        self.kind, self.reason = kind, reason
        super().__init__(reason)


@dataclass(frozen=True)
class Converted:
    """A file's text (Markdown headings for its sections) and its own title, if it names one."""

    text: str
    title: str | None = None


Converter = Callable[[bytes], Converted]
CONVERTERS: dict[str, Converter] = {}


def converter(*suffixes: str) -> Callable[[Converter], Converter]:
    """Register a converter for file suffixes (lower case, with the dot)."""

    def decorator(function: Converter) -> Converter:
        for suffix in suffixes:
            if suffix in CONVERTERS:
                raise ValueError(f"converter for {suffix!r} is registered twice")
            CONVERTERS[suffix] = function
        return function

    return decorator


def convert(data: bytes, suffix: str) -> Converted:
    """The text of a file's bytes, by its (lower-cased) suffix; :class:`Unreadable` when it has none."""
    try:
        result = CONVERTERS[suffix](data)
    except Unreadable:
        raise
    except Exception as exc:  # noqa: BLE001 - a library's parse error on a damaged file: skip it with its reason
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise Unreadable(UNREADABLE, f"cannot be parsed as {suffix[1:]}: {type(exc).__name__}: {first_line[:200]}") from exc
    if not result.text.strip():
        if suffix == ".pdf":
            raise Unreadable(NO_TEXT, "the PDF holds no text (scanned or image-only?)")
        raise Unreadable(EMPTY, "no text")
    return result


def within_budget(count: int, budget: int, what: str) -> None:
    """:class:`Unreadable` (``too_complex``) when a file holds more than ``budget`` units of work."""
    if count > budget:
        raise Unreadable(TOO_COMPLEX, f"{count:,} {what}, more than the {budget:,} a file may hold "
                                      f"(rag.data.convert); split the file")


def decode_text(data: bytes) -> str:
    """UTF-8 text (a byte-order mark dropped, line ends made ``\\n``); binary or other encodings are
    :class:`Unreadable`."""
    if b"\x00" in data[:SNIFF_BYTES]:
        raise Unreadable(BINARY, "binary content (NUL bytes), not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable(NON_UTF8, f"not valid UTF-8 (byte {exc.start}: {exc.reason}); convert it to UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


@converter(".txt")
def text_file(data: bytes) -> Converted:
    return Converted(decode_text(data))


@converter(".md", ".markdown")
def markdown_file(data: bytes) -> Converted:
    """Markdown as is; a leading YAML front matter block is dropped, its ``title:`` kept as the title."""
    text = decode_text(data)
    match = _FRONT_MATTER.match(text)
    if match is None:
        return Converted(text)
    title = _FRONT_TITLE.search(match.group(1))
    return Converted(text[match.end():], title.group(1).strip("\"'") if title else None)


_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")


@converter(".rst")
def rst_file(data: bytes) -> Converted:
    """reStructuredText with its section titles as ATX headings (see the module docstring)."""
    lines = decode_text(data).split("\n")
    styles: list[tuple[str, bool]] = []  # (character, overlined), in order of first appearance
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        over = bool(_ADORNMENT.match(line)) and i + 2 < len(lines) and lines[i + 2].strip() == line.strip()
        title_at = i + 1 if over else i
        title = lines[title_at].strip() if title_at < len(lines) else ""
        under = lines[title_at + 1] if title_at + 1 < len(lines) else ""
        if title and not _ADORNMENT.match(lines[title_at]) and _ADORNMENT.match(under) and len(under.strip()) >= len(title):
            style = (under.strip()[0], over)
            if style not in styles:
                styles.append(style)
            out.append("#" * min(styles.index(style) + 1, 6) + " " + title)
            i = title_at + 2
            continue
        out.append(line)
        i += 1
    return Converted("\n".join(out))


@converter(".html", ".htm")
def html_file(data: bytes) -> Converted:
    """HTML through BeautifulSoup and markdownify (see the module docstring)."""
    from bs4 import BeautifulSoup
    from markdownify import ATX, MarkdownConverter

    if b"\x00" in data[:SNIFF_BYTES]:
        raise Unreadable(BINARY, "binary content (NUL bytes), not HTML")
    soup = BeautifulSoup(data, "html.parser")
    for element in soup(["script", "style", "template", "noscript"]):
        element.decompose()
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    if soup.title:
        soup.title.decompose()
    text = MarkdownConverter(heading_style=ATX, strip=["a", "img"], bullets="-").convert_soup(soup)
    return Converted(re.sub(r"\n{3,}", "\n\n", text).strip() + "\n", title or None)


@converter(".pdf")
def pdf_file(data: bytes) -> Converted:
    """pypdf's text, page by page (pages separated by a blank line)."""
    import pypdf
    from pypdf.errors import FileNotDecryptedError

    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            reader.decrypt("")
            pages = _page_texts(reader)
        except FileNotDecryptedError:
            raise Unreadable(ENCRYPTED, "encrypted PDF (needs a password)") from None
    else:
        pages = _page_texts(reader)
    title = reader.metadata.title if reader.metadata is not None else None
    return Converted("\n\n".join(page.strip() for page in pages), title.strip() if title and title.strip() else None)


def _page_texts(reader) -> list[str]:
    within_budget(len(reader.pages), MAX_PAGES, "pages")
    return [page.extract_text() or "" for page in reader.pages]


@converter(".docx")
def docx_file(data: bytes) -> Converted:
    """python-docx: paragraphs (``Heading N``/``Title`` styles as headings) and tables, in order; each
    paragraph's style name from a table of the document's styles made once (``paragraph.style``
    searches the styles part each time: 1 ms a paragraph)."""
    import docx
    from docx.oxml.ns import qn
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    within_budget(sum(1 for _ in document.element.body.iter(qn("w:p"), qn("w:tc"))), MAX_BLOCKS,
                  "paragraphs and table cells")
    style_names = {style.style_id: style.name for style in document.styles}
    blocks: list[str] = []
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            blocks.extend(" | ".join(cell.text.strip() for cell in row.cells) for row in item.rows)
            continue
        text = item.text.strip()
        if not text:
            continue
        style = style_names.get(item._p.style, "")  # an unknown or no style id: the default, never a heading
        level = 1 if style == "Title" else _heading_level(style)
        blocks.append(f"{'#' * level} {text}" if level else text)
    title = (document.core_properties.title or "").strip()
    return Converted("\n\n".join(blocks), title or None)


def _heading_level(style: str) -> int:
    parts = style.split()
    return min(int(parts[1]), 6) if len(parts) == 2 and parts[0] == "Heading" and parts[1].isdigit() else 0
