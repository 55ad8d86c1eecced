"""Issue 28's red-team, item 4, on folders of documents: hostile file names, special files, a DOCX that
is small in bytes but large in work, and library warnings. Each case, through ``rag-bench run --docs``
where the terminal matters: one clear line (or it works), no traceback, no hang.

Documents are made by real tools (python-docx, headless Chromium through tests/data/conftest.py).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from rag.chunking import documents_fingerprint
from rag.cli import main
from rag.data import load_dataset
from rag.data.convert import MAX_BLOCKS
from rag.io_utils import name_text

from .conftest import needs_chromium

pytestmark = pytest.mark.slow
LATIN1_NAME = b"caf\xe9.md"  # "café.md" written by a Latin-1 system: not valid UTF-8
ESPRESSO = "Espresso is brewed by forcing hot water through finely ground coffee beans under pressure."
COLD_BREW = "Cold brew steeps for twelve hours in the fridge before it is ready to drink."


def small_folder(root: Path) -> Path:
    """Two Markdown files, one of them named by bytes that are not UTF-8, and a question file on them."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "good.md").write_text(f"# Coffee\n\n{COLD_BREW}\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(docs), LATIN1_NAME), "wb") as handle:
        handle.write(f"# Cafe\n\n{ESPRESSO}\n".encode())
    questions = [{"id": "q1", "question": "How is espresso brewed?", "answers": ["hot water"], "gold_urls": ["caf\\xe9.md"]},
                 {"id": "q2", "question": "How long does cold brew steep?", "answers": ["twelve hours"],
                  "gold_urls": ["good.md"]}]
    (root / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return docs


def docs_argv(root: Path, docs: Path, *options: str) -> list[str]:
    return ["run", "--docs", str(docs), *options, "--no-generation", "--methods", "bm25", "--quiet",
            "--output-dir", str(root / "run"), "--set", f"cache_dir={root / 'cache'}"]


def test_a_file_name_that_is_not_utf8_is_read_under_its_escaped_name(tmp_path: Path, capsys) -> None:
    """It crashed with a UnicodeEncodeError traceback (sha256_strings of the document ids)."""
    docs = small_folder(tmp_path)
    dataset = load_dataset({"format": "files", "path": str(docs)})
    assert sorted(document.url for document in dataset.documents) == ["caf\\xe9.md", "good.md"]
    assert "Espresso" in next(document.text for document in dataset.documents if document.title == "Cafe")
    assert len(documents_fingerprint(dataset.documents)) == 64
    assert main(docs_argv(tmp_path, docs, "--questions", str(tmp_path / "q.jsonl"))) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["data"]["files"] == {"read": 2, "skipped": 0}
    assert {"caf\\xe9.md", "good.md"} <= set(manifest["data"]["source_files"])
    assert "q/q1 0 caf\\x5cxe9.md 1" in (tmp_path / "run" / "runs" / "qrels.url.txt").read_text()  # TREC escapes "\\"


def test_the_one_text_form_of_a_file_name() -> None:
    assert name_text(os.fsdecode(b"caf\xe9.md")) == "caf\\xe9.md"
    assert name_text(os.fsdecode(b"a/\xff\xfe/b.md")) == "a/\\xff\\xfe/b.md"
    assert name_text("café/straße.md") == "café/straße.md"  # valid UTF-8 names are kept as they are
    assert name_text(Path(os.fsdecode(b"d\xe9j\xe0"))) == "d\\xe9j\\xe0"


def test_a_named_pipe_is_skipped_before_it_is_opened(tmp_path: Path, capsys) -> None:
    """Opening a named pipe for reading waits for a writer: the run hung forever, printing nothing.
    (Should it be opened, a writer is attached after 20 s so that the test fails instead of hanging.)"""
    docs = small_folder(tmp_path)
    pipe = docs / "pipe.md"
    os.mkfifo(pipe)
    done = threading.Event()

    def release() -> None:
        if not done.wait(20):
            with open(pipe, "wb"):  # gives a reader stuck in open() its end of file
                pass

    threading.Thread(target=release, daemon=True).start()
    started = time.monotonic()
    try:
        code = main(docs_argv(tmp_path, docs, "--questions", str(tmp_path / "q.jsonl")))
    finally:
        done.set()
    err = capsys.readouterr().err
    assert code == 0 and time.monotonic() - started < 20
    assert [line for line in err.splitlines() if "pipe.md" in line] == [
        "WARNING rag.data.files: skipped pipe.md: a named pipe (FIFO), not a regular file; not opened"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["data"]["files"] == {"read": 2, "skipped": 1}
    assert manifest["data"]["skipped_invalid"] == {"not_regular": 1}


def docx_with_paragraphs(path: Path, n: int, text: str) -> Path:
    """A DOCX made by python-docx: a heading, then ``n`` paragraphs of ``text`` (the paragraph python-docx
    writes, copied: python-docx's add_paragraph takes time that grows with the document)."""
    import docx

    document = docx.Document()
    document.add_heading("Many paragraphs", level=1)
    paragraph = document.add_paragraph(text)._p
    for _ in range(n - 1):
        paragraph.addnext(copy.deepcopy(paragraph))
    document.save(path)
    return path


def test_a_docx_beyond_the_work_budget_is_skipped_with_its_reason(tmp_path: Path, caplog) -> None:
    """A few hundred KB of empty paragraphs: 95 s for 100,000, unbounded for a million."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text(f"# Coffee\n\n{COLD_BREW}\n", encoding="utf-8")
    big = docx_with_paragraphs(docs / "empty.docx", MAX_BLOCKS + 1, "")
    assert big.stat().st_size < 200_000  # far below max_file_mb: bytes do not bound the work
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="rag.data.files"):
        dataset = load_dataset({"format": "files", "path": str(docs)})
    assert time.monotonic() - started < 60
    assert [document.url for document in dataset.documents] == ["good.md"]
    assert dataset.skipped == {"too_complex": 1}
    assert [record.getMessage() for record in caplog.records] == [
        f"skipped empty.docx: {MAX_BLOCKS + 2:,} paragraphs and table cells, more than the {MAX_BLOCKS:,} a file "
        "may hold (rag.data.convert); split the file"]


def test_a_docx_of_many_short_paragraphs_converts_in_time_linear_in_them(tmp_path: Path) -> None:
    """python-docx's ``paragraph.style`` searches the styles part for every paragraph (about 1 ms each:
    30 s for these 30,000); the text is all there, each paragraph once."""
    docs = tmp_path / "docs"
    docs.mkdir()
    docx_with_paragraphs(docs / "many.docx", 30_000, "A short line.")
    started = time.monotonic()
    dataset = load_dataset({"format": "files", "path": str(docs)})
    seconds = time.monotonic() - started
    (document,) = dataset.documents
    assert document.text.count("A short line.") == 30_000 and document.text.startswith("# Many paragraphs")
    assert seconds < 10, f"{seconds:.1f} s for 30,000 paragraphs"


@needs_chromium
def test_a_pdf_beyond_the_page_budget_is_skipped(
    good_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget is checked on the page count (here lowered to 2, so that a 3-page PDF is over it)."""
    import pypdf

    from rag.data import convert

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text(f"# Coffee\n\n{COLD_BREW}\n", encoding="utf-8")
    writer = pypdf.PdfWriter()
    for _ in range(3):
        writer.append(good_folder / "lighthouse.pdf")
    writer.write(docs / "three.pdf")
    monkeypatch.setattr(convert, "MAX_PAGES", 2)
    dataset = load_dataset({"format": "files", "path": str(docs)})
    assert dataset.skipped == {"too_complex": 1}
    assert dataset.skipped_examples == [
        "three.pdf: 3 pages, more than the 2 a file may hold (rag.data.convert); split the file"]


@needs_chromium
def test_library_warnings_name_their_file_and_each_line_is_printed_once(good_folder: Path, tmp_path: Path,
                                                                      capsys) -> None:
    """A library's warning (pypdf's "EOF marker not found", now Beautiful Soup's on an XML file named
    .html) named no file; with --docs every line came twice, since the folder is read for the
    questions and again for the run."""
    docs = tmp_path / "docs"
    shutil.copytree(good_folder, docs, symlinks=True)
    pdf = (docs / "lighthouse.pdf").read_bytes()
    (docs / "half.pdf").write_bytes(pdf[: len(pdf) // 2])  # a download cut off in the middle
    (docs / "feed.html").write_text('<?xml version="1.0"?><feed><entry>Glaciers carve valleys over many '
                                    "thousands of years.</entry></feed>", encoding="utf-8")
    (docs / "empty.md").write_text("\n", encoding="utf-8")
    assert main(docs_argv(tmp_path, docs, "--question-generator", "template", "--n-questions", "5")) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert max(map(len, err.splitlines())) <= 100, err  # wrapped to 100 columns (issue 43); read back whole:
    lines = err.replace("\n    ", " ").splitlines()
    assert len(lines) == len(set(lines)), err
    library_lines = [line for line in lines if line.startswith("WARNING py.warnings")]
    assert library_lines == ["WARNING py.warnings: feed.html: XMLParsedAsHTMLWarning: It looks like you're using an "
                             "HTML parser to parse an XML document."], lines
    assert sorted(line for line in lines if "skipped" in line) == [
        "WARNING rag.data.files: skipped empty.md: no text",
        "WARNING rag.data.files: skipped half.pdf: cannot be parsed as pdf: PdfiumError: Failed to load document "
        "(PDFium: Data format error)."]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["data"]["files"]["skipped"] == 2 and manifest["data"]["skipped_invalid"] == {"empty": 1, "unreadable": 1}
