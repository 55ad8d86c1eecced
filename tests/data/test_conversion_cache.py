"""A folder's converted files are cached per content and converted by worker processes when there
are many (rag.data.conversions). Oracles: the load of the same real folder with no cache and no
worker (the converters called one after another in this process), which every cached, pooled and
warm load must equal to the last field; the modules' own imports, found by Python's parser; the
warnings pypdf logs on a damaged PDF, which every load must log again."""

from __future__ import annotations

import ast
import json
import logging
import os
import shutil
from importlib import util
from pathlib import Path

import pytest

from rag.code_version import imported_modules
from rag.data import conversions, load_dataset
from rag.data.conversions import ConversionCache, FileBytes, FolderConverter, convert_noting, converter_version

THIRDPARTY = Path(__file__).resolve().parents[1] / "fixtures" / "thirdparty"


def snapshot(dataset) -> dict:
    """Everything a load returns that a conversion could change."""
    return {
        "documents": [(d.doc_id, d.url, d.title, d.text, d.metadata) for d in dataset.documents],
        "skipped": dataset.skipped, "skipped_examples": dataset.skipped_examples, "generated": dataset.generated,
        "duplicates": dataset.duplicates, "cleaning": dataset.cleaning, "boilerplate": dataset.boilerplate,
        "near_duplicates": sorted(dataset.near_duplicates), "files_read": dataset.files_read,
    }


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Every third-party fixture (Sphinx, Doxygen, Javadoc, rustdoc, MkDocs, mdBook builds, Git's
    manual pages, Node.js pages in two formats, pip's sources, a typeset PDF: 60-odd real files) in
    one folder."""
    root = tmp_path_factory.mktemp("thirdparty") / "docs"
    shutil.copytree(THIRDPARTY, root, symlinks=True)
    return root


@pytest.fixture(scope="module")
def serial(folder: Path, tmp_path_factory) -> dict:
    patch = pytest.MonkeyPatch()
    patch.setattr(conversions, "POOL_AFTER", 10 ** 9)
    try:
        return snapshot(load_dataset({"format": "files", "path": str(folder)}))
    finally:
        patch.undo()


def test_a_cold_pooled_load_and_a_warm_one_equal_the_serial_load(folder, serial, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(conversions, "usable_cpus", lambda: 2)  # a pool on a 1-CPU machine too
    monkeypatch.setattr(conversions, "POOL_AFTER", 4)  # the pool takes all files after the 4th
    assert len(serial["documents"]) > 30
    cold = snapshot(load_dataset({"format": "files", "path": str(folder)}, cache_dir=tmp_path))
    assert cold == serial
    cached = list((tmp_path / "converted").rglob("*.json"))
    assert len(cached) > 30
    monkeypatch.setattr(conversions, "convert", lambda data, suffix: pytest.fail("a warm load converted a file"))
    assert snapshot(load_dataset({"format": "files", "path": str(folder)}, cache_dir=tmp_path)) == serial


def test_what_a_library_warned_is_logged_again_on_every_load(tmp_path, caplog, monkeypatch) -> None:
    """An XML file named .html: Beautiful Soup warns and reads it, so it is cached, warnings and all;
    a PDF cut in the middle is unreadable, so it is converted again on every load. (Before PDFium,
    pypdf's "EOF marker not found" was the warning; PDFium reads such a file and warns of nothing.)"""
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    pdf = (THIRDPARTY / "pdfs" / "bzip2-manual.pdf").read_bytes()
    (pdfs / "feed.html").write_text('<?xml version="1.0"?><feed><entry>Glaciers carve valleys.</entry></feed>',
                                    encoding="utf-8")
    truncated = pdf[: len(pdf) // 2]  # a download cut off
    (pdfs / "truncated.pdf").write_bytes(truncated)
    expected = [("py.warnings", logging.WARNING,
                 "feed.html: XMLParsedAsHTMLWarning: It looks like you're using an HTML parser to parse an XML document.")]
    real_convert = conversions.convert
    for load in ("cold", "warm"):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            dataset = load_dataset({"format": "files", "path": str(pdfs)}, cache_dir=tmp_path / "cache")
        lines = [(record.name, record.levelno, record.getMessage()) for record in caplog.records]
        assert all(line in lines for line in expected), (load, lines)
        assert [d.url for d in dataset.documents] == ["feed.html"]
        assert dataset.skipped == {"unreadable": 1}, load
        monkeypatch.setattr(conversions, "convert", lambda data, suffix: real_convert(data, suffix) if data == truncated
                            else pytest.fail("the cached file was converted again"))


def test_a_library_log_record_is_kept_as_a_note(monkeypatch) -> None:
    """A log record a library writes while converting (pypdf wrote them; no converter's library does
    now) is kept with the conversion, by its logger's name."""
    real_convert = conversions.convert

    def logs(data: bytes, suffix: str):
        logging.getLogger("a.library").warning("careful with %s", "this file")
        return real_convert(data, suffix)

    monkeypatch.setattr(conversions, "convert", logs)
    assert convert_noting(b"# Title\n\nSome text.\n", ".md").notes == (("a.library", logging.WARNING,
                                                                         "careful with this file"),)


def test_a_file_is_converted_again_when_a_worker_dies(folder, monkeypatch) -> None:
    """A worker killed while converting (out of memory, a signal): that file and the rest are
    converted in this process, with the same result."""
    parent, real_convert = os.getpid(), conversions.convert

    def dies_in_a_worker(data: bytes, suffix: str):
        if os.getpid() != parent:
            os._exit(1)
        return real_convert(data, suffix)

    files = sorted(path for path in (folder / "git-doc").iterdir() if path.suffix == ".html" and not path.is_symlink())
    jobs = [(path.name, FileBytes(path.read_bytes(), ".html", path.name)) for path in files]
    expected = [(name, convert_noting(file.data, ".html")) for name, file in jobs]
    monkeypatch.setattr(conversions, "convert", dies_in_a_worker)
    monkeypatch.setattr(conversions, "POOL_AFTER", 0)
    assert list(FolderConverter(None, workers=2).converted(jobs)) == expected


def test_byte_failures_are_cached_and_parse_errors_are_not(tmp_path) -> None:
    cache = ConversionCache(tmp_path)
    empty, damaged = convert_noting(b"  \n", ".md"), convert_noting(b"%PDF-1.7\nnot a PDF\n", ".pdf")
    assert empty.unreadable[0] == "empty" and damaged.unreadable[0] == "unreadable"
    cache.put("e", ".md", empty)
    cache.put("d", ".pdf", damaged)
    assert cache.get("e", ".md") == empty
    assert cache.get("e", ".txt") is None and cache.get("d", ".pdf") is None


def test_an_unreadable_cache_file_is_converted_again(tmp_path, caplog) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nThe only sentence of this file.\n", encoding="utf-8")
    config = {"format": "files", "path": str(tmp_path / "docs")}
    first = load_dataset(config, cache_dir=tmp_path / "cache")
    [entry] = (tmp_path / "cache" / "converted").rglob("*.json")
    entry.write_text('{"converted": {"te', encoding="utf-8")  # cut off mid-write by another tool
    with caplog.at_level(logging.WARNING):
        again = load_dataset(config, cache_dir=tmp_path / "cache")
    assert snapshot(again) == snapshot(first)
    assert any("ignoring unreadable conversion cache" in record.getMessage() for record in caplog.records)
    assert json.loads(entry.read_text(encoding="utf-8"))["converted"]["text"] == first.documents[0].text


def _rag_imports(module: str) -> set[str]:
    """The ``rag`` modules ``module`` imports at any depth, imports inside functions included, found
    by Python's own parser (the oracle for the line pattern :func:`imported_modules` reads)."""
    found, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        source = Path(util.find_spec(name).origin)
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rag":
                todo.append(node.module)
            elif isinstance(node, ast.Import):
                todo.extend(alias.name for alias in node.names if alias.name.split(".")[0] == "rag")
    return found


@pytest.mark.parametrize("module", ["rag.data.convert", "rag.chunking", "rag.runner.questions"])
def test_the_code_version_covers_every_module_imported(module) -> None:
    assert _rag_imports(module) <= set(imported_modules(module))


def test_the_converter_version_changes_with_a_module_the_converters_import(edit_module) -> None:
    before = converter_version()
    edit_module("rag.data.generated")  # rag.data.generated with one more rule, say
    assert converter_version() != before
