"""Converters from files to Markdown-ish text, one per file format, chosen by suffix through a registry.

Every format becomes text whose section headings are Markdown ATX lines (``# Title``, ``## Section``),
so one heading-aware chunker (:mod:`rag.chunking`) serves them all:

- ``.txt``: the text as is (no headings: a line that would read as one is indented, see
  :func:`rag.data.pdf_text.no_headings`); ``.md``/``.markdown``: MyST Markdown resolved to plain
  Markdown (:mod:`rag.data.myst`), minus a YAML front matter block (whose ``title:`` becomes the title);
- ``.rst``: docutils' parse written back as Markdown (:mod:`rag.data.rst`): section titles as ATX
  headings of their depth, directives and roles as their text or nothing;
- ``.html``/``.htm``/``.xhtml``: BeautifulSoup, minus ``script``/``style``/``template``/``noscript``/
  ``nav`` and elements of ARIA role ``navigation`` (Sphinx's "related" bar and sidebar), the XML
  declaration, DOCTYPE, processing instructions and comments, tables of contents (an element of
  class or id ``toc``, Sphinx's ``toctree-wrapper``, or a list whose text is all links to anchors of
  the same page), and permalink markers (a link to an anchor of the page whose text has no letter or
  digit: Sphinx's ``¶``, Node.js's ``#``), tables whose ``summary`` is "Navigation header" or
  "Navigation footer" (the DocBook XSL stylesheets' links to the previous, next, parent and home
  pages, which libxml2's and Valgrind's stylesheets copy), what a documentation tool named in the page's
  ``<meta name="generator">`` writes on every page alike (rustdoc's implementation lists, "source"
  links and toggles, Javadoc's table tabs, gtk-doc's navigation bar and footer:
  :data:`rag.data.generated.PAGE_FURNITURE`); a list one of whose items holds a heading is layout
  and is unwrapped (:func:`_is_layout_list`: Javadoc's class pages); a table some of whose rows hold
  a heading is split at those rows, which become blocks (:func:`_split_at_heading_rows`: gtk-doc's
  title tables, Doxygen's member tables); a page that only redirects is marked
  (:func:`redirect_target`); then markdownify with ATX headings; links and images keep only their
  text; text is not escaped (markdownify's default writes ``XDG\\_CONFIG\\_HOME`` and ``\\*``: a
  backslash the reader sees and the ``simple`` tokenizer splits the identifier at); ``<title>`` is
  the title;
- ``.pdf``: PDFium's text of each page (pypdfium2; PDFs hold no heading structure), cleaned by
  :mod:`rag.data.pdf_text`: running headers, footers and page numbers, dot-leader lines dropped,
  words broken at line ends joined, heading-like lines indented; the metadata title, else the first
  line, where it reads as a title; an encrypted PDF that does not open with the empty password is
  unreadable;
- ``.docx``: python-docx, paragraphs and tables in document order; paragraphs of style
  ``Heading N`` become level-N headings, ``Title`` a level-1 heading; a table row is one line,
  its cells joined by ``" | "``.

Every text is folded (:func:`rag.normalize.fold`: ligatures such as ``ﬁ`` become ``fi``, full-width
forms their ASCII letters; superscripts and subscripts such as ``ⁿ``, ``²``, ``₂`` stay), as the sparse
tokenizers fold queries (:mod:`rag.retrievers.tokenizers`).
Lines a converter drops are counted by rule in ``Converted.dropped``.

Work is bounded by counts, not bytes (a small file can hold much work: a 45 KB DOCX holds a million
empty paragraphs): a DOCX with more than :data:`MAX_BLOCKS` paragraphs and table cells, or a PDF
with more than :data:`MAX_PAGES` pages, is skipped as ``too_complex`` before its text is extracted.

Titles of a document that names none come from its first heading (:func:`rag.text.sections.first_heading`).
The choice of libraries was measured (docs/data.md, "Converter choice"). A file that cannot be
read raises :class:`Unreadable` with a kind (a key of ``Dataset.skipped``) and a reason.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rag.data.generated import PAGE_FURNITURE
from rag.data.pdf_text import dehyphenate, drop_dot_leaders, no_headings, page_furniture, plausible_title
from rag.errors import BenchError
from rag.normalize import fold
from rag.text.sections import ATX_HEADING, FENCE, TEXT_CHARACTER

BINARY = "binary"
NON_UTF8 = "non_utf8"
EMPTY = "empty"
ENCRYPTED = "encrypted"
NO_TEXT = "no_text"
UNREADABLE = "unreadable"
TOO_COMPLEX = "too_complex"

SNIFF_BYTES = 8192  # NUL bytes among the first ones mark a file as binary (:func:`looks_binary`)
MAX_BLOCKS = 200_000  # paragraphs and table cells of a DOCX (measured: docs/measurements.md#docx-blocks)
MAX_PAGES = 20_000  # pages of a PDF


class Unreadable(BenchError):
    """A file the data set skips (or, with ``dataset.strict``, refuses): ``kind`` and a reason."""

    def __init__(self, kind: str, reason: str):
        self.kind, self.reason = kind, reason
        super().__init__(reason)


@dataclass(frozen=True)
class Converted:
    """A file's text (Markdown headings for its sections), its own title if it names one, and the
    lines (or words) its cleaning rules dropped or changed, by rule."""

    text: str
    title: str | None = None
    dropped: dict[str, int] = field(default_factory=dict)
    redirect: str | None = None  # an HTML page that sends the browser on at once: where (:func:`redirect_target`)
    generated_by: str | None = None  # a page that is all a tool's furniture (an index): the tool (:func:`html_file`)


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
    return Converted(fold(result.text.replace("\x00", "")), fold(result.title) if result.title else None,
                     result.dropped, result.redirect, result.generated_by)


def within_budget(count: int, budget: int, what: str) -> None:
    """:class:`Unreadable` (``too_complex``) when a file holds more than ``budget`` units of work."""
    if count > budget:
        raise Unreadable(TOO_COMPLEX, f"{count:,} {what}, more than the {budget:,} a file may hold "
                                      f"(rag.data.convert); split the file")


def looks_binary(data: bytes) -> bool:
    """Whether more than 1% of the first :data:`SNIFF_BYTES` bytes (and more than one) are NUL bytes. A
    stray NUL is text: Javadoc writes the character of ``{@code \\u0000}`` as it is (Apache Commons
    Lang's ``CharUtils.html`` holds two), and the text keeps it out (:func:`convert`)."""
    head = data[:SNIFF_BYTES]
    return head.count(b"\x00") > max(1, len(head) // 100)


def decode_text(data: bytes) -> str:
    """UTF-8 text (a byte-order mark dropped, line ends made ``\\n``); binary or other encodings are
    :class:`Unreadable`."""
    if looks_binary(data):
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
    return Converted(no_headings(decode_text(data)))


@converter(".md", ".markdown")
def markdown_file(data: bytes) -> Converted:
    """MyST Markdown resolved to Markdown; a leading YAML front matter block is dropped, its
    ``title:`` kept as the title."""
    from rag.data.myst import myst_to_markdown

    text = decode_text(data)
    match = _FRONT_MATTER.match(text)
    if match is None:
        return Converted(myst_to_markdown(text))
    title = _FRONT_TITLE.search(match.group(1))
    return Converted(myst_to_markdown(text[match.end():]), title.group(1).strip("\"'") if title else None)


@converter(".rst")
def rst_file(data: bytes) -> Converted:
    """reStructuredText through docutils (see the module docstring)."""
    from rag.data.rst import rst_to_markdown

    return Converted(rst_to_markdown(decode_text(data)))


@converter(".html", ".htm", ".xhtml")
def html_file(data: bytes) -> Converted:
    """HTML through BeautifulSoup and markdownify (see the module docstring). A page that a tool's
    furniture leaves without text under its headings (an index page) is converted whole and marked
    as the tool's (``Converted.generated_by``)."""
    if looks_binary(data):
        raise Unreadable(BINARY, "binary content (NUL bytes), not HTML")
    converted = _html_markdown(data, drop_furniture=True)
    if converted.generated_by is None:
        return converted
    whole = _html_markdown(data, drop_furniture=False)
    return Converted(whole.text, whole.title, whole.dropped, whole.redirect, converted.generated_by)


def _html_markdown(data: bytes, drop_furniture: bool) -> Converted:
    """The page's Markdown; with ``drop_furniture``, without its tools' furniture, and
    ``generated_by`` naming the first of its tools when no text but headings and rules is left."""
    from bs4 import BeautifulSoup, Comment, Declaration, Doctype, ProcessingInstruction
    from markdownify import ATX, MarkdownConverter

    soup = BeautifulSoup(data, "html.parser")
    redirect = redirect_target(soup)
    _decompose([*soup(["script", "style", "template", "noscript", "nav"]), *soup(attrs={"role": "navigation"}),
                *soup("table", attrs={"summary": _NAVIGATION_SUMMARY})])
    regions = page_regions(soup)
    _decompose(regions)
    generators = _generators(soup)
    tools, generated = _page_furniture(soup, generators) if drop_furniture else ([], [])
    _decompose(generated)
    layout_tables = _page_layout_tables(soup, generators)
    for table in layout_tables:
        for element in table.find_all(["tbody", "thead", "tfoot", "tr", "td", "th"]):
            if element.find_parent("table") is table:
                element.name = "div"
        table.name = "div"
    for node in soup.find_all(string=lambda node: isinstance(node, (Comment, Declaration, Doctype, ProcessingInstruction))):
        node.extract()
    permalinks = [link for link in soup.find_all("a", href=True) if _is_permalink(link)]
    for link in permalinks:
        link.decompose()
    tables_of_contents = [element for element in soup.find_all(True) if _is_table_of_contents(element)]
    _decompose(tables_of_contents)
    layout_lists = [element for element in soup.find_all(["ul", "ol"]) if _is_layout_list(element)]
    for element in layout_lists:
        for item in element.find_all("li", recursive=False):
            item.unwrap()
        element.unwrap()
    heading_rows = 0
    for table in reversed(soup.find_all("table")):  # inner tables first
        heading_rows += _split_at_heading_rows(soup, table)
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    if soup.title:
        soup.title.decompose()
    text = MarkdownConverter(heading_style=ATX, strip=["a", "img"], bullets="-", escape_underscores=False,
                             escape_asterisks=False).convert_soup(soup)
    text = re.sub(r"\n{3,}", "\n\n", text.replace("\r\n", "\n").replace("\r", "\n")).strip() + "\n"
    dropped = {"table_of_contents": len(tables_of_contents), "permalinks": len(permalinks),
               "layout_lists": len(layout_lists), "layout_tables": len(layout_tables), "table_headings": heading_rows,
               "generated_sections": len(generated), "page_regions": len(regions)}
    generated_by = tools[0] if tools and not _holds_text(text) else None
    return Converted(text, title or None, {name: n for name, n in dropped.items() if n}, redirect, generated_by)


_TEXT_LINE = re.compile(r"^(?!\s*(?:[-*_]\s*){3,}$).*\w", re.MULTILINE)  # a line with a letter or digit, not a rule


def _holds_text(markdown: str) -> bool:
    """Whether the Markdown holds a letter or digit other than in its headings and rules: in a code
    block (rustdoc's page of an attribute macro is its title and ``#[corresponds]``) or a line of
    prose."""
    if any(re.search(r"\w", block.group(0).partition("\n")[2]) for block in FENCE.finditer(markdown)):
        return True
    return _TEXT_LINE.search(ATX_HEADING.sub("", FENCE.sub("", markdown))) is not None


def _decompose(elements) -> None:
    """Remove ``elements`` from their tree (one inside another already removed with it is skipped)."""
    for element in elements:
        if not element.decomposed:
            element.decompose()


_SECTIONING = ("article", "aside", "main", "nav", "section")


def _is_main(element) -> bool:
    return element.name == "main" or str(element.get("role") or "").lower() == "main"


def page_regions(soup) -> list:
    """The page's regions that are not its content, by the page's own markup (WAI-ARIA landmarks and
    their HTML elements): where an element is ``<main>`` or of role ``main`` and holds a letter or
    digit, everything in ``<body>`` outside it (and outside any other such element); the footer
    (role ``contentinfo``, or a ``<footer>`` outside ``article``, ``aside``, ``main``, ``nav`` and
    ``section``: HTML-AAM's rule); the page header (role ``banner``, or a ``<header>`` outside them)
    when it holds no heading (a header that holds the page's title is kept). Sphinx marks its body
    ``role="main"``, so its related bar, sidebar and footer ("Please donate.", "Last updated on ...")
    go; so do Javadoc's, MkDocs' and mdBook's copyright lines and theme menus."""
    mains = [element for element in soup.find_all(_is_main) if element.find_parent(_is_main) is None]
    found: list = []
    if any(TEXT_CHARACTER.search(element.get_text()) for element in mains):
        path = {id(ancestor) for element in mains for ancestor in element.parents} | {id(element) for element in mains}
        ancestors = {id(a): a for element in mains for a in element.parents if a.name not in ("[document]", "html")}
        found += [child for ancestor in ancestors.values() for child in ancestor.children if id(child) not in path]
    for element in [*soup(["footer", "header"]), *soup(attrs={"role": ["contentinfo", "banner"]})]:
        role = str(element.get("role") or "").lower()
        if role not in ("contentinfo", "banner") and element.find_parent(_SECTIONING) is not None:
            continue  # an article's or a section's own header or footer
        header = role == "banner" or (element.name == "header" and role != "contentinfo")
        if not (header and element.find(_HEADINGS) is not None):
            found.append(element)
    return found


#: The ``summary`` of the tables the DocBook XSL stylesheets, and the stylesheets modelled on them
#: (libxml2's, Valgrind's), write for the links to the previous, next, parent and home pages.
_NAVIGATION_SUMMARY = re.compile(r"\ANavigation (?:header|footer)\Z", re.IGNORECASE)


def _generators(soup) -> set[str]:
    """The tools named in the page's ``<meta name="generator">`` (any case of ``name``): the first word
    of each, lower-cased, before a ``/`` or a space."""
    return {re.split(r"[/\s]", meta["content"].strip().lower(), maxsplit=1)[0]
            for meta in soup.find_all("meta", content=True) if meta.get("name", "").lower() == "generator"}


def _page_layout_tables(soup, names: set[str]) -> list:
    """The tables that the tools ``names`` write to lay out a block, not to hold data
    (``Furniture.layout_tables``: DocBook's admonitions)."""
    pairs = [pair for name, furniture in PAGE_FURNITURE.items() if name in names for pair in furniture.layout_tables]
    if not pairs:  # most pages: no walk over their tables
        return []
    return [table for table in soup.find_all("table") if any(table.get(attribute) == value for attribute, value in pairs)]


def _page_furniture(soup, names: set[str]) -> tuple[list[str], list]:
    """The tools ``names`` (:func:`_generators`) that :data:`rag.data.generated.PAGE_FURNITURE` knows,
    in its order (gtk-doc before the DocBook XSL it is built on), and the elements they write on every
    page alike; none for other pages."""
    furnitures = [furniture for name, furniture in PAGE_FURNITURE.items() if name in names]
    elements: dict[int, object] = {}  # by identity: an element found by two rules is counted once
    for furniture in furnitures:
        found = [*soup.find_all(id=list(furniture.ids)), *soup.find_all(class_=list(furniture.classes))]
        if furniture.class_pattern:
            found += soup.find_all(class_=re.compile(f"^(?:{furniture.class_pattern})$"))
        if furniture.tables_of:
            found += [inner.find_parent("table") for inner in soup.find_all(class_=list(furniture.tables_of))]
        elements.update((id(element), element) for element in found if element is not None)
    return [furniture.tool for furniture in furnitures], list(elements.values())


_REFRESH = re.compile(r"\s*0+(?:\.0*)?\s*[;,]\s*(?:url\s*=\s*)?(['\"]?)(?P<url>[^'\"]+)\1\s*\Z", re.IGNORECASE)


def redirect_target(soup) -> str | None:
    """Where an HTML page sends its reader at once, by ``<meta http-equiv="refresh" content="0; url=...">``
    (the HTML standard's refresh with a delay of 0 s and a URL; rustdoc's pages for re-exported items,
    Javadoc's ``overview-summary.html``, MkDocs' and Sphinx's redirect plugins write such pages), or
    None: a page the browser leaves before it is shown is not a page a question is about."""
    for meta in soup.find_all("meta", attrs={"http-equiv": True, "content": True}):
        if meta["http-equiv"].strip().lower() == "refresh" and (match := _REFRESH.match(meta["content"])):
            return match["url"].strip()
    return None


_TOC_NAMES = frozenset({"toc", "table-of-contents", "tableofcontents", "toctree-wrapper"})  # the last: Sphinx's toctree


def _is_permalink(link) -> bool:
    """A heading's or term's permalink marker: a link to an anchor of the same page (``href="#..."``)
    whose text has no letter or digit (Sphinx's ``¶``, Node.js's ``#``, MkDocs' ``¶``, a ``§``)."""
    return link["href"].startswith("#") and not any(char.isalnum() for char in link.get_text())


def _is_table_of_contents(element) -> bool:
    """An element of class or id ``toc`` (or one of :data:`_TOC_NAMES`: Sphinx's ``toctree-wrapper``, the
    list a ``toctree`` directive writes, which the reStructuredText and MyST converters drop), or a
    list (``ul``/``ol``/``dl``) of three links or more whose text is all in links to anchors of the
    same page (``href="#..."``)."""
    names = {name.lower() for name in element.get("class") or []} | {str(element.get("id") or "").lower()}
    if names & _TOC_NAMES:
        return True
    if element.name not in ("ul", "ol", "dl"):
        return False
    links = element.find_all("a", href=True)
    return (len(links) >= 3 and all(link["href"].startswith("#") for link in links)
            and "".join(element.get_text().split()) == "".join("".join(link.get_text() for link in links).split()))


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def _is_layout_list(element) -> bool:
    """A list (``ul``/``ol``) one of whose items holds a heading: page layout, not a list of items.
    Javadoc (JDK 9 and later) puts every section of a class page (the summaries, the details, each
    method's ``<h3>``) in the items of nested lists; read as lists, their headings became list text
    (``- ### valueOf``) that starts no section. Unwrapped, each method is a section of its own."""
    return any(item.find(_HEADINGS) is not None for item in element.find_all("li", recursive=False))


def _split_at_heading_rows(soup, table) -> int:
    """A table some of whose rows hold a heading, split at those rows: each such row becomes a block
    (its cells too) before the table, the rows between them tables of their own; how many rows held
    a heading. gtk-doc puts each page's title heading and its one-line purpose in a one-row layout
    table, Doxygen each group heading of a class's member list ("Public Member Functions") in a row
    of the list's table: in a table, markdownify writes a heading as cell text, which starts no
    section."""
    rows = [row for row in table.find_all("tr") if row.find_parent("table") is table]
    heading = [any(cell.find(_HEADINGS) is not None for cell in row.find_all(["td", "th"], recursive=False))
               for row in rows]
    if not any(heading):
        return 0
    parts: list = []
    rest = None
    for row, holds_heading in zip(rows, heading):
        row.extract()
        if holds_heading:
            for cell in row.find_all(["td", "th"], recursive=False):
                cell.name = "div"
            row.name = "div"
            parts.append(row)
            rest = None
        else:
            if rest is None:
                rest = soup.new_tag("table")
                parts.append(rest)
            rest.append(row)
    for part in parts:
        table.insert_before(part)
    table.decompose()
    return sum(heading)


@converter(".pdf")
def pdf_file(data: bytes) -> Converted:
    """PDFium's text, page by page (pages separated by a blank line), cleaned."""
    return _clean_pdf_text(*pdf_pages(data))


def pdf_pages(data: bytes) -> tuple[list[str], str | None]:
    """The text of each page of a PDF and its metadata title, by PDFium (pypdfium2): against pypdf it
    left fewer words broken ("v ariable") at a tenth of the time (measured: docs/data.md#pdf-text).
    PDFium's marks are read: ``\\r\\n`` line ends as ``\\n``, and U+FFFE, which it puts for a hyphen
    at a line end after joining the two lines, as that hyphen and line end, so that
    :func:`rag.data.pdf_text.dehyphenate` decides whether the word is joined. An encrypted PDF opens
    with the empty password or not at all."""
    import pypdfium2

    try:
        document = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as exc:
        if getattr(exc, "err_code", None) == pypdfium2.raw.FPDF_ERR_PASSWORD:
            raise Unreadable(ENCRYPTED, "encrypted PDF (needs a password)") from None
        raise
    try:
        within_budget(len(document), MAX_PAGES, "pages")
        pages = []
        for page in document:
            textpage = page.get_textpage()
            pages.append(textpage.get_text_range().replace("\r\n", "\n").replace("\ufffe", "-\n"))
            textpage.close()
            page.close()
        return pages, document.get_metadata_dict().get("Title") or None
    finally:
        document.close()


def _clean_pdf_text(pages: list[str], metadata_title: str | None) -> Converted:
    """The rules of :mod:`rag.data.pdf_text` applied to a PDF's page texts (folded first, so ligatures
    and the lines they are in compare as text)."""
    pages = [fold(page) for page in pages]
    first_line = next((line.strip() for page in pages for line in page.split("\n") if line.strip()), None)
    pages, furniture = page_furniture(pages)
    text, leaders = drop_dot_leaders("\n\n".join(page.strip() for page in pages))
    text, joined, kept = dehyphenate(text)
    text = re.sub(r"\n{3,}", "\n\n", no_headings(text)).strip()
    title = next((t.strip() for t in (metadata_title and fold(metadata_title), first_line) if plausible_title(t)), None)
    counts = {"page_furniture": furniture, "dot_leaders": leaders, "dehyphenated": joined, "hyphen_kept": kept}
    return Converted(text, title, {rule: count for rule, count in counts.items() if count})


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
