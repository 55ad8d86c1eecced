"""A whole run with a ``rerank`` method (the endpoint reranker against the stand-in's ``/v1/rerank``)
over BM25: it is a method in the run's outputs, its list holds exactly BM25's top ``depth`` in the
stand-in's order, and the API key, sent with every request and echoed back once by the stand-in,
reaches no written byte and no printed one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evaluation import read_run
from rag.cli import main
from rag.testing import StandInServer, StandInSettings
from rag.testing.stand_in import overlap_score

from .conftest import TINY_DOCUMENTS, question_line, tiny_config, write_tiny_dataset

pytestmark = pytest.mark.slow
KEY = "sk-rerank-e2e-0123456789abcdefXYZ"
ECHOED = "Which planet has rings? [[faults:echo_auth_500,ok]]"


def test_a_rerank_method_runs_and_the_key_reaches_no_written_byte(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RAG_TEST_RERANK_KEY", KEY)
    corpus, questions = write_tiny_dataset(tmp_path / "data", extra_questions=[question_line("q5", ECHOED, ["Saturn"], ["Saturn"])])
    with StandInServer(StandInSettings(retry_after="0")) as server:
        reranker = {"type": "endpoint", "model": "stand-in", "base_url": server.base_url,
                    "api_key_env": "RAG_TEST_RERANK_KEY", "backoff": {"initial_s": 0.01}}
        config = tiny_config(tmp_path, corpus, questions, retrievers=[
            {"name": "bm25", "type": "bm25", "params": {}},
            {"name": "bm25_rerank", "type": "rerank", "params": {"input": "bm25", "depth": 3, "reranker": reranker}},
        ])
        code = main(["--config", str(config), "--output-dir", str(tmp_path / "run"), "--no-generation", "--quiet"])
        assert server.stats.rerank_requests == 5 + 1 + 1  # the preflight, five questions, one retry
    printed = capsys.readouterr()
    assert code == 0, printed.err
    runs = tmp_path / "run" / "runs"
    bm25, reranked = read_run(runs / "bm25.trec"), read_run(runs / "bm25_rerank.trec")
    chunk_texts = {}  # chunk id -> text: each tiny document is one chunk, its id starts with the title
    for title, text in TINY_DOCUMENTS:
        (chunk_id,) = [c for ranked in bm25.values() for c in ranked if c.startswith(title)][:1] or [None]
        chunk_texts[chunk_id] = text
    asked = {json.loads(line)["id"]: json.loads(line)["question"] for line in questions.read_text().splitlines()}
    assert len(reranked) == len(asked)
    for qid, ranked in reranked.items():
        top = sorted(bm25[qid], key=lambda chunk: -bm25[qid][chunk])[:3]
        assert set(ranked) == set(top)  # BM25's top 3, nothing added or dropped
        assert ranked == pytest.approx({c: float(np.float32(overlap_score(asked[qid.split("/")[-1]], chunk_texts[c])))
                                        for c in top})
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert written and not [path for path in written if KEY.encode() in path.read_bytes()]
    assert KEY not in printed.out + printed.err
