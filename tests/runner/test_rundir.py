"""Run directories: new runs never reuse a directory; resume checks the plan; index builds hold a
lock and leave an interrupted build's work to the retriever; unreadable caches are ignored."""

from __future__ import annotations

import threading
import json
from pathlib import Path

import pytest

from rag.errors import ConfigError
from rag.retrievers import IndexStorage
from rag.runner.retrieval import RetrievalCache, build_with_marker
from rag.runner.rundir import PLAN_FILE, open_run_directory

PLAN = {"config": {"name": "x", "top_k": 10}}


def test_new_runs_get_distinct_directories(tmp_path: Path) -> None:
    first = open_run_directory(tmp_path, "x", PLAN, None, resume=False)
    second = open_run_directory(tmp_path, "x", PLAN, None, resume=False)
    assert first.path != second.path and first.path.parent == second.path.parent == tmp_path / "x"
    assert (first.path / PLAN_FILE).is_file() and not first.resumed


def test_non_empty_output_dir_is_refused_without_resume(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / "comparison.csv").write_text("precious")
    with pytest.raises(ConfigError, match="not empty") as caught:
        open_run_directory(tmp_path, "x", PLAN, target, resume=False)
    assert caught.value.key == "--output-dir"
    assert (target / "comparison.csv").read_text() == "precious"


def test_resume_reuses_the_directory_and_checks_the_plan(tmp_path: Path) -> None:
    run = open_run_directory(tmp_path, "x", PLAN, tmp_path / "out", resume=False)
    again = open_run_directory(tmp_path, "x", PLAN, tmp_path / "out", resume=True)
    assert again.path == run.path and again.resumed
    latest = open_run_directory(tmp_path, "x", PLAN, None, resume=False)
    assert open_run_directory(tmp_path, "x", PLAN, None, resume=True).path == latest.path
    changed = {"config": {"name": "x", "top_k": 20}}
    with pytest.raises(ConfigError, match=r"different configuration \(differs in: config.top_k\)"):
        open_run_directory(tmp_path, "x", changed, tmp_path / "out", resume=True)
    with pytest.raises(ConfigError, match="no earlier run"):
        open_run_directory(tmp_path, "never", PLAN, None, resume=True)


def test_index_build_keeps_an_interrupted_builds_work_for_the_retriever(tmp_path: Path) -> None:
    root = tmp_path / "index"

    def crash(storage: IndexStorage) -> None:
        storage.own.mkdir(parents=True)
        (storage.own / "shard.npz").write_text("finished part")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_with_marker(root, "dense", crash)
    seen: list[tuple[IndexStorage, list[str]]] = []
    build_with_marker(root, "dense", lambda storage: seen.append((storage, sorted(p.name for p in storage.own.iterdir()))))
    assert seen == [(IndexStorage(root / "dense", tmp_path / "embeddings"), ["shard.npz"])]  # nothing wiped


def test_concurrent_builds_of_one_index_wait_for_each_other(tmp_path: Path) -> None:
    inside, release, order = threading.Event(), threading.Event(), []

    def slow(storage: IndexStorage) -> None:
        order.append("first in")
        inside.set()
        release.wait(10)
        order.append("first out")

    first = threading.Thread(target=build_with_marker, args=(tmp_path, "dense", slow))
    first.start()
    inside.wait(10)
    second = threading.Thread(target=build_with_marker, args=(tmp_path, "dense", lambda storage: order.append("second")))
    second.start()
    second.join(0.3)
    assert second.is_alive() and order == ["first in"]  # blocked on the lock
    release.set()
    first.join(10)
    second.join(10)
    assert order == ["first in", "first out", "second"]


def test_unreadable_retrieval_cache_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"q": {"chunk_ids": ["a"], "scores": [1.0], "search_ms"')  # truncated
    cache = RetrievalCache(path, {"a"})
    assert cache.entries == {} and cache.missing(["q", "q"]) == ["q"]


def test_retrieval_cache_entries_naming_unknown_chunks_are_damaged(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    entries = {"good": {"chunk_ids": ["a", "b"], "scores": [2.0, 1.0], "search_ms": 1.0},
               "unknown": {"chunk_ids": ["a", "zz"], "scores": [2.0, 1.0], "search_ms": 1.0},
               "short": {"chunk_ids": ["a", "b"], "scores": [2.0], "search_ms": 1.0},
               "twice": {"chunk_ids": ["a", "a"], "scores": [2.0, 1.0], "search_ms": 1.0}}
    path.write_text(json.dumps(entries))
    cache = RetrievalCache(path, {"a", "b"})
    assert list(cache.entries) == ["good"] and cache.missing(list(entries)) == ["unknown", "short", "twice"]
