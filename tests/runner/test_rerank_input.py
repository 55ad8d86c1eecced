"""Issue 44, item 3: a rerank reorders exactly its input's reported list. ``rrf_rerank`` (depth 10)
over ``rrf`` on the smoke config reranked chunks outside rrf's reported top-10 on 9 of 30 questions:
rrf was recomputed at the rerank's depth (dense top-10 fused with BM25 top-10) instead of served as
the run ranked it. Oracle: the run's own per-query lists (the top-10 each method reports)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rag.cli import main
from rag.testing import StandInServer, StandInSettings

from .conftest import SMOKE_CONFIG

pytestmark = pytest.mark.slow


def test_every_reranks_top_10_is_its_inputs_top_10_on_every_question(tmp_path: Path) -> None:
    config = yaml.safe_load(SMOKE_CONFIG.read_text())
    for key in ("corpus", "questions"):
        config["dataset"][key] = str((SMOKE_CONFIG.parent / config["dataset"][key]).resolve())
    with StandInServer(StandInSettings()) as server:
        reranker = {"type": "endpoint", "model": "stand-in", "base_url": server.base_url, "max_retries": 0}
        config["retrievers"] += [
            {"name": "rrf_rerank", "type": "rerank", "params": {"input": "rrf", "depth": 10, "reranker": reranker}},
            {"name": "bm25_rerank", "type": "rerank", "params": {"input": "bm25", "depth": 5, "reranker": reranker}}]
        config.update(cache_dir=str(tmp_path / "cache"), output_dir=str(tmp_path / "runs"))
        path = tmp_path / "smoke.yaml"
        path.write_text(yaml.safe_dump(config))
        assert main(["--config", str(path), "--output-dir", str(tmp_path / "run"), "--no-generation", "--quiet"]) == 0
    per_query = pd.read_csv(tmp_path / "run" / "per_query.csv")
    lists = {(row.method, row.qid): json.loads(row.retrieved_chunks) for row in per_query.itertuples()}
    qids = sorted(set(per_query["qid"]))
    assert len(qids) == 30
    for rerank, source, depth in (("rrf_rerank", "rrf", 10), ("bm25_rerank", "bm25", 5)):
        for qid in qids:
            reranked, top = lists[(rerank, qid)], lists[(source, qid)][:depth]
            assert set(reranked) == set(top), (rerank, qid)  # exactly the input's reported top-depth
