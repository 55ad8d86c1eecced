"""A rerank method in a run config: its input must be configured (checked at load, one line naming
the key), and its retrieval cache key changes with every reranker setting."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rag.config import config_from_mapping
from rag.errors import ConfigError
from rag.runner.retrieval import RetrievalStage
from rag.runner.timing import StageTimer

REPO = Path(__file__).resolve().parents[2]
RERANKER = {"type": "endpoint", "model": "m", "base_url": "http://127.0.0.1:8000/v1"}


def config_with(tmp_path, *methods):
    raw = yaml.safe_load((REPO / "configs" / "smoke.yaml").read_text())
    raw["retrievers"] = [{"name": "bm25", "type": "bm25", "params": {}}, *methods]
    raw.update(cache_dir=str(tmp_path / "cache"), output_dir=str(tmp_path / "runs"))
    return config_from_mapping(raw, REPO / "configs")


def test_an_input_that_is_not_configured_is_refused_at_load(tmp_path):
    with pytest.raises(ConfigError) as caught:
        config_with(tmp_path, {"name": "rr", "type": "rerank", "params": {"input": "dense", "reranker": RERANKER}})
    assert caught.value.key == "retrievers.rr.params.input" and "needs ['dense']" in str(caught.value)


def test_a_rerank_of_itself_is_a_cycle(tmp_path):
    with pytest.raises(ConfigError) as caught:
        config_with(tmp_path, {"name": "rr", "type": "rerank", "params": {"input": "rr", "reranker": RERANKER}})
    assert caught.value.key == "retrievers.rr.params.input" and "cycle" in str(caught.value)


@pytest.mark.parametrize("change", [{"depth": 20}, {"reranker": {**RERANKER, "model": "other"}},
                                    {"reranker": {**RERANKER, "base_url": "http://127.0.0.1:8001/v1"}},
                                    {"reranker": {"type": "llm"}}])
def test_the_cache_key_follows_the_reranker_settings(tmp_path, change):
    def cache_path(params):
        config = config_with(tmp_path, {"name": "rr", "type": "rerank", "params": params})
        return RetrievalStage(config, [], "chunks", StageTimer(), progress=False)._cache_path("rr")

    base = {"input": "bm25", "depth": 50, "reranker": RERANKER}
    assert cache_path(base) == cache_path(dict(base))
    assert cache_path(base) != cache_path({**base, **change})
