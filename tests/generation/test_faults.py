"""Fault injection against the stand-in OpenAI-compatible server: retries, failure records, cache, resume."""

import hashlib
import logging

import pytest

from rag.errors import ConfigError
from rag.generation import GenerationRequest, OpenAIGeneratorConfig, build_generator
from rag.secrets import REPLACEMENT
from rag.testing import StandInServer, StandInSettings

FAST = {"model": "stand-in", "concurrency": 4, "timeout_s": 1.0, "max_retries": 2,
        "backoff": {"initial_s": 0.01, "max_s": 0.05}}


def config(base_url, **overrides):
    return OpenAIGeneratorConfig(**{**FAST, "base_url": base_url, "api_key_env": "RAG_TEST_NO_SUCH_VAR", **overrides})


def request(key, faults=None):
    marker = f" [[faults:{faults}]]" if faults else ""
    return GenerationRequest(key, f"Question {key}?{marker}", [f"Context for {key}.", "Other passage."])


def user_text(generator, req):
    return generator.prompts.build(req).messages[-1]["content"]


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


# faults per attempt -> (error_kind or None when answered, attempts)
CASES = {
    "ok": (None, 1),
    "error_500,ok": (None, 2),
    "error_503,error_500,ok": (None, 3),
    "rate_limit_429,ok": (None, 2),
    "empty_content,ok": (None, 2),
    "slow,ok": (None, 2),
    "drop_connection,ok": (None, 2),
    "malformed_json,ok": (None, 2),
    "error_500": ("server_error", 3),
    "malformed_json": ("malformed_response", 3),
    "empty_choices": ("empty_response", 3),
    "slow": ("timeout", 3),
    "bad_request_400": ("client_error", 1),
}


def test_every_fault_is_retried_then_answered_or_recorded_and_the_run_finishes(stand_in, tmp_path):
    requests = [request(f"q{i}", faults) for i, faults in enumerate(CASES)]
    with build_generator(config(stand_in.base_url, concurrency=len(CASES)), tmp_path) as generator:
        seen = []
        results = generator.generate(requests, on_result=seen.append)
        texts = [user_text(generator, r) for r in requests]
    assert [r.key for r in results] == [r.key for r in requests]
    assert sorted(r.key for r in seen) == sorted(r.key for r in requests)
    for result, text, (kind, attempts) in zip(results, texts, CASES.values()):
        assert result.error_kind == kind, result
        assert result.attempts == attempts == stand_in.stats.attempts_by_prompt[digest(text)]
        if kind is None:
            assert result.answer == "stand-in answer " + digest(text)[:16]
            assert result.prompt_tokens > 0 and result.completion_tokens == 4
        else:
            assert result.failed and result.error_message
    assert stand_in.stats.completions_requests == sum(a for _, a in CASES.values())


def test_retry_after_is_honoured(tmp_path):
    with StandInServer(StandInSettings(retry_after="1")) as server:
        with build_generator(config(server.base_url), tmp_path) as generator:
            [result] = generator.generate([request("q", "rate_limit_429,ok")])
    assert result.answer and result.attempts == 2
    assert result.latency_s >= 1.0  # the computed backoff would have been <= 0.05 s


def test_a_server_gone_after_the_preflight_is_a_recorded_connection_failure(tmp_path):
    server = StandInServer().start()
    with build_generator(config(server.base_url, max_retries=1), tmp_path) as generator:
        [first] = generator.generate([request("q0")])  # the preflight passes, the first question is answered
        server.stop()
        [result] = generator.generate([request("q1")])
    assert first.answer
    assert (result.answer, result.error_kind, result.attempts) == (None, "connection", 2)


def test_rerun_sends_no_request_already_answered_and_retries_failures(stand_in, tmp_path):
    requests = [request(f"q{i}") for i in range(5)] + [request("bad", "error_500")]
    with build_generator(config(stand_in.base_url), tmp_path) as generator:
        first = generator.generate(requests)
    sent = stand_in.stats.completions_requests
    assert sent == 5 + 3
    with build_generator(config(stand_in.base_url), tmp_path) as generator:
        second = generator.generate(requests)
    assert stand_in.stats.completions_requests - sent == 3  # only the failed question, all its attempts
    assert [r.cached for r in second] == [True] * 5 + [False]
    assert [r.answer for r in second[:5]] == [r.answer for r in first[:5]]
    assert second[5].failed


