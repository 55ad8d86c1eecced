"""Chunking tokenizes in batches (memory bounded by the batch, not the corpus): the chunks are the same."""

from __future__ import annotations

from rag import chunking
from rag.chunking import ChunkingConfig, chunk_documents
from rag.models import load_tokenizer
from rag.types import Document

TEXTS = [
    "The cat sat on the mat. It was a sunny day in Paris, and the cat liked it.",
    "Photosynthesis converts light into chemical energy. Plants, algae and bacteria do it.",
    "A short one.",
    "Tokyo is the capital of Japan. It is the most populous city. Its metropolitan area is vast.",
    "Volcanoes erupt lava and ash. Some are dormant for centuries before erupting again.",
]


def test_batched_tokenization_gives_the_same_chunks(monkeypatch):
    documents = [Document(f"d{i}", f"https://x.org/{i}", "", text) for i, text in enumerate(TEXTS)]
    config = ChunkingConfig(max_tokens=12, overlap_tokens=4, min_tokens=2)
    tokenizer = load_tokenizer()
    whole = chunk_documents(documents, config, tokenizer=tokenizer, progress=False)
    monkeypatch.setattr(chunking, "TOKENIZE_BATCH", 2)
    monkeypatch.setattr(chunking, "TOKENIZE_CHARS", 40)  # sentences tokenized a few at a time
    assert chunk_documents(documents, config, tokenizer=tokenizer, progress=False) == whole
    assert len(whole) > len(documents)  # several chunks per document: batches of chunks re-counted too
