"""The plan line of LLM-backed methods (issue 44, item 10c): worded by what receives the requests (an
LLM, a rerank endpoint), and estimated with the depth the run uses (bounded by the corpus's chunks)."""

from __future__ import annotations

import logging
import re

import pytest

import rag.runner.stages as stages
from rag.config import load_config
from rag.runner.pipeline import run_benchmark
from rag.runner.sample import SampledSets
from rag.types import Question

from .conftest import TINY_QUESTIONS, tiny_config, write_tiny_dataset

SET = "questions"
ENDPOINT = {"type": "endpoint", "model": "bge-reranker", "base_url": "http://127.0.0.1:9/v1"}
MULTI_QUERY = {"type": "multi_query"}


def _question(row) -> Question:
    qid, text, gold, *_ = row
    return Question(qid, text, [[gold]], [], "factoid", SET)


def _plan(tmp_path, retrievers) -> list[str]:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    config = load_config(tiny_config(tmp_path, corpus, questions, retrievers=retrievers, generation=None,
                                     stages_sample={"questions_per_set": 3}))
    sampled = SampledSets.of(config, [spec.name for spec in config.retrievers], {SET: [_question(q) for q in TINY_QUESTIONS]})
    return sampled.plan_lines(tmp_path / "cache")


def test_an_endpoint_reranker_is_not_called_an_llm_nor_timed_by_smollm2(tmp_path):
    lines = _plan(tmp_path, [{"name": "bm25", "type": "bm25", "params": {}},
                             {"name": "rr", "type": "rerank", "params": {"input": "bm25", "depth": 5, "reranker": ENDPOINT}}])
    assert lines == [f"rr calls a rerank endpoint 1 time(s) per question: 3 sampled questions ({SET}@sample 3), "
                     "at most 3 calls, the rerank endpoint's time not estimated (its speed is its own; nothing here "
                     "measures it)"]


def test_an_endpoint_rerank_over_an_llm_transform_names_both(tmp_path):
    lines = _plan(tmp_path, [{"name": "mq", "type": "bm25", "params": {"query": MULTI_QUERY}},
                             {"name": "rr", "type": "rerank", "params": {"input": "mq", "depth": 5, "reranker": ENDPOINT}}])
    assert lines[0].startswith("mq calls an LLM 1 time(s) per question") and "SmolLM2" in lines[0]
    assert lines[1].startswith("rr calls an LLM 1 time(s) and a rerank endpoint 1 time(s) per question: ")
    assert "at most 6 calls, about " in lines[1] and "at 1-3 s per call" in lines[1] and "for the 3 LLM calls" in lines[1]
    assert lines[1].endswith("the rerank endpoint's time not estimated (its speed is its own; nothing here measures it)")


class _Stop(Exception):
    pass


def test_the_plan_estimates_with_the_depth_bounded_by_the_chunks(tmp_path, caplog, monkeypatch):
    """A rerank depth of 10^9 on a corpus of a few chunks planned 10^9 LLM calls per question (1.5 billion
    minutes) while the run reranks every chunk at most."""
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    config = load_config(tiny_config(tmp_path, corpus, questions, generation=None, stages_sample={"questions_per_set": 3},
                                     retrievers=[{"name": "bm25", "type": "bm25", "params": {}},
                                                 {"name": "rr", "type": "rerank",
                                                  "params": {"input": "bm25", "depth": 10**9, "reranker": {"type": "llm"}}}]))

    def stop(*args, **kwargs):
        raise _Stop  # after the plan, before any request

    monkeypatch.setattr(stages, "RetrievalStage", stop)
    with caplog.at_level(logging.WARNING), pytest.raises(_Stop):
        run_benchmark(config)
    plan = [r.getMessage() for r in caplog.records if r.getMessage().startswith("plan: ")]
    assert len(plan) == 1 and plan[0].startswith("plan: rr calls an LLM ")
    per_question = int(re.search(r"calls an LLM (\d+) time", plan[0]).group(1))
    total = int(re.search(r"at most (\d+) calls", plan[0]).group(1))
    assert 1 <= per_question <= 50 and total == 3 * per_question
