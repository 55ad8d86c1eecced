"""Huge documents are chunked in bounded memory (issue 23, item 12): the Python memory allocated while
a 2 MB Markdown file is read through the ``files`` data set and chunked peaks under 10x its size
(tracemalloc; the offsets of one whole-document tokenization alone took about 100x). The resident
memory of a 20 MB document is measured by scripts/measure_chunking_memory.py (docs/data.md)."""

from __future__ import annotations

import importlib.util
import tracemalloc
from pathlib import Path

from rag.chunking import chunk_documents
from rag.data import load_dataset
from rag.models import load_tokenizer

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "measure_chunking_memory.py"


def make_text(n_bytes: int) -> str:
    spec = importlib.util.spec_from_file_location("measure_chunking_memory", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_text(n_bytes)


def test_a_huge_document_is_read_and_chunked_in_memory_under_10x_its_size(tmp_path):
    tokenizer = load_tokenizer()
    (tmp_path / "huge.md").write_text(make_text(2_000_000), encoding="utf-8")
    size = (tmp_path / "huge.md").stat().st_size
    tracemalloc.start()
    try:
        dataset = load_dataset({"format": "files", "path": str(tmp_path)})
        chunks = chunk_documents(dataset.documents, tokenizer=tokenizer, progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(chunks) > 1000 and chunks[-1].text in dataset.documents[0].text
    assert peak < 10 * size, f"peak {peak / size:.1f}x the document's size"
