"""Issue 44, item 2: a stage that gives nothing usable for a question (a multi_query reply with no
usable line, a reranker reply without a usable score) is a failed stage: counted, named on the first
lines of the run's output and in the manifest, and the method's results on that set withheld (its
rows leave the comparison), never its input's ranking under its name. A method over a failed one
(a rerank of it) fails on the same questions."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evaluation import read_run
from rag.cli import main
from rag.testing import StandInServer, StandInSettings

from .conftest import tiny_config, write_tiny_dataset

pytestmark = pytest.mark.slow


def multi_query(server: StandInServer, reply: str) -> dict:
    """A ``multi_query`` transform whose every reply is ``reply`` (the stand-in's scripted reply)."""
    generator = {"type": "openai", "model": "stand-in", "base_url": server.base_url,
                 "api_key_env": "RAG_TEST_NO_SUCH_VAR", "max_retries": 0}
    return {"type": "multi_query", "generator": generator, "user_prompt": f"[[reply:{json.dumps(reply)}]] {{question}}"}


def test_a_multi_query_reply_without_a_usable_line_is_withheld_and_named_first(tmp_path: Path, capsys) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    with StandInServer(StandInSettings()) as server:
        mq = multi_query(server, "1.\n2. {question}\n-")  # list markers and the question echoed: no usable line
        config = tiny_config(tmp_path, corpus, questions, retrievers=[
            {"name": "bm25", "type": "bm25", "params": {}},
            {"name": "bm25_mq", "type": "bm25", "params": {"query": mq}},
            {"name": "mq_rerank", "type": "rerank", "params": {"input": "bm25_mq", "depth": 3, "reranker": {
                "type": "endpoint", "model": "stand-in", "base_url": server.base_url, "max_retries": 0}}},
        ])
        code = main(["--config", str(config), "--output-dir", str(tmp_path / "run"), "--no-generation"])
        assert server.stats.rerank_requests <= 1  # the preflight at most: nothing of a failed input is reranked
    printed = capsys.readouterr()
    assert code == 0, printed.err
    out = " ".join(printed.out.split())  # printed lines are wrapped at 100 columns
    assert out.startswith("WARNING stages: bm25_mq failed on 4 of 4 questions of questions (multi_query:"), out[:600]
    assert "mq_rerank failed on 4 of 4 questions" in out and "input bm25_mq: multi_query: the reply holds no usable line" in out
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "partial" and manifest["stages"]["failed_questions"] == 8
    assert {w["method"] for w in manifest["stages"]["withheld"]} == {"bm25_mq", "mq_rerank"}
    table = pd.read_csv(tmp_path / "run" / "comparison.csv") if (tmp_path / "run" / "comparison.csv").is_file() else None
    comparison = json.loads((tmp_path / "run" / "comparison.json").read_text())
    assert "bm25_mq" not in json.dumps(comparison.get("table", comparison))  # no mean, test or verdict
    if table is not None:
        assert set(table["method"]) == {"bm25"}
    per_query = pd.read_csv(tmp_path / "run" / "per_query.csv")
    failed = per_query[per_query["method"] == "bm25_mq"]
    assert failed["stage_error"].str.startswith("multi_query: the reply holds no usable line").all()
    assert failed["mrr"].isna().all()  # not 0, and never bm25's
    runs = tmp_path / "run" / "runs"
    assert not (runs / "bm25_mq.trec").is_file() or read_run(runs / "bm25_mq.trec") != read_run(runs / "bm25.trec")
    # rag-bench compare withholds the same rows and says so on its first lines
    assert main(["compare", str(tmp_path / "run"), str(tmp_path / "run"), "--n-resamples", "50",
                 "--output-dir", str(tmp_path / "compared")]) == 0
    first = capsys.readouterr().out.splitlines()[:2]
    assert all(line.startswith("WARNING run run") and "stages: bm25_mq failed on 4 of 4 questions" in line
               for line in first), first
    compared = json.loads((tmp_path / "compared" / "comparison.json").read_text())
    assert "bm25_mq" not in json.dumps(compared.get("table", compared))


def test_when_no_result_stands_the_run_stops_with_one_line(tmp_path: Path, capsys) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    with StandInServer(StandInSettings()) as server:
        mq = multi_query(server, "1.\n2.\n-")
        config = tiny_config(tmp_path, corpus, questions, retrievers=[
            {"name": "bm25_mq", "type": "bm25", "params": {"query": mq}}])
        code = main(["--config", str(config), "--output-dir", str(tmp_path / "run"), "--no-generation", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "error: no result stands: every method is withheld on every set; stages: bm25_mq failed" in err
    assert "Traceback" not in err
