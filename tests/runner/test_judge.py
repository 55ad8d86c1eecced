"""The optional LLM judge: verdict parsing, agreement against hand-computed Cohen's kappa, and the real
managed SmolLM2 server judging the real SmolLM2's answers through the pipeline."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rag.cli import main
from rag.generation.judge import agreement, agreement_line, parse_verdict

from .conftest import REPO, SMOKE_CONFIG


@pytest.mark.parametrize(("reply", "verdict"), [("Yes.", 1.0), (" no, it is not", 0.0), ("YES", 1.0),
                                                ("Maybe", math.nan), ("", math.nan), (None, math.nan)])
def test_parse_verdict(reply, verdict) -> None:
    assert parse_verdict(reply) == verdict or (math.isnan(verdict) and math.isnan(parse_verdict(reply)))


def test_agreement_against_hand_computed_kappa() -> None:
    judge = [1, 1, 0, 0, 1, np.nan, 1, 0]
    match = [1, 0, 0, 0, 1, 1, 1, np.nan]
    stats = agreement(pd.DataFrame({"judge": judge, "match": match}), against=("match",))["match"]
    # the 6 rows both define: judge 1 1 0 0 1 1, match 1 0 0 0 1 1 -> 5 of 6 agree
    p_observed = 5 / 6
    p_chance = (4 / 6) * (3 / 6) + (2 / 6) * (3 / 6)  # both 1 + both 0 by the marginals
    assert stats["n"] == 6 and stats["agreement"] == pytest.approx(p_observed)
    assert stats["kappa"] == pytest.approx((p_observed - p_chance) / (1 - p_chance))
    assert agreement_line({"match": stats}) == "LLM judge agreement with match 0.83 (kappa 0.67, n = 6)"


@pytest.mark.slow
def test_smollm2_judges_answers_in_a_run(tmp_path: Path) -> None:
    """The answers come from each question's top 2 chunks (``max_chunks: 2``): the judge, not the
    context, is under test here, and a prompt of the top 10 (about 1,000 tokens) took 6 s of the run on
    2 cores (tests/runner/test_local_answers.py answers from the full top 10)."""
    config = yaml.safe_load(SMOKE_CONFIG.read_text())
    config["dataset"] = {"format": "jsonl", "corpus": str(REPO / "data/smoke/corpus.jsonl"),
                         "questions": str(REPO / "data/smoke/questions.jsonl")}
    config["retrievers"] = [{"name": "bm25", "type": "bm25", "params": {"k1": 1.5, "b": 0.75}}]
    config["baselines"] = ["closed_book"]
    config["generation"] = {"generator": {"type": "local", "max_tokens": 16, "max_chunks": 2}}
    config["evaluation"]["judge"] = {"type": "local"}
    config["evaluation"]["n_resamples"] = 500
    config.update(limit=2, output_dir=str(tmp_path / "runs"), cache_dir=str(tmp_path / "cache"))
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["--config", str(path), "--quiet", "--output-dir", str(tmp_path / "run")]) == 0

    per_query = pd.read_csv(tmp_path / "run" / "per_query.csv")
    answered = per_query[per_query["generation_status"] == "answered"]
    assert len(answered) == 4 and answered["judge"].isin([0.0, 1.0]).sum() + answered["judge"].isna().sum() == 4
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge_agreement"]["match"]["n"] == int((answered["judge"].notna() & answered["match"].notna()).sum())
    assert "judge" in manifest["timings"]
    lifts = json.loads((tmp_path / "run" / "comparison.json").read_text())["answer_lift"]
    assert {row["metric"] for row in lifts} >= {"f1", "match", "judge"}
    assert any((tmp_path / "cache" / "judge").iterdir())  # the verdicts went through the generators' cache
