"""Files holding another file's text (rag.data.near_duplicates) on real third-party folders: Node.js's
API pages, shipped as Markdown and HTML (tests/fixtures/thirdparty/nodejs-api), one printed to PDF by
headless Chromium, and a single-file book made of three of them; Git's and pip's documentation,
which hold no page twice. The oracle is the file names: a page's formats share its stem."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag.data import load_dataset
from rag.data.near_duplicates import NearDuplicate, near_duplicates, page_name, shingles
from rag.types import Document

from .conftest import CHROMIUM, needs_chromium

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "thirdparty"
NODE = FIXTURES / "nodejs-api"
PAGES = ["punycode", "querystring", "string_decoder", "synopsis"]


def node_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "api"
    shutil.copytree(NODE, folder)
    return folder


def load(folder: Path, **options) -> object:
    return load_dataset({"format": "files", "path": str(folder), **options})


def test_every_markdown_page_is_left_out_as_the_twin_of_its_html_page(tmp_path):
    dataset = load(node_folder(tmp_path))
    assert sorted(document.url for document in dataset.documents) == [f"{page}.html" for page in PAGES]
    assert {url: (why.kind, why.kept) for url, why in dataset.near_duplicates.items()} == {
        f"{page}.md": ("twin", f"{page}.html") for page in PAGES}
    assert all(0.5 <= why.shared <= 1 for why in dataset.near_duplicates.values())
    assert dataset.files_read == len(PAGES)


def test_keep_indexes_every_file(tmp_path):
    dataset = load(node_folder(tmp_path), near_duplicates="keep")
    assert len(dataset.documents) == 2 * len(PAGES) and dataset.near_duplicates == {}


def test_a_book_made_of_pages_is_reported_and_kept_with_its_pages(tmp_path):
    folder = node_folder(tmp_path)
    for page in PAGES:  # one format only, so the pages are not twins of each other
        (folder / f"{page}.html").unlink()
    parts = [(folder / f"{page}.md").read_bytes() for page in PAGES[:3]]
    (folder / "book.md").write_bytes(b"\n\n".join(parts))  # a single-page build: the pages, concatenated
    dataset = load(folder)
    assert sorted(document.url for document in dataset.documents) == ["book.md", *(f"{page}.md" for page in PAGES)]
    assert dataset.near_duplicates["book.md"].kind == "compilation" and not dataset.near_duplicates["book.md"].left_out
    assert dataset.near_duplicates["book.md"].pages == 3


def test_a_book_with_text_of_its_own_is_kept(tmp_path):
    folder = node_folder(tmp_path)
    for page in PAGES:
        (folder / f"{page}.html").unlink()
    own = (FIXTURES / "pip-docs" / "cli" / "pip_install.rst").read_text(encoding="utf-8")  # longer than both pages
    parts = [(folder / f"{page}.md").read_text(encoding="utf-8") for page in ("punycode", "synopsis")]
    (folder / "book.md").write_text("\n\n".join([*parts, own]), encoding="utf-8")
    dataset = load(folder)
    assert "book.md" in {document.url for document in dataset.documents} and dataset.near_duplicates == {}


@needs_chromium
def test_a_page_printed_to_pdf_by_chromium_is_a_twin_of_its_html(tmp_path):
    folder = node_folder(tmp_path)
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                    f"--print-to-pdf={folder / 'querystring.pdf'}", (folder / "querystring.html").as_uri()],
                   check=True, capture_output=True, timeout=120)
    dataset = load(folder)
    assert dataset.near_duplicates["querystring.pdf"].kind == "twin"
    assert dataset.near_duplicates["querystring.pdf"].kept == "querystring.html"


def test_the_source_sphinx_copies_beside_a_page_is_its_twin(tmp_path):
    folder = tmp_path / "html"
    shutil.copytree(FIXTURES / "sphinx-build", folder)
    dataset = load(folder)
    assert [document.url for document in dataset.documents] == ["user_guide.html"]
    assert dataset.near_duplicates["_sources/user_guide.rst.txt"].kept == "user_guide.html"


@pytest.mark.parametrize("folder", ["git-doc", "pip-docs", "git-diff"])
def test_folders_that_hold_no_page_twice_lose_nothing(folder, tmp_path):
    copy = tmp_path / folder
    shutil.copytree(FIXTURES / folder, copy, symlinks=True)
    with_rule, without = load(copy), load(copy, near_duplicates="keep")
    assert with_rule.near_duplicates == {}
    assert [d.url for d in with_rule.documents] == [d.url for d in without.documents]


def test_a_gold_url_naming_a_twin_is_read_as_the_page_kept(tmp_path):
    folder = node_folder(tmp_path)
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"id": "q1", "question": "What does querystring.escape do?", "gold_urls": ["querystring.md"]}) + "\n"
        + json.dumps({"id": "q2", "question": "How is punycode encoded?",
                      "gold_urls": {"punycode.md": 1, "punycode.html": 2, "synopsis.md": 1}}) + "\n",
        encoding="utf-8")
    dataset = load(folder, questions=str(questions))
    q1, q2 = dataset.question_sets["questions"]
    assert q1.gold_urls == [["querystring.html"]]
    assert q2.relevance == {"punycode.html": 2, "synopsis.html": 1}


def test_small_pages_are_never_compared():
    text = " ".join(f"word{i}" for i in range(60))  # 56 shingles, fewer than MIN_SHINGLES
    documents = [Document(name, name, name, text, {}) for name in ("a.md", "b.md")]
    assert near_duplicates(documents) == {}
    long = " ".join(f"word{i}" for i in range(300))
    documents = [Document(name, name, name, long, {}) for name in ("b/page.md", "c/page.md", "other.md")]
    assert near_duplicates(documents) == {"c/page.md": NearDuplicate("twin", "b/page.md", 0, 1.0)}


@pytest.mark.parametrize(("walk", "kept"), [
    (["b/page.md", "c/page.md"], "b/page.md"),  # one format: the first of the walk
    (["_sources/page.rst.txt", "page.pdf", "z/page.html"], "z/page.html"),  # the page as published, wherever it is
    (["page.docx", "page.txt", "x/page.md"], "x/page.md"),
    (["a/page.pdf", "b/page.rst.txt"], "a/page.pdf"),  # plain text (a source copy) last
])
def test_twins_keep_the_first_format_of_the_kept_order_then_the_first_of_the_walk(walk, kept):
    text = " ".join(f"word{i}" for i in range(300))
    found = near_duplicates([Document(url, url, url, text, {}) for url in walk])
    assert set(found) == set(walk) - {kept} and {why.kept for why in found.values()} == {kept}


@pytest.mark.parametrize(("url", "name"), [
    ("api/assert.md", "assert"), ("_sources/Intro.rst.txt", "intro"), ("RelNotes/1.8.5.6.txt", "1.8.5.6"),
    ("a.b.HTML", "a.b"), (".md", ".md"),
])
def test_the_page_name_strips_document_suffixes_only(url, name):
    assert page_name(url) == name


def test_pages_under_different_names_are_never_twins(tmp_path):
    folder = tmp_path / "git"
    folder.mkdir()
    for page in ("git-diff-files.html", "git-diff-index.html"):  # two commands, one included option list
        shutil.copy(FIXTURES / "git-diff" / page, folder / page)
    kept = load(folder)
    assert [document.url for document in kept.documents] == ["git-diff-files.html", "git-diff-index.html"]
    vocabulary: dict[str, int] = {}
    a, b = (set(shingles(document.text, vocabulary).tolist()) for document in kept.documents)
    assert len(a & b) >= 0.7 * max(len(a), len(b))  # they share most of their text all the same


def test_shingles_do_not_depend_on_the_process():
    code = ("from rag.data.near_duplicates import shingles; import sys; "
            "print(shingles(sys.argv[1], {}).tolist())")
    text = (NODE / "synopsis.md").read_text(encoding="utf-8")
    outputs = {subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outputs) == 1 and outputs.pop().strip() == str(shingles(text, {}).tolist())


def test_the_shingles_of_a_text_are_its_distinct_five_word_runs():
    vocabulary: dict[str, int] = {}
    words = "the cat sat on the mat the cat sat on the mat".split()
    runs = {tuple(words[i : i + 5]) for i in range(len(words) - 4)}  # brute force
    assert len(shingles(" ".join(words), vocabulary)) == len(runs) == 6
    assert len(shingles("The CAT, sat; on the mat!", vocabulary)) == 2  # case and punctuation ignored
