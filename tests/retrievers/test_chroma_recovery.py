"""A damaged persistent Chroma store is reported, rebuilt and searched in the same run (real Chroma)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from rag.retrievers.chroma_store import ChromaStore, HnswParams, make_client


def vectors(n: int = 60, dim: int = 8) -> tuple[list[str], np.ndarray]:
    data = np.random.default_rng(0).normal(size=(n, dim)).astype(np.float32)
    return [f"c{i:03d}" for i in range(n)], data / np.linalg.norm(data, axis=1, keepdims=True)


def exact_top(data: np.ndarray, queries: np.ndarray, ids: list[str], k: int) -> list[list[str]]:
    return [[ids[i] for i in np.argsort(-(data @ q), kind="stable")[:k]] for q in queries]


@pytest.mark.parametrize("damage", [lambda b: b[: len(b) // 2], lambda b: b"not a database at all" * 100])
def test_a_damaged_chroma_sqlite3_is_rebuilt_in_the_same_run(tmp_path, caplog, damage) -> None:
    from chromadb.api.client import SharedSystemClient

    ids, data = vectors()
    path = tmp_path / "chroma"
    store = ChromaStore(make_client("persistent", path, "", 0), "dense", HnswParams())
    assert store.ensure("k" * 32, ids, data) is True
    del store
    SharedSystemClient.clear_system_cache()  # a new process, as far as chromadb is concerned
    database = path / "chroma.sqlite3"
    database.write_bytes(damage(database.read_bytes()))

    with caplog.at_level(logging.WARNING):
        store = ChromaStore(make_client("persistent", path, "", 0), "dense", HnswParams())
    assert "unreadable" in caplog.text and str(path) in caplog.text
    assert store.ensure("k" * 32, ids, data) is True  # rebuilt
    assert store.query(data[:5], 3) == exact_top(data, data[:5], ids, 3)
    SharedSystemClient.clear_system_cache()
    again = ChromaStore(make_client("persistent", path, "", 0), "dense", HnswParams())
    assert again.ensure("k" * 32, ids, data) is False  # the repaired store is reused
