"""Clean text from real files (tests/fixtures/thirdparty/README.md): each cleaning rule on the files
real tools wrote, checked against what those files hold (read with other means: raw bytes,
BeautifulSoup, pypdf), never against our own output."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pypdf
import pytest
from bs4 import BeautifulSoup

from rag.chunking import ChunkingConfig, chunk_documents
from rag.data import load_dataset
from rag.data.convert import convert
from rag.data.pdf_text import dehyphenate, plausible_title
from rag.text.sections import first_heading, headings
from rag.models import load_tokenizer
from rag.retrievers.tokenizers import TokenizerParams, make_tokenizer

from .conftest import needs_chromium, print_pdf

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "thirdparty"
LIGATURES = re.compile("[\ufb00-\ufb06]")
DIRECTIVE_OR_ROLE = re.compile(r"^[ \t]*\.\.[ \t]+[\w:.+-]+[ \t]*::|(?<![\w`]):[A-Za-z][\w:.+-]*:`|^[ \t]*(?:`{3,}|:{3,})\{"
                               r"|\{[A-Za-z][\w:.+-]*\}`|^\([\w.-]+\)=[ \t]*$", re.MULTILINE)


def squash(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def git_doc():
    return load_dataset({"format": "files", "path": str(FIXTURES / "git-doc")})


@pytest.fixture(scope="module")
def pip_docs():
    return load_dataset({"format": "files", "path": str(FIXTURES / "pip-docs")})


@pytest.fixture(scope="module")
def bzip2():
    data = (FIXTURES / "pdfs" / "bzip2-manual.pdf").read_bytes()
    raw = [page.extract_text() for page in pypdf.PdfReader(FIXTURES / "pdfs" / "bzip2-manual.pdf").pages]
    return raw, convert(data, ".pdf")


def words(text: str) -> str:
    """Letters and digits only, lower-cased (Markdown emphasis and escapes left out)."""
    return " ".join(re.findall(r"[0-9a-z]+", text.lower()))


def by_url(dataset):
    return {document.url: document for document in dataset.documents}


# --- HTML -------------------------------------------------------------------------------------------

def test_xml_declaration_doctype_and_comments_never_reach_the_text(git_doc):
    for document in git_doc.documents:
        raw = (FIXTURES / "git-doc" / document.url).read_bytes()
        assert raw.startswith(b"<?xml version=") and b"<!DOCTYPE" in raw  # what the pages hold
        assert "xml version" not in document.text and "DOCTYPE" not in document.text and "<!--" not in document.text
        assert not document.text.lstrip().startswith("xml")


def test_files_with_the_same_bytes_are_indexed_once_and_listed(git_doc):
    assert (FIXTURES / "git-doc" / "index.html").is_symlink()
    assert sorted(by_url(git_doc)) == ["git-mv.html", "git-rm.html", "git-stash.html", "git.html"]
    assert git_doc.duplicates == {"index.html": "git.html"}


def test_the_footer_repeated_on_every_page_is_dropped_and_the_content_kept(git_doc):
    for url, document in by_url(git_doc).items():
        soup = BeautifulSoup((FIXTURES / "git-doc" / url).read_bytes(), "html.parser")
        assert "Last updated" in soup.find(id="footer").get_text()  # every page has the footer
        assert "Last updated" not in document.text and "Part of the git(1) suite" not in document.text
        content = soup.find(id="content")
        paragraphs = [words(p.get_text()) for p in content.find_all("p") if len(squash(p.get_text())) >= 40]
        assert paragraphs and all(paragraph in words(document.text) for paragraph in paragraphs)  # body kept
    assert git_doc.cleaning["boilerplate"] >= 2 * len(git_doc.documents)  # footer and suite line, counted
    assert any("last updated" in line for line in git_doc.boilerplate)


def test_a_table_of_contents_is_dropped(tmp_path):
    html = gzip.decompress((FIXTURES / "user-manual.html.gz").read_bytes())
    soup = BeautifulSoup(html, "html.parser")
    entries = [squash(a.get_text()) for a in soup.find("div", class_="toc").find_all("a")]
    converted = convert(html, ".html")
    lines = [squash(line.lstrip("-*0123456789. ")) for line in converted.text.split("\n")]
    listed = [entry for entry in entries if entry in lines and f"# {entry}" not in converted.text]
    assert len(entries) > 100 and not listed  # no TOC entry left as a line of its own (headings stay)
    assert "Table of Contents" not in converted.text and converted.dropped["table_of_contents"] >= 1
    assert "Git is a fast distributed revision control system." in converted.text


# --- reStructuredText and MyST ----------------------------------------------------------------------

def test_sphinx_directives_and_roles_become_their_text_or_disappear(pip_docs):
    documents = by_url(pip_docs)
    for url, document in documents.items():
        source = (FIXTURES / "pip-docs" / url).read_text(encoding="utf-8")
        assert DIRECTIVE_OR_ROLE.search(source), url  # every sample holds Sphinx markup
        assert not DIRECTIVE_OR_ROLE.search(document.text), (url, DIRECTIVE_OR_ROLE.search(document.text))
    install = squash(documents["cli/pip_install.rst"].text)
    assert "4. A version specifier." in install  # :ref:`version specifier <pypug:version-specifiers>`
    assert "The Direct URL requirement syntax can be used" in install
    caching = documents["topics/caching.md"].text
    assert "Added in version 6.0." in caching  # ```{versionadded} 6.0```, rendered as Sphinx does
    assert "circumvents accessing PyPI, see Installing from local packages." in squash(caching)  # {ref}`...`
    assert "(wheel-caching)=" not in caching and "```\n~/.cache/pip\n```" in caching  # code stays code


def test_toctrees_and_generated_directives_leave_nothing(pip_docs):
    documents = by_url(pip_docs)
    index = documents["index.md"].text
    lines = {line.strip() for line in index.split("\n")}
    assert not lines & {"getting-started", "ux-research-design/index", ":hidden:", ":caption: Project"}  # toctree
    assert squash(documents["development/index.rst"].text).startswith("# Development")
    show = documents["cli/pip_show.rst"].text
    assert "pip-command-usage" not in show and '"python -m pip"' not in show
    assert [m.group(2) for m in headings(show)][:2] == ["pip show", "Usage"]


def test_section_headings_of_rst_follow_its_nesting(pip_docs):
    text = by_url(pip_docs)["cli/pip_install.rst"].text
    levels = {m.group(2): len(m.group(1)) for m in headings(text)}
    assert levels["pip install"] == 1 and levels["Description"] == 2 and levels["Overview"] == 3


# --- PDF ----------------------------------------------------------------------------------------------

def test_pdf_ligatures_become_letters_and_queries_match_them(bzip2):
    raw, converted = bzip2
    assert sum(len(LIGATURES.findall(page)) for page in raw) > 100
    assert not LIGATURES.search(converted.text)
    tokenizer = make_tokenizer(TokenizerParams(stopwords=False))
    assert tokenizer("the \ufb01le") == tokenizer("the file") == ["the", "file"]  # a query with a ligature


def test_pdf_running_headers_page_numbers_and_dot_leaders_are_dropped(bzip2):
    raw, converted = bzip2
    running = "Programming with libbzip2"  # the running title of chapter 3's pages
    assert sum(page.split("\n")[0] == running for page in raw) >= 10
    assert not re.search(f"^{running}$", converted.text, re.MULTILINE)
    assert "3. Programming with libbzip2" in converted.text  # the chapter's own title stays
    assert any(re.search(r"(?:\. ){4,}\d+$", line) for page in raw for line in page.split("\n"))
    assert not re.search(r"(?:\.[ \t]?){4,}[ \t]*\w+[ \t]*$", converted.text, re.MULTILINE)
    assert not re.search(r"^\s*(?:\d{1,3}|[ivx]{1,5})\s*$", converted.text, re.MULTILINE)
    assert converted.dropped["page_furniture"] > 20 and converted.dropped["dot_leaders"] > 20
    assert converted.title == "bzip2 and libbzip2, version 1.0.8"


def test_pdf_words_broken_at_line_ends_are_joined(bzip2):
    raw, converted = bzip2
    text = "\n".join(raw)
    assert "decompres-\nsion" in text and "compati-\nbility" in text and "DIS-\nCLAIMED" in text
    assert "decompression" in converted.text and "compatibility" in converted.text and "DISCLAIMED" in converted.text
    assert not re.search(r"[^\W\d_]-[ \t]*\n[ \t]*[a-z]", converted.text)


def test_a_hyphen_stays_where_the_joined_word_is_not_attested():
    text, joined, kept = dehyphenate("use the command-\nline tool; a per-\nformed step")
    assert text == "use the command-line tool; a performed step" and (joined, kept) == (1, 1)
    text, joined, kept = dehyphenate("see git-config(1) or git-\nconfig; gitconfig is a file")
    assert "git-config;" in text and (joined, kept) == (0, 1)  # the hyphenated form is attested


def test_titles_only_where_they_read_as_titles():
    assert not plausible_title("This file was automatically generated by the")
    assert not plausible_title("file:///usr/share/doc/git-doc/git-stash.html")
    for title in ["bzip2 and libbzip2, version 1.0.8", "git-stash(1)", "Nettle Manual", "Shared MIME-info Database"]:
        assert plausible_title(title)


@pytest.fixture(scope="module")
def chromium_stash(tmp_path_factory):
    out = tmp_path_factory.mktemp("chromium") / "git-stash.pdf"
    html = (FIXTURES / "git-doc" / "git-stash.html").read_text(encoding="utf-8")
    return print_pdf(html, out, header_footer=True)


@needs_chromium
def test_chromium_print_header_and_footer_are_dropped(chromium_stash):
    raw = [page.extract_text() for page in pypdf.PdfReader(chromium_stash).pages]
    n = len(raw)
    assert n >= 4 and all(re.search(r"\d+/\d+/\d+, \d+:\d+ [AP]M", page) for page in raw)  # Chromium's header
    assert all(f"{i + 1}/{n}" in page for i, page in enumerate(raw))  # and its footer, page i/n
    converted = convert(chromium_stash.read_bytes(), ".pdf")
    assert not re.search(r"\d+/\d+/\d+, \d+:\d+ [AP]M|file:///|git-stash\.src\.html", converted.text)
    assert converted.title == "git-stash(1)"
    assert "Use git stash when you want to record the current state of the working directory" in squash(converted.text)


@needs_chromium
def test_shell_comments_in_a_printed_code_block_are_never_headings(chromium_stash):
    raw = "\n".join(page.extract_text() for page in pypdf.PdfReader(chromium_stash).pages)
    assert re.search(r"^# \.\.\. hack hack hack \.\.\.", raw, re.MULTILINE)  # shell comments of the examples
    text = convert(chromium_stash.read_bytes(), ".pdf").text
    assert "# ... hack hack hack ..." in text and first_heading(text) is None


# --- chunks -------------------------------------------------------------------------------------------

def test_no_title_only_or_near_empty_chunks(git_doc, pip_docs):
    tokenizer = load_tokenizer()
    for dataset in (git_doc, pip_docs):
        chunks = chunk_documents(dataset.documents, ChunkingConfig(), tokenizer=tokenizer, progress=False)
        per_document = {}
        for chunk in chunks:
            per_document.setdefault(chunk.doc_id, []).append(chunk)
        tiny = [c.chunk_id for cs in per_document.values() if len(cs) > 1 for c in cs if c.n_tokens <= 30]
        assert not tiny, tiny


def test_a_copy_under_another_name_is_read_once(tmp_path):
    folder = tmp_path / "docs"
    shutil.copytree(FIXTURES / "pip-docs", folder)
    shutil.copy(folder / "topics" / "caching.md", folder / "caching-copy.md")
    dataset = load_dataset({"format": "files", "path": str(folder)})
    assert dataset.duplicates == {"topics/caching.md": "caching-copy.md"}  # sorted walk: the copy comes first
    assert "topics/caching.md" not in by_url(dataset)


# --- Markdown links ---------------------------------------------------------------------------------

MARKDOWN_LINK = re.compile(r"\]\(|\]\[|^ {0,3}\[[^\]^]+\]:", re.MULTILINE)


def prose(text: str) -> str:
    """``text`` without its code blocks and code spans (where link syntax is literal)."""
    return re.sub(r"(`+)[\s\S]*?(?<!`)\1(?!`)", "", re.sub(r"^```[\s\S]*?^```", "", text, flags=re.MULTILINE))


def test_markdown_links_become_their_text_and_reference_definitions_disappear():
    dataset = load_dataset({"format": "files", "path": str(FIXTURES / "nodejs-api"), "near_duplicates": "keep"})
    pages = {url: document.text for url, document in by_url(dataset).items() if url.endswith(".md")}
    assert len(pages) == 4
    linking = [url for url in pages if MARKDOWN_LINK.search(prose((FIXTURES / "nodejs-api" / url).read_text(encoding="utf-8")))]
    assert sorted(linking) == ["punycode.md", "string_decoder.md", "synopsis.md"]  # querystring.md has no link
    for url, text in pages.items():
        assert not MARKDOWN_LINK.search(prose(text)), (url, MARKDOWN_LINK.search(prose(text)))
    synopsis = squash(pages["synopsis.md"])
    assert "Please see the Command-line options document for more information." in synopsis  # [Command-line options][]
    assert "An example of a web server written with Node.js" in synopsis  # [web server][]
    assert "http.md" not in synopsis and "nodejs.org/en/download" not in synopsis  # the definitions' targets
    assert "`node [options] [V8 options] [script.js | -e \"script\" | - ] [arguments]`" in synopsis  # code stays code


@pytest.mark.parametrize(("markdown", "expected"), [
    ("See [the guide](guide.md) and ![a cat](cat.png \"Cat\").", "See the guide and a cat."),
    ("Use [`fs.open()`][] here.\n\n[`fs.open()`]: fs.md#open", "Use `fs.open()` here."),
    ("A [full][ref] and a [shortcut].\n\n[ref]: a.md\n[shortcut]: <b.md> \"B\"", "A full and a shortcut."),
    ("An [undefined][] label and [brackets] stay.", "An [undefined][] label and [brackets] stay."),
    ("Code `[a](b.md)` and\n\n```\n[c](d.md)\n```", "Code `[a](b.md)` and ``` [c](d.md) ```"),
])
def test_markdown_link_cases(markdown, expected):
    assert squash(convert(markdown.encode(), ".md").text) == expected


# --- HTML permalink markers -------------------------------------------------------------------------

SPHINX_PAGE = Path("/usr/share/doc/python3/python-policy.html")  # Debian's Python Policy, built by Sphinx


def test_node_permalink_marks_leave_the_headings_clean():
    source = (FIXTURES / "nodejs-api" / "synopsis.html").read_bytes()
    assert b'<a class="mark" href="#usage"' in source  # every heading carries a "#" link to itself
    text = convert(source, ".html").text
    assert [line for line in text.split("\n") if line.startswith("#")][-3:] == ["## Usage and example", "### Usage", "### Example"]
    assert not re.search(r"^#+ .*#$", text, re.MULTILINE)


@pytest.mark.skipif(not SPHINX_PAGE.is_file(), reason="Debian's python3 documentation is not installed")
def test_sphinx_headerlinks_leave_the_headings_clean():
    source = SPHINX_PAGE.read_bytes()
    assert source.count(b'class="headerlink"') > 40
    converted = convert(source, ".html")
    assert "\u00b6" not in converted.text and converted.dropped["permalinks"] > 40
    lines = converted.text.split("\n")
    assert "# Abstract" in lines
    assert "### Navigation" not in lines  # Sphinx's role="navigation" bars are navigation


@pytest.mark.parametrize(("html", "expected"), [
    ('<h2>Setup<a class="headerlink" href="#setup" title="Permalink to this heading">\u00b6</a></h2>', "## Setup"),
    ('<p>See <a href="#usage">Usage</a>, note <a href="#fn1">[1]</a>, back <a href="#r1">\u21a9</a>.</p>',
     "See Usage, note [1], back ."),
    ('<p>Elsewhere: <a href="other.html#x">\u00b6</a></p>', "Elsewhere: \u00b6"),  # not an anchor of this page
])
def test_permalink_cases(html, expected):
    assert convert(f"<html><body>{html}</body></html>".encode(), ".html").text.strip() == expected


# --- Backslash escapes --------------------------------------------------------------------------------

IDENTIFIER = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")  # GIT_DIR, GIT_CONFIG_NOSYSTEM


def test_html_identifiers_reach_the_text_and_the_tokens_whole(git_doc):
    page = (FIXTURES / "git-doc" / "git.html").read_bytes()
    shown = BeautifulSoup(page, "html.parser").get_text()  # what a browser shows, read without markdownify
    identifiers = set(IDENTIFIER.findall(shown))
    assert len(identifiers) > 20 and "\\_" not in shown and "\\*" not in shown
    text = by_url(git_doc)["git.html"].text
    assert "\\_" not in text and "\\*" not in text
    assert identifiers <= set(IDENTIFIER.findall(text))
    tokens = set(make_tokenizer(TokenizerParams()).many([text])[0])
    assert {identifier.lower() for identifier in identifiers} <= tokens  # GIT_DIR is one term, as a query types it


def test_markdown_backslash_escapes_become_the_character_sphinx_shows(pip_docs):
    source = (FIXTURES / "pip-docs" / "topics" / "configuration.md").read_text(encoding="utf-8")
    assert "{file}`C:\\\\ProgramData\\\\pip\\\\pip.ini`" in source  # written escaped, shown with one backslash
    text = by_url(pip_docs)["topics/configuration.md"].text
    for path in ("C:\\ProgramData\\pip\\pip.ini", "%APPDATA%\\pip\\pip.ini", "%VIRTUAL_ENV%\\pip.ini"):
        assert path in text, path
    assert "\\\\" not in text


@pytest.mark.parametrize(("markdown", "expected"), [
    ("Set XDG\\_CONFIG\\_HOME to \\*.ini \\[x\\]", "Set XDG_CONFIG_HOME to *.ini [x]"),
    ("Code `a\\_b` stays\n\n```\nc\\_d \\\\\n```", "Code `a\\_b` stays ``` c\\_d \\\\ ```"),
    ("\\# not a heading, and \\# here", "\\# not a heading, and # here"),
    ("A backslash before a letter \\n or a line end\\\nstays", "A backslash before a letter \\n or a line end\\ stays"),
])
def test_backslash_escape_cases(markdown, expected):
    converted = convert(markdown.encode(), ".md").text
    assert squash(converted) == expected
    assert not list(headings(converted))
