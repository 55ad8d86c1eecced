"""Fault injection: a managed server that dies by SIGSEGV (llama.cpp's AMX crash, issue 28), played by
the stand-in in the server's place (rag.testing.llama_stand_in) - a real process killed by a real
signal. Answers are checked against the stand-in's own rule (sha256 of the prompt), not our output."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from rag.config import load_config
from rag.generation import GenerationRequest, LocalGenerator, LocalGeneratorConfig
from rag.generation.local_server import ManagedLlamaServer, ServerCrashed, exit_description
from rag.runner.pipeline import RunOptions, run_benchmark

from .conftest import WhitespaceCounter

STAND_IN = [sys.executable, "-m", "rag.testing.llama_stand_in"]
AMX_LIKE = [*STAND_IN, "--crash-on-completion", "1", "--only-with-extra-buffer-types"]  # dies on the self-check


def server(tmp_path: Path, program: list[str], extra_buffer_types: bool = True) -> ManagedLlamaServer:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF stand-in")
    return ManagedLlamaServer(model, tmp_path / "llama_server.log", model_alias="stand-in",
                              startup_timeout_s=30, extra_buffer_types=extra_buffer_types, program=program)


def generator(tmp_path: Path, program: list[str], extra_buffer_types: bool = True, **overrides) -> LocalGenerator:
    config = LocalGeneratorConfig(model="stand-in", timeout_s=10, backoff={"initial_s": 0.05, "max_s": 0.1},
                                  extra_buffer_types=extra_buffer_types, **overrides)
    return LocalGenerator(config, tmp_path / "cache", server(tmp_path, program, extra_buffer_types),
                          token_counter=WhitespaceCounter())


def requests(n: int) -> list[GenerationRequest]:
    return [GenerationRequest(f"q{i}", f"Question {i}?", [f"Passage {i}."]) for i in range(n)]


def expected_answer(generator: LocalGenerator, request: GenerationRequest) -> str:
    user_text = generator.prompts.build(request).messages[-1]["content"]
    return "stand-in answer " + hashlib.sha256(user_text.encode()).hexdigest()[:16]


def assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_exit_description_names_the_signal():
    assert exit_description(-signal.SIGSEGV) == "SIGSEGV (Segmentation fault)"
    assert exit_description(-signal.SIGKILL) == "SIGKILL (Killed)"
    assert exit_description(3) == "exit code 3"


def test_a_server_crashing_on_its_first_completion_is_restarted_with_extra_buffer_types_off(tmp_path):
    with generator(tmp_path, AMX_LIKE) as gen:
        reqs = requests(4)
        results = gen.generate(reqs)
        facts = gen.run_facts()["local_server"]
    assert [r.answer for r in results] == [expected_answer(gen, r) for r in reqs]
    assert facts["extra_buffer_types"] == "off" and facts["self_check"] == "ok"
    assert facts["restarts"] == 0 and facts["deaths"] == [] and facts["failure"] is None
    (switched,) = facts["extra_buffer_types_switched_off_after"]
    assert "died with SIGSEGV (Segmentation fault)" in switched and "extra buffer types on" in switched
    starts = [line for line in (tmp_path / "llama_server.log").read_text().splitlines() if line.startswith("stand-in")]
    assert [line.split(", ")[1] for line in starts] == ["extra buffer types on", "extra buffer types off"]


def test_a_server_crashing_with_either_setting_is_one_line_naming_the_signal_and_its_log(tmp_path):
    srv = server(tmp_path, [*STAND_IN, "--crash-on-completion", "1"])
    with pytest.raises(ServerCrashed) as info:
        srv.start()
    message = str(info.value)
    assert "\n" not in message and "died with SIGSEGV" in message
    assert "extra buffer types off, crash on completion 1" in message  # the log's last line
    assert "with llama.cpp's extra CPU buffer types off; with them on it had died too" in message
    assert srv.pid is None and srv.self_check == "failed"
    log_text = (tmp_path / "llama_server.log").read_text()
    assert log_text.count("stand-in llama server") == 2  # tried twice, not more


def test_with_extra_buffer_types_off_a_crash_is_not_retried_at_start(tmp_path):
    srv = server(tmp_path, [*STAND_IN, "--crash-on-completion", "1"], extra_buffer_types=False)
    with pytest.raises(ServerCrashed, match="died with SIGSEGV"):
        srv.start()
    assert (tmp_path / "llama_server.log").read_text().count("stand-in llama server") == 1


def test_a_crash_mid_run_with_extra_buffer_types_on_restarts_with_them_off(tmp_path):
    program = [*STAND_IN, "--crash-on-completion", "2", "--only-with-extra-buffer-types"]  # the self-check passes
    with generator(tmp_path, program, max_retries=2) as gen:
        reqs = requests(3)
        results = gen.generate(reqs)
        facts = gen.run_facts()["local_server"]
    assert [r.answer for r in results] == [expected_answer(gen, r) for r in reqs]
    assert sorted(r.attempts for r in results) == [1, 1, 2]  # the request in flight saw the crash
    assert facts["extra_buffer_types"] == "off" and facts["restarts"] == 1
    assert len(facts["deaths"]) == 1 and "SIGSEGV" in facts["deaths"][0]


def test_a_server_dead_for_good_fails_the_remaining_requests_at_once_with_one_cause(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    program = [*STAND_IN, "--crash-on-completion", "2"]  # every start: the self-check passes, the next request kills it
    started = time.perf_counter()
    with generator(tmp_path, program, extra_buffer_types=False, max_retries=2, max_server_restarts=1) as gen:
        results = gen.generate(requests(12))
        facts = gen.run_facts()["local_server"]
        pid = gen.server.pid
    elapsed = time.perf_counter() - started
    assert all(r.failed for r in results)
    first, *rest = sorted(results, key=lambda r: -len(r.extra["attempt_errors"]))
    assert first.extra["attempt_errors"] == ["connection", "connection", "server_dead"]  # died, restarted, died
    assert all(r.extra["attempt_errors"] == ["server_dead"] for r in rest)  # never sent, never retried
    cause = facts["failure"]
    assert {r.error_message for r in results} == {cause} and "\n" not in cause
    assert cause.startswith("the local LLM server (llama.cpp, pid ") and "died with SIGSEGV (Segmentation fault)" in cause
    assert "crash on completion 2" in cause and "not restarted (1 of max_server_restarts 1 used)" in cause
    assert facts["restarts"] == 1 and len(facts["deaths"]) == 2
    said = [r for r in caplog.records if r.levelno >= logging.WARNING and "SIGSEGV" in r.getMessage()]
    assert [r.levelname for r in said] == ["WARNING", "ERROR"]  # the restart, then giving up: once each
    assert elapsed < 20
    assert_gone(pid)  # the last server, dead, left no process behind


def test_the_manifest_records_the_server_setting(tmp_path):
    """A whole run whose managed server crashes on its self-check: it answers, and the manifest says
    which setting answered."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "corpus.jsonl").write_text("\n".join(json.dumps(
        {"doc_id": t, "url": f"https://en.wikipedia.org/wiki/{t}", "title": t, "text": x}) for t, x in [
        ("Volcano", "A volcano is a rupture in the crust of a planet that lets hot lava escape."),
        ("Saturn", "Saturn is the sixth planet from the Sun."),
    ]) + "\n")
    (data / "questions.jsonl").write_text(json.dumps(
        {"id": "q1", "question": "Which is the sixth planet from the Sun?",
         "gold_urls": [["https://en.wikipedia.org/wiki/Saturn"]], "answers": ["Saturn"]}) + "\n")
    (tmp_path / "config.yaml").write_text(json.dumps({
        "name": "crash", "dataset": {"format": "jsonl", "corpus": str(data / "corpus.jsonl"),
                                     "questions": str(data / "questions.jsonl")},
        "chunking": {"max_tokens": 64, "overlap_tokens": 8, "min_tokens": 4},
        "retrievers": [{"name": "bm25", "type": "bm25", "params": {}}], "top_k": 2,
        "generation": {"generator": {"type": "local", "model": "stand-in", "extra_buffer_types": True}},
        "evaluation": {"metrics": ["mrr"], "n_resamples": 200},
        "output_dir": str(tmp_path / "runs"), "cache_dir": str(tmp_path / "cache"),
    }))

    def factory(config, cache_dir):
        return LocalGenerator(config, cache_dir, server(tmp_path, AMX_LIKE, config.extra_buffer_types),
                              token_counter=WhitespaceCounter())

    result = run_benchmark(load_config(tmp_path / "config.yaml"), RunOptions(progress=False), factory)
    local = result.manifest["generation"]["local_server"]
    assert result.manifest["generation"]["failures"] == 0
    assert (local["extra_buffer_types"], local["self_check"], local["restarts"]) == ("off", "ok", 0)
    assert "SIGSEGV" in local["extra_buffer_types_switched_off_after"][0]
    written = json.loads((result.run_dir / "manifest.json").read_text())
    assert written["generation"]["local_server"]["extra_buffer_types"] == "off"
    assert written["generation"]["local_server"]["settings"] == {"n_threads": len(os.sched_getaffinity(0)), "flash_attn": True,
                                                                 "logits_all": False}
