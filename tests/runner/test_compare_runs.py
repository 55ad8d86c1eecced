"""``rag-bench compare``: runs paired on their shared questions, checked against each run's own table."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rag.cli import main
from .conftest import tiny_config, write_tiny_dataset


def run(tmp_path: Path, name: str, k1: float, questions_dir: str = "data", limit: int | None = None) -> Path:
    corpus, questions = write_tiny_dataset(tmp_path / questions_dir)
    config = tiny_config(tmp_path / name, corpus, questions,
                         retrievers=[{"name": "bm25", "type": "bm25", "params": {"k1": k1, "b": 0.75}}])
    out = tmp_path / "runs" / name
    argv = ["--config", str(config), "--output-dir", str(out), "--quiet", "--no-generation"]
    assert main(argv + (["--limit", str(limit)] if limit else [])) == 0
    return out


def test_compare_pairs_shared_questions(tmp_path: Path, capsys) -> None:
    first, second = run(tmp_path, "a", 1.2), run(tmp_path, "b", 0.1, limit=3)
    capsys.readouterr()
    out = tmp_path / "cmp"
    assert main(["compare", str(first), str(second), "--output-dir", str(out), "--n-resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("3 shared questions per method; runs: a, b") and "Verdict" in printed
    assert max(len(line) for line in printed.splitlines()) <= 100
    table = pd.read_csv(out / "comparison.csv").set_index("method")
    assert list(table.index) == ["a:bm25", "b:bm25"] and (table["questions"] == 3).all()
    # oracle: the mean of the first run's own per-query values over the 3 shared questions
    own = pd.read_csv(first / "per_query.csv").head(3)
    assert table.loc["a:bm25", "mrr"] == pytest.approx(own["mrr"].mean())
    verdict = json.loads((out / "comparison.json").read_text())["verdict"]
    assert {v["metric"] for v in verdict} >= {"mrr", "recall@3"}


def test_compare_refuses_runs_without_shared_questions(tmp_path: Path, capsys) -> None:
    first = run(tmp_path, "a", 1.2)
    other = tmp_path / "other"
    corpus, questions = write_tiny_dataset(other)
    questions.write_text(questions.read_text().replace('"id": "q', '"id": "x'))
    config = tiny_config(tmp_path / "c", corpus, questions)
    assert main(["--config", str(config), "--output-dir", str(tmp_path / "runs" / "c"), "--quiet", "--no-generation"]) == 0
    capsys.readouterr()
    assert main(["compare", str(first), str(tmp_path / "runs" / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "share no question" in err[0]
