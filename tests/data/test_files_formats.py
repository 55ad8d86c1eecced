"""The ``files`` data set on real documents (tests/data/conftest.py): text in order, titles, relative
URLs, headings as section labels of chunks that never cross a heading."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag.chunking import ChunkingConfig, chunk_documents
from rag.data import load_dataset
from rag.data.files import glob_regex
from rag.models import load_tokenizer

from .conftest import (
    DOCX_SENTENCES, HTML_SENTENCES, MD_CONFIGURE, MD_INSTALL, PDF_SENTENCES, needs_chromium,
)


def squash(text: str) -> str:
    return " ".join(text.split())


def assert_in_order(text: str, sentences: list[str]) -> None:
    flat = squash(text)
    positions = [flat.find(sentence) for sentence in sentences]
    assert all(p >= 0 for p in positions), [s for s, p in zip(sentences, positions) if p < 0]
    assert positions == sorted(positions)


@pytest.fixture(scope="module")
def dataset(good_folder):
    return load_dataset({"format": "files", "path": str(good_folder)})


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def by_url(dataset):
    return {document.url: document for document in dataset.documents}


def test_one_document_per_supported_file_with_relative_urls(dataset, good_folder):
    urls = sorted(by_url(dataset))
    expected = ["coffee.docx", "glaciers.html", "guide/setup.md", "notes.rst", "plain.txt"]
    if (good_folder / "lighthouse.pdf").exists():
        expected.append("lighthouse.pdf")
    assert urls == sorted(expected)  # .hidden.md and image.png are not matched by the default globs
    assert all(document.doc_id == document.url for document in dataset.documents)
    assert dataset.files_read == len(expected) and dataset.files_skipped == 0 and dataset.skipped == {}
    assert dataset.source_root == good_folder.resolve()
    assert dataset.question_sets == {}


def test_titles_from_front_matter_html_title_first_heading_or_file_name(dataset):
    titles = {url: document.title for url, document in by_url(dataset).items()}
    assert titles["guide/setup.md"] == "Setup guide"  # front matter
    assert titles["glaciers.html"] == "Glaciers"  # <title>
    assert titles["notes.rst"] == "Notes"  # first heading
    assert titles["coffee.docx"] == "Cold brew"  # first heading (empty core title)
    assert titles["plain.txt"] == "plain"  # file name


def test_known_sentences_in_order(dataset):
    documents = by_url(dataset)
    assert_in_order(documents["guide/setup.md"].text, [MD_INSTALL, MD_CONFIGURE])
    assert "author: Someone" not in documents["guide/setup.md"].text  # front matter dropped
    assert_in_order(documents["glaciers.html"].text, HTML_SENTENCES + ["A link stays as text."])
    assert "script text" not in documents["glaciers.html"].text and "example.org" not in documents["glaciers.html"].text
    assert_in_order(documents["coffee.docx"].text, DOCX_SENTENCES[:2] + ["Ratio | 1:8", DOCX_SENTENCES[2]])
    assert_in_order(documents["notes.rst"].text, ["The notes start here.", "One fact.", "A detail of the first part.",
                                                  "Another fact."])


@needs_chromium
def test_pdf_printed_by_chromium_keeps_its_sentences_in_order(dataset):
    document = by_url(dataset)["lighthouse.pdf"]
    assert_in_order(document.text, PDF_SENTENCES)
    assert document.title == "Lighthouse"  # the PDF's metadata title (Chromium writes <title>)


def test_headings_become_markdown_headings(dataset):
    documents = by_url(dataset)
    headings = {url: re.findall(r"^(#+) (.+)$", document.text, re.M) for url, document in documents.items()}
    assert headings["glaciers.html"] == [("#", "Ice"), ("##", "Meltwater")]
    assert headings["coffee.docx"] == [("#", "Cold brew"), ("##", "Method")]
    assert headings["notes.rst"] == [("#", "Notes"), ("##", "First part"), ("###", "Detail"), ("##", "Second part")]


def heading_lines(text: str) -> list[int]:
    """Indices of the lines of ``text`` that are headings (an independent line-by-line oracle that
    knows fenced code blocks)."""
    lines, fenced = [], False
    for index, line in enumerate(text.split("\n")):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            lines.append(index)
    return lines


def test_chunks_never_cross_a_heading_and_carry_their_section(dataset, tokenizer):
    config = ChunkingConfig(max_tokens=64, overlap_tokens=8, min_tokens=10, min_section_tokens=10)
    chunks = chunk_documents(dataset.documents, config, tokenizer=tokenizer, progress=False)
    setup = [chunk for chunk in chunks if chunk.url == "guide/setup.md"]
    assert len(setup) >= 6  # a document of several chunks
    for chunk in chunks:  # the stated rule: only sections shorter than min_section_tokens are joined to another
        lines = chunk.text.split("\n")
        cuts = [0, *[i for i in heading_lines(chunk.text) if i > 0], len(lines)]
        parts = ["\n".join(lines[a:b]) for a, b in zip(cuts, cuts[1:])]
        sizes = [len(tokenizer(part, add_special_tokens=False)["input_ids"]) for part in parts]
        assert sum(size >= 10 for size in sizes) <= 1, (chunk, sizes)
        assert chunk.n_tokens <= 64
    sections = {chunk.section for chunk in setup}
    assert sections == {"Setup guide › Setup",  # '# Setup' has 6 tokens of its own: its first child joins it
                        "Setup guide › Setup › Installation", "Setup guide › Setup › Installation › Configuration"}
    install = next(chunk for chunk in setup if MD_INSTALL in squash(chunk.text))
    assert install.text.startswith("# Setup") and install.section == "Setup guide › Setup"  # the heading both lie under
    assert [c.section for c in setup if "# Setup" not in c.text][0] == "Setup guide › Setup › Installation"
    assert "# a shell comment" in squash(" ".join(c.text for c in setup))  # code kept, not a heading
    glaciers = [chunk for chunk in chunks if chunk.url == "glaciers.html"]
    assert [chunk.section for chunk in glaciers] == ["Glaciers › Ice", "Glaciers › Ice › Meltwater"]
    notes = {chunk.section for chunk in chunks if chunk.url == "notes.rst"}
    assert notes == {"Notes"}  # every section is short: each joins the one before it, all under '# Notes'
    assert [c.position for c in setup] == list(range(len(setup)))


def test_section_prefix_is_a_contextual_header_within_budget(dataset, tokenizer):
    config = ChunkingConfig(max_tokens=64, overlap_tokens=8, min_tokens=10, section_prefix=True)
    chunks = chunk_documents(dataset.documents, config, tokenizer=tokenizer, progress=False)
    for chunk in chunks:
        assert chunk.text.startswith(chunk.section + "\n\n")
        assert chunk.n_tokens == len(tokenizer(chunk.text, add_special_tokens=False)["input_ids"]) <= 64
    plain = chunk_documents(dataset.documents, config.model_copy(update={"section_prefix": False}),
                            tokenizer=tokenizer, progress=False)
    assert len(chunks) >= len(plain)  # the header takes budget from the text


def test_headings_off_chunks_across_sections(dataset, tokenizer):
    config = ChunkingConfig(max_tokens=64, overlap_tokens=8, min_tokens=10, headings=False)
    chunks = [c for c in chunk_documents(dataset.documents, config, tokenizer=tokenizer, progress=False)
              if c.url == "guide/setup.md"]
    assert {chunk.section for chunk in chunks} == {"Setup guide"}
    crossing = [c for c in chunks if (heads := heading_lines(c.text)) != list(range(len(heads)))]
    assert crossing  # without headings, some chunk runs from one section into the next


def test_include_and_exclude_globs(good_folder):
    only_md = load_dataset({"format": "files", "path": str(good_folder), "include": ["**/*.md"]})
    assert [d.url for d in only_md.documents] == ["guide/setup.md"]
    no_guide = load_dataset({"format": "files", "path": str(good_folder), "exclude": ["guide", "*.docx"]})
    assert "guide/setup.md" not in by_url(no_guide) and "coffee.docx" not in by_url(no_guide)
    hidden = load_dataset({"format": "files", "path": str(good_folder), "include": [".hidden.md"]})
    assert [d.url for d in hidden.documents] == [".hidden.md"]  # named explicitly, a dot file is read


@pytest.mark.parametrize("pattern, path, matches", [
    ("**/*.md", "a.md", True), ("**/*.md", "x/y/a.md", True), ("*.md", "x/a.md", False),
    ("**/*.md", ".git/a.md", False), ("**/*.md", "x/.a.md", False), ("guide/**", "guide/a/b.txt", True),
    ("doc?.txt", "doc1.txt", True), ("doc?.txt", "doc12.txt", False), ("[ab].md", "b.md", True),
    ("[!ab].md", "b.md", False), ("a.md", "xa.md", False),
])
def test_glob_semantics(pattern, path, matches):
    assert bool(glob_regex(pattern).match(path)) is matches


def test_demo_folder_config_reads_this_projects_docs_and_chunking_settings_key_the_cache(tmp_path, tokenizer):
    from rag.config import load_config
    from rag.chunking import cached_chunks

    docs = Path(__file__).resolve().parents[2] / "docs"  # the demo of `rag-bench run --docs docs`
    fingerprints = {}
    for headings in ("true", "false", "true"):
        config = load_config(Path("documents"), [f"dataset.path={docs}", f"cache_dir={tmp_path}",
                                                 f"chunking.headings={headings}"])
        dataset = load_dataset(config.dataset)
        chunks, fingerprint = cached_chunks(dataset.documents, config.chunking, config.cache_dir, progress=False)
        assert fingerprints.setdefault(headings, fingerprint) == fingerprint  # the second time: from the cache
        per_document = {url: sum(chunk.url == url for chunk in chunks) for url in (d.url for d in dataset.documents)}
        assert len(per_document) >= 5 and min(per_document.values()) >= 2, per_document  # multi-chunk documents
        assert all(not url.startswith("/") for url in per_document)
    assert fingerprints["true"] != fingerprints["false"]
    assert len(list((tmp_path / "chunks").iterdir())) == 2  # one cache entry per setting
