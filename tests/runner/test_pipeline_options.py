"""CLI options through the real pipeline on the tiny BM25 data set: --methods builds the fusion's
inputs but reports only what was asked, --limit cuts every question set, --set overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rag.cli import main

from .conftest import tiny_config, write_tiny_dataset

pytestmark = pytest.mark.slow


def test_methods_limit_and_overrides(tmp_path: Path) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    retrievers = [
        {"name": "bm25a", "type": "bm25", "params": {"k1": 1.2}},
        {"name": "bm25b", "type": "bm25", "params": {"k1": 0.5, "b": 0.3}},
        {"name": "fused", "type": "rrf", "params": {"retrievers": ["bm25a", "bm25b"], "k": 60}},
    ]
    config = tiny_config(tmp_path, corpus, questions, retrievers=retrievers)
    argv = ["--config", str(config), "--quiet", "--methods", "fused", "--limit", "2", "--no-generation",
            "--set", "top_k=2", "--output-dir", str(tmp_path / "run")]
    assert main(argv) == 0
    table = pd.read_csv(tmp_path / "run" / "comparison.csv")
    assert table["method"].tolist() == ["fused"] and table["questions"].tolist() == [2]
    per_query = pd.read_csv(tmp_path / "run" / "per_query.csv")
    assert per_query["retrieved_chunks"].map(lambda ids: len(json.loads(ids))).max() <= 2
    assert set(per_query["generation_status"]) == {"not requested"}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert {"index:bm25a", "index:bm25b", "retrieve:fused"} <= set(manifest["timings"])
    assert manifest["config"]["limit"] == 2 and manifest["config"]["generation"] is None
    assert manifest["retrievers_resolved"]["bm25b"]["b"] == 0.3
    assert sorted(p.name for p in (tmp_path / "run" / "runs").iterdir()) == [
        "fused.trec", "fused.url.trec", "fused.url@3.trec", "qrels.chunk.txt", "qrels.url.txt"]
