"""The runner's rule for methods that call an LLM per question (rag/runner/sample.py), their costs,
and the StageServices they receive, through the real pipeline on the tiny BM25 data set.

The LLM-backed method is a test-only retriever (``llm_probe``, registered here): real BM25 rankings
that declare ``llm_calls`` requests per question and report, as their tokens, the query's word count
(its own definition, recomputed here independently). It records the StageServices it was given
before indexing in its index directory, where the test reads them."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rag.cli import main
from rag.config import load_config
from rag.errors import ConfigError
from rag.retrievers.base import RETRIEVERS, IndexStorage
from rag.services import StageServices
from rag.retrievers.bm25 import BM25Params, BM25Retriever
from rag.runner.answers import answer_sample
from rag.runner.retrieval import RetrievalCache
from rag.runner.sample import SampledSets
from rag.types import Chunk, Ranking

from .conftest import TINY_QUESTIONS, tiny_config, write_tiny_dataset

SET = "questions"  # the tiny data set's one question set (its file's stem)


class ProbeParams(BM25Params):
    llm_calls: int = 2

    def llm_calls_per_query(self) -> int:
        return self.llm_calls


@RETRIEVERS.register("llm_probe")
class LLMProbe(BM25Retriever):
    Params = ProbeParams
    services: StageServices | None = None

    def use(self, services: StageServices) -> None:
        self.services = services

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        assert self.services is not None, "use() must come before index()"
        storage.own.mkdir(parents=True, exist_ok=True)
        (storage.own / "services.json").write_text(json.dumps({
            "generator": self.services.default_generator.type, "cache_dir": str(self.services.cache_dir)}))
        super().index(chunks, storage)

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        return [replace(r, llm_calls=self.params.llm_calls, llm_tokens=len(q.split()))
                for q, r in zip(queries, super().search(queries, k), strict=True)]


RETRIEVERS_CONFIG = [
    {"name": "bm25", "type": "bm25", "params": {"k1": 1.2}},
    {"name": "probe", "type": "llm_probe", "params": {"k1": 0.9}},
    {"name": "fused", "type": "rrf", "params": {"retrievers": ["bm25", "probe"]}},
]


def run(tmp_path: Path, caplog: pytest.LogCaptureFixture, **overrides) -> tuple[Path, pd.DataFrame, dict]:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    config = tiny_config(tmp_path, corpus, questions, retrievers=RETRIEVERS_CONFIG, **overrides)
    with caplog.at_level(logging.WARNING):
        assert main(["--config", str(config), "--quiet", "--output-dir", str(tmp_path / "run")]) == 0
    per_query = pd.read_csv(tmp_path / "run" / "per_query.csv", keep_default_na=False, na_values=[""])
    return tmp_path / "run", per_query, json.loads((tmp_path / "run" / "comparison.json").read_text())


def test_llm_backed_methods_run_on_the_answer_sample_beside_every_method(tmp_path, caplog):
    run_dir, per_query, comparison = run(tmp_path, caplog, generation={"generator": {"type": "extractive"},
                                                                       "questions_per_set": 2})
    all_qids = sorted(q[0] for q in TINY_QUESTIONS)
    answered = set(per_query[(per_query.question_set == SET) & (per_query.generation_status == "answered")
                             & (per_query.method == "bm25")].qid)
    assert len(answered) == 2
    sampled = per_query[per_query.question_set == f"{SET}@sample"]
    for method in ("bm25", "probe", "fused"):  # every method on exactly the answered questions
        assert set(sampled[sampled.method == method].qid) == answered
    own = per_query[per_query.question_set == SET]
    assert set(own.method) == {"bm25"} and sorted(own.qid) == all_qids  # LLM-backed (fused: through probe) absent
    # the derived set repeats bm25's rows of the base set, answers included
    columns = ["qid", "mrr", "retrieved_chunks", "answer", "llm_calls"]
    left = own[own.qid.isin(answered)][columns].sort_values("qid").reset_index(drop=True)
    right = sampled[sampled.method == "bm25"][columns].sort_values("qid").reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right)
    assert (sampled.generation_status == "answered").all()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["generation"]["requests"] == 3 * 2  # bm25, probe, fused: each answer asked once
    assert manifest["llm_sample"] == {"methods": {"probe": 2, "fused": 2}, "sets": {f"{SET}@sample": 2}}
    plan = [r.getMessage() for r in caplog.records if r.getMessage().startswith("plan: ")]
    assert plan == [f"plan: {m} calls an LLM 2 time(s) per question: 2 sampled questions ({SET}@sample 2), "
                    "at most 4 calls, about 0.1-0.2 min at 1-3 s per call (what the local SmolLM2 took on 2 CPU "
                    "cores; no LLM call recorded in this cache yet)" for m in ("probe", "fused")]
    # the comparison and the recommendation take a method absent from a set in their stride
    rows = pd.DataFrame(comparison["rows"])
    assert set(rows[rows.question_set == SET].method) == {"bm25"}
    assert set(rows[rows.question_set == f"{SET}@sample"].method) == {"bm25", "probe", "fused"}
    assert comparison["recommendation"] is not None
    # costs: LLM calls and tokens per question, a fusion's counting its input's
    words = {qid: len(text.split()) for qid, text, *_ in TINY_QUESTIONS}
    for row in per_query.itertuples():
        expected = (0, 0) if row.method == "bm25" else (2, words[row.qid])  # fused: its input probe's calls
        assert (row.llm_calls, row.llm_tokens) == expected
    fused = rows[rows.method == "fused"].iloc[0]
    sampled_qids = per_query[(per_query.method == "fused")].qid
    assert fused.llm_calls_per_query == 2.0
    assert fused.llm_tokens_per_query == pytest.approx(sum(words[q] for q in sampled_qids) / len(sampled_qids))
    assert "LLM calls/q" in (run_dir / "report.html").read_text()
    services = json.loads((tmp_path / "cache" / "index" / "probe" / "services.json").read_text())
    assert services == {"generator": "extractive", "cache_dir": str(tmp_path / "cache")}


def test_without_generation_the_stages_sample_is_seeded_and_the_only_questions_searched(tmp_path, caplog):
    run_dir, per_query, comparison = run(tmp_path, caplog, generation=None, stages_sample={"questions_per_set": 3})
    expected = answer_sample([_question(q) for q in TINY_QUESTIONS], 3, 0, SET)  # seed 0, the set's own draw
    assert set(per_query[per_query.method == "probe"].qid) == expected
    assert set(per_query[per_query.method == "probe"].question_set) == {f"{SET}@sample"}
    cache = next((tmp_path / "cache" / "retrieval").glob("probe-*.json"))
    texts = {q[0]: q[1] for q in TINY_QUESTIONS}
    assert set(json.loads(cache.read_text())) == {texts[qid] for qid in expected}  # nothing else sent to it
    services = json.loads((tmp_path / "cache" / "index" / "probe" / "services.json").read_text())
    assert services["generator"] == "local"  # no generation: the local SmolLM2 server's settings
    sets = {row["question_set"] for row in comparison["rows"] if row["method"] == "probe"}
    assert sets == {f"{SET}@sample"}


def test_a_sample_as_large_as_the_set_adds_no_derived_set(tmp_path, caplog):
    _, per_query, _ = run(tmp_path, caplog, generation=None, stages_sample={"questions_per_set": 10})
    assert set(per_query.question_set) == {SET}
    assert sorted(per_query[per_query.method == "probe"].qid) == sorted(q[0] for q in TINY_QUESTIONS)


def test_plan_estimates_time_from_recorded_latencies(tmp_path):
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    config = load_config(tiny_config(tmp_path, corpus, questions, retrievers=RETRIEVERS_CONFIG[:2],
                                     generation=None, stages_sample={"questions_per_set": 3}))
    records = [{"key": "a", "answer": "", "prompt_tokens": 1, "completion_tokens": 1, "latency_s": 2.0, "attempts": 1},
               {"key": "b", "answer": "", "prompt_tokens": 1, "completion_tokens": 1, "latency_s": 4.0, "attempts": 1}]
    (tmp_path / "cache" / "stages" / "probe").mkdir(parents=True)
    (tmp_path / "cache" / "stages" / "probe" / "generations.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records) + '{"key": "trunc')  # a truncated last line is skipped
    sampled = SampledSets.of(config, ["bm25", "probe"], {SET: [_question(q) for q in TINY_QUESTIONS]})
    # 2 calls x 3 questions x 3.0 s = 18 s = 0.3 min
    assert sampled.plan_lines(tmp_path / "cache") == [
        f"probe calls an LLM 2 time(s) per question: 3 sampled questions ({SET}@sample 3), at most 6 calls, "
        f"about 0.3 min at 3.00 s per call (the mean of the 2 LLM calls recorded in {tmp_path / 'cache'}; "
        "cached calls cost nothing)"]


def test_stages_sample_names_sets_of_the_run(tmp_path):
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    path = tiny_config(tmp_path, corpus, questions, question_sets=[SET],
                       stages_sample={"questions_per_set": 3, "question_sets": ["nope"]})
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert error.value.key == "stages_sample.question_sets" and "nope" in str(error.value)
    raw = yaml.safe_load(path.read_text())
    raw["stages_sample"] = {"questions_per_set": 0}
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert "stages_sample.questions_per_set" in str(error.value)


def test_a_retrieval_cache_written_before_llm_costs_loads_with_none(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"q": {"chunk_ids": ["c1"], "scores": [1.0], "search_ms": 0.5}}))
    entry = RetrievalCache(path, {"c1"}).entries["q"]
    assert (entry.llm_calls, entry.llm_tokens, entry.search_ms) == (0, 0, 0.5)


def _question(q):
    from rag.types import Question
    qid, text, gold, answers = q
    return Question(qid, text, [[g] for g in gold], answers, "factual", SET)