def test_changing_a_parameter_misses_the_cache(stand_in, tmp_path):
    with build_generator(config(stand_in.base_url), tmp_path) as generator:
        generator.generate([request("q")])
    with build_generator(config(stand_in.base_url, max_tokens=7), tmp_path) as generator:
        [result] = generator.generate([request("q")])
    assert not result.cached and stand_in.stats.completions_requests == 2


def test_an_interrupted_run_resumes_where_it_stopped(stand_in, tmp_path):
    requests = [request(f"q{i}") for i in range(6)]

    def interrupt_after_three(result, done=[]):  # noqa: B006 - a counter local to this test
        done.append(result)
        if len(done) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with build_generator(config(stand_in.base_url, concurrency=1), tmp_path) as generator:
            generator.generate(requests, on_result=interrupt_after_three)
    assert stand_in.stats.completions_requests == 3
    with build_generator(config(stand_in.base_url, concurrency=1), tmp_path) as generator:
        results = generator.generate(requests)
    assert [r.cached for r in results] == [True] * 3 + [False] * 3
    assert stand_in.stats.completions_requests == 6 and all(r.answer for r in results)


def test_a_planted_api_key_never_appears_in_results_logs_or_cache(stand_in, tmp_path, monkeypatch, caplog, capfd):
    key = "sk-planted-7f3a9c1e5b2d4f6a8c0e"
    monkeypatch.setenv("RAG_TEST_PLANTED_KEY", key)
    caplog.set_level(logging.DEBUG)
    requests = [request("echo", "echo_auth_500"), request("ok"), request("refused", "drop_connection")]
    with build_generator(config(stand_in.base_url, api_key_env="RAG_TEST_PLANTED_KEY"), tmp_path) as generator:
        results = generator.generate(requests)
    echoed = results[0]
    assert echoed.error_kind == "server_error" and f"Bearer {REPLACEMENT}" in echoed.error_message  # it reached the server
    outputs = [repr(results), caplog.text, *capfd.readouterr()]
    outputs += [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert all(key not in text for text in outputs)


def test_a_key_echoed_in_a_normal_answer_is_redacted_before_it_is_cached(tmp_path, monkeypatch):
    key = "llm-auth-value-51c7e0a9d2b84f36"  # neither its variable's name nor its shape says "key"
    monkeypatch.setenv("LLM_AUTH", key)
    with StandInServer(StandInSettings(echo_auth=True)) as server:
        with build_generator(config(server.base_url, api_key_env="LLM_AUTH"), tmp_path) as generator:
            (result,) = generator.generate([request("q1")])
        assert result.answer.endswith(f"(you sent Bearer {REPLACEMENT})")  # the server did echo it
        with build_generator(config(server.base_url, api_key_env="LLM_AUTH"), tmp_path) as generator:
            (again,) = generator.generate([request("q1")])
    assert again.cached and again.answer == result.answer
    assert key not in (tmp_path / "generations.jsonl").read_text()


def test_a_remote_endpoint_without_its_key_fails_before_any_request(tmp_path, monkeypatch):
    monkeypatch.delenv("RAG_TEST_NO_SUCH_VAR", raising=False)
    with pytest.raises(ConfigError) as info:
        build_generator(config("https://llm.example.com/v1"), tmp_path)
    assert info.value.key == "generation.generator.api_key_env"
    assert "RAG_TEST_NO_SUCH_VAR is not set" in str(info.value) and "llm.example.com" in str(info.value)
    build_generator(config("http://localhost:9/v1"), tmp_path).close()  # a keyless local server is fine
    build_generator(config("http://127.0.0.2:9/v1"), tmp_path).close()


def test_one_prompt_in_flight_is_sent_once_across_workers_and_generators(tmp_path):
    """Duplicate prompts inside one batch, and a second generator (another run) on the same cache
    directory at the same time: each distinct prompt reaches the server exactly once."""
    import threading

    requests = [request(f"k{i % 5}") for i in range(20)]  # 5 distinct prompts, 4 copies each
    with StandInServer(StandInSettings(latency_s=0.2)) as server:
        results: dict[str, list] = {}

        def run(name: str) -> None:
            with build_generator(config(server.base_url, concurrency=8), tmp_path) as generator:
                results[name] = generator.generate(requests)

        threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert server.stats.completions_requests == 5
    answers = {r.answer for name in results for r in results[name]}
    assert len(answers) == 5 and all(r.answer for name in results for r in results[name])
