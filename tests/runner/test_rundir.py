"""Run directories: new runs never reuse a directory; resume checks the plan; interrupted index
builds are detected and rebuilt; unreadable caches are ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.errors import ConfigError
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


def test_interrupted_index_build_is_wiped_and_rebuilt(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def build(directory: Path) -> None:
        seen.append(sorted(p.name for p in directory.iterdir()))
        (directory / "index.bin").write_text("complete")

    def crash(directory: Path) -> None:
        (directory / "half.bin").write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_with_marker(tmp_path, "dense", crash)
    assert (tmp_path / "dense.building").exists()
    build_with_marker(tmp_path, "dense", build)
    assert seen == [[]]  # the half-written file was removed before rebuilding
    assert not (tmp_path / "dense.building").exists()
    build_with_marker(tmp_path, "dense", build)
    assert seen[-1] == ["index.bin"]  # a completed index is kept for the retriever's own cache


def test_unreadable_retrieval_cache_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"q": {"chunk_ids": ["a"], "scores": [1.0], "search_ms"')  # truncated
    cache = RetrievalCache(path)
    assert cache.entries == {} and cache.missing(["q", "q"]) == ["q"]
