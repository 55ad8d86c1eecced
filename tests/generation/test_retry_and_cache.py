import email.utils
import time

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.generation import BackoffSettings
from rag.generation.cache import CachedGeneration, GenerationCache, generation_cache_key
from rag.endpoints.retry import Backoff, classify, parse_retry_after
from rag.secrets import REPLACEMENT, Redactor


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"retry-after": "3"}, 3.0), ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
     ({"retry-after": "soon"}, None), ({}, None)],
)
def test_retry_after_header_forms(headers, expected):
    assert parse_retry_after(httpx.Headers(headers)) == expected


def test_retry_after_as_http_date():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27 <= parse_retry_after(httpx.Headers({"retry-after": when})) <= 30


@given(retry=st.integers(1, 20), initial=st.floats(0.01, 5), multiplier=st.floats(1, 4), jitter=st.floats(0, 1))
def test_backoff_is_exponential_capped_and_jittered_downwards(retry, initial, multiplier, jitter):
    settings = BackoffSettings(initial_s=initial, multiplier=multiplier, max_s=10, jitter=jitter)
    ceiling = min(10, initial * multiplier ** (retry - 1))
    delay = Backoff(settings, seed=1).delay(retry)
    assert ceiling * (1 - jitter) - 1e-12 <= delay <= ceiling + 1e-12


def test_backoff_is_reproducible_and_retry_after_wins_up_to_its_cap():
    settings = BackoffSettings(max_retry_after_s=5)
    assert [Backoff(settings, 7).delay(n) for n in (1, 2, 3)] == [Backoff(settings, 7).delay(n) for n in (1, 2, 3)]
    assert Backoff(settings, 7).delay(1, retry_after_s=2.5) == 2.5
    assert Backoff(settings, 7).delay(1, retry_after_s=500) == 5


def _status_error(status: int) -> openai.APIStatusError:
    response = httpx.Response(status, headers={"retry-after": "4"},
                              request=httpx.Request("POST", "http://x/v1/chat/completions"))
    return openai.APIStatusError("Error sk-secret-123", response=response, body=None)


@pytest.mark.parametrize(("status", "kind", "retryable"),
                         [(429, "rate_limit", True), (503, "server_error", True), (401, "auth_error", False),
                          (404, "client_error", False)])
def test_classify_status_errors_and_redact_the_key(status, kind, retryable):
    failure = classify(_status_error(status), Redactor(["sk-secret-123"]))
    assert (failure.kind, failure.retryable) == (kind, retryable)
    assert "sk-secret-123" not in failure.message and REPLACEMENT in failure.message
    assert failure.retry_after_s == (4.0 if retryable else None)


def test_cache_roundtrip_and_truncated_last_line_is_dropped(tmp_path):
    cache = GenerationCache(tmp_path)
    cache.put("k1", CachedGeneration("Paris", 10, 2, 0.5, 1))
    cache.put("k2", CachedGeneration("Rome", 11, 3, 0.6, 2))
    cache.close()
    path = tmp_path / "generations.jsonl"
    path.write_bytes(path.read_bytes()[:-7])  # a crash in the middle of the second record
    reopened = GenerationCache(tmp_path)
    assert reopened.get("k1") == CachedGeneration("Paris", 10, 2, 0.5, 1)
    assert reopened.get("k2") is None and len(reopened) == 1
    reopened.put("k3", CachedGeneration("Oslo", 1, 1, 0.1, 1))  # appends after the repaired end
    reopened.close()
    assert GenerationCache(tmp_path).get("k3").answer == "Oslo"
    assert path.read_text().count("\n") == 2


def test_cache_key_depends_on_everything_that_changes_the_answer():
    messages = [{"role": "user", "content": "q"}]
    params = {"temperature": 0.0, "max_tokens": 10, "seed": 0}
    base = generation_cache_key("m", "http://a/v1", messages, params)
    assert base == generation_cache_key("m", "http://a/v1", [dict(m) for m in messages], dict(params))
    assert len({base,
                generation_cache_key("m2", "http://a/v1", messages, params),
                generation_cache_key("m", "http://b/v1", messages, params),
                generation_cache_key("m", "http://a/v1", [{"role": "user", "content": "q2"}], params),
                generation_cache_key("m", "http://a/v1", messages, {**params, "seed": 1})}) == 5
