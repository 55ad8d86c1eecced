"""The preflight of OpenAI-compatible endpoints: a closed port, a server without the model, an unset
key for a remote endpoint — each one BenchError before any chat request is sent."""

from __future__ import annotations

import time

import pytest

from rag.errors import BenchError, ConfigError
from rag.generation import GenerationRequest, OpenAIGeneratorConfig, build_generator
from rag.generation.local_server import free_port
from rag.endpoints.keys import is_loopback
from rag.testing import StandInServer, StandInSettings

REQUESTS = [GenerationRequest(f"q{i}", f"Question {i}?", ["A passage."]) for i in range(3)]


def config(base_url: str, **overrides) -> OpenAIGeneratorConfig:
    return OpenAIGeneratorConfig(**{"model": "stand-in", "base_url": base_url, "api_key_env": "RAG_TEST_NO_SUCH_VAR",
                                    "timeout_s": 2.0, "max_retries": 3, **overrides})


def test_a_closed_port_fails_the_preflight_at_once(tmp_path):
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    with build_generator(config(base_url), tmp_path) as generator:
        started = time.perf_counter()
        with pytest.raises(BenchError, match=r"generation\.generator\.base_url: .*/models does not answer"):
            generator.generate(REQUESTS)
        assert time.perf_counter() - started < 1.5  # no retries, no backoff (its 3 retries would wait >= 1.75 s)


def test_a_server_without_the_model_fails_the_preflight_and_gets_no_request(tmp_path):
    with StandInServer(StandInSettings(model="some-other-model")) as server:
        with build_generator(config(server.base_url), tmp_path) as generator:
            with pytest.raises(ConfigError) as caught:
                generator.generate(REQUESTS)
        assert server.stats.completions_requests == 0
    assert caught.value.key == "generation.generator.model"
    assert "'stand-in' is not served" in str(caught.value) and "some-other-model" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unset_key_for_a_remote_endpoint_fails_before_any_connection(tmp_path, monkeypatch):
    monkeypatch.delenv("RAG_TEST_NO_SUCH_VAR", raising=False)
    # a host under .invalid never resolves (RFC 2606): nothing is sent anywhere, even if the check broke
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        with build_generator(config("http://llm.invalid:8000/v1", timeout_s=30.0), tmp_path) as generator:
            generator.generate(REQUESTS)
    assert time.perf_counter() - started < 1.0
    assert caught.value.key == "generation.generator.api_key_env"
    assert "RAG_TEST_NO_SUCH_VAR is not set" in str(caught.value)


def test_the_model_is_listed_and_answers_follow(tmp_path):
    with StandInServer() as server:
        with build_generator(config(server.base_url), tmp_path) as generator:
            results = generator.generate(REQUESTS)
        assert all(r.answer for r in results) and server.stats.completions_requests == 3


def test_a_fully_cached_run_needs_no_endpoint(tmp_path):
    with StandInServer() as server:
        base_url = server.base_url
        with build_generator(config(base_url), tmp_path) as generator:
            first = generator.generate(REQUESTS)
    with build_generator(config(base_url), tmp_path) as generator:  # the server is gone
        second = generator.generate(REQUESTS)
    assert all(r.cached for r in second) and [r.answer for r in second] == [r.answer for r in first]


@pytest.mark.parametrize("url, loopback", [
    ("http://127.0.0.1:8000/v1", True), ("http://127.8.9.10/v1", True), ("http://localhost:11434/v1", True),
    ("http://[::1]:8000/v1", True), ("https://api.openai.com/v1", False), ("http://llm.invalid:8000/v1", False),
    ("http://localhost.example.com/v1", False),
])
def test_loopback_hosts(url, loopback):
    assert is_loopback(url) is loopback
