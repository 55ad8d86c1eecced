"""The real managed SmolLM2 server through the pipeline on a handful of smoke questions: the full
top-10 fits the sized context window, identical prompts are sent once, the closed-book prompt holds
no context, and the oracle's context holds the answers."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rag.cli import main

from .conftest import REPO, SMOKE_CONFIG

pytestmark = pytest.mark.slow
MAX_TOKENS = 24


def test_smollm2_answers_from_the_full_top_10_with_baselines_and_shared_prompts(tmp_path: Path) -> None:
    """Two questions (``limit: 2``): each check holds per prompt, and two already show the twin's
    prompts sent once (8 needed, 6 distinct); every top-10 prompt is about 1,000 tokens, 6 s on 2 cores
    (four questions took twice as long and checked nothing more)."""
    config = yaml.safe_load(SMOKE_CONFIG.read_text())
    config["dataset"] = {"format": "jsonl", "corpus": str(REPO / "data/smoke/corpus.jsonl"),
                         "questions": str(REPO / "data/smoke/questions.jsonl")}
    # non_matching: keep — every list is 10 long (a BM25 list otherwise holds only the chunks sharing a
    # query term), so each prompt carries the full top-10 the context window is sized for
    bm25 = {"k1": 1.5, "b": 0.75, "non_matching": "keep"}
    config["retrievers"] = [{"name": "bm25", "type": "bm25", "params": bm25},
                            {"name": "bm25_twin", "type": "bm25", "params": bm25}]
    config["baselines"] = ["closed_book", "oracle"]
    config["generation"] = {"generator": {"type": "local", "max_tokens": MAX_TOKENS}}
    config.update(limit=2, output_dir=str(tmp_path / "runs"), cache_dir=str(tmp_path / "cache"))
    config["evaluation"]["n_resamples"] = 500
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["--config", str(path), "--quiet", "--output-dir", str(tmp_path / "run")]) == 0

    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    sizing = manifest["generator_resolved"]
    assert sizing["context_token_budget"] == 10 * (128 + 3)
    counts = manifest["generation_counts"]
    assert (counts["needed"], counts["distinct"], counts["sent"], counts["cut"]) == (8, 6, 6, 0)

    per_query = pd.read_csv(tmp_path / "run" / "per_query.csv", keep_default_na=False, na_values=[""])
    assert (per_query["generation_status"] == "answered").all()
    rows = {method: frame.set_index("qid") for method, frame in per_query.groupby("method")}
    assert (rows["bm25"]["chunks_used"] == 10).all()  # the full top-10 entered every prompt
    assert (rows["bm25"]["prompt_tokens"] + MAX_TOKENS <= sizing["n_ctx"]).all()
    assert (rows["bm25"]["answer"] == rows["bm25_twin"]["answer"]).all()
    # closed book: the model's own token count shows a prompt without any passage
    assert (rows["closed_book"]["chunks_used"] == 0).all()
    assert (rows["closed_book"]["prompt_tokens"] < 80).all() and (rows["bm25"]["prompt_tokens"] > 400).all()
    assert (rows["oracle"]["answer_in_context@10"] == 1.0).all()  # the first questions are known items
    assert rows["oracle"]["match"].notna().all() and rows["closed_book"]["answer_in_context@10"].isna().all()
