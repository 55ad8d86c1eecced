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


ECHO_KEY_VARIABLE = "RAG_TEST_ECHOED_KEY"


def leaked_run(key: str, written: str) -> str | None:
    """The first run of 8 characters of ``key`` in ``written`` (a key cut short is still a leak)."""
    return next((key[i:i + 8] for i in range(len(key) - 7) if key[i:i + 8] in written), None)


def leaked_prefix(key: str, written: str) -> bool:
    """The key's first character right after the ``Bearer `` it was sent with: a key cut before it was
    redacted (issue 44) shows its start there."""
    return f"Bearer {key[0]}" in written


# the bad item's repr is cut at 80 characters: these pads put the cut before, in and after the key
@pytest.mark.parametrize("pad", [0, 40, 55, 62, 70])
def test_a_key_echoed_in_a_results_item_reaches_no_written_byte_whole_or_cut(tmp_path: Path, monkeypatch, capsys,
                                                                             pad) -> None:
    key = "sk-live-Zq81mN0pX4vB7cR2tY6uW9eA3sD5fG"
    monkeypatch.setenv(ECHO_KEY_VARIABLE, key)
    corpus, questions = write_tiny_dataset(
        tmp_path / "data",
        extra_questions=[question_line("q5", "Which planet? [[faults:echo_auth_item]]", ["Saturn"], ["Saturn"])])
    with StandInServer(StandInSettings(retry_after="0", echo_pad=pad)) as server:
        reranker = {"type": "endpoint", "model": "stand-in", "base_url": server.base_url,
                    "api_key_env": ECHO_KEY_VARIABLE, "max_retries": 0}
        config = tiny_config(tmp_path, corpus, questions, retrievers=[
            {"name": "bm25", "type": "bm25", "params": {}},
            {"name": "bm25_rerank", "type": "rerank", "params": {"input": "bm25", "depth": 3, "reranker": reranker}},
        ])
        code = main(["--config", str(config), "--output-dir", str(tmp_path / "run"), "--no-generation", "--quiet"])
    printed = capsys.readouterr()
    assert code == 2 and "a result is not {index, relevance_score}" in printed.err, printed.err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "a result is not" in manifest["error"]
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        written = path.read_bytes().decode("utf-8", "replace")
        assert leaked_run(key, written) is None and not leaked_prefix(key, written), path
    assert leaked_run(key, printed.out + printed.err) is None and not leaked_prefix(key, printed.out + printed.err)
