"""A real unjudged run shared by the judging tests: the smoke corpus (41 Wikipedia articles) with
12 of its questions written without gold, run once per session through the CLI (MiniLM + Chroma,
BM25, RRF, convex fusion), plus the same 12 questions with their gold, for the oracle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rag.cli import main
from rag.resources import builtin_config, data_dir

SMOKE_CONFIG = builtin_config("smoke")
N_QUESTIONS = 12


def write_questions(path: Path, keep_gold: bool) -> Path:
    lines = (data_dir("smoke") / "questions.jsonl").read_text(encoding="utf-8").splitlines()[:N_QUESTIONS]
    records = [json.loads(line) for line in lines]
    if not keep_gold:
        for record in records:
            record.pop("gold_urls")
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def smoke_run(root: Path, questions: Path, name: str) -> Path:
    run_dir = root / name
    argv = ["run", "--config", str(SMOKE_CONFIG), "--no-generation", "--quiet", "--output-dir", str(run_dir),
            "--set", f"cache_dir={root / 'cache'}", "--set", f"dataset.questions={questions}"]
    assert main(argv) == 0
    return run_dir


@pytest.fixture(scope="session")
def judging_runs(tmp_path_factory) -> dict[str, Path]:
    """``unjudged``: the run with a pool to judge; ``gold``: the same questions with their gold."""
    root = tmp_path_factory.mktemp("judging")
    unjudged = smoke_run(root, write_questions(root / "mine.jsonl", keep_gold=False), "unjudged")
    gold = smoke_run(root, write_questions(root / "mine-gold.jsonl", keep_gold=True), "gold")
    return {"unjudged": unjudged, "gold": gold, "root": root}


@pytest.fixture
def run_copy(judging_runs, tmp_path) -> Path:
    """A fresh copy of the unjudged run directory, for a test that writes grades."""
    return Path(shutil.copytree(judging_runs["unjudged"], tmp_path / "run"))
