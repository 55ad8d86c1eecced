"""Issue 44, item 1: an endpoint that echoes the API key, whole or cut anywhere, leaks no part of it.

A server may echo the ``Authorization`` header in a JSON error body, in a malformed results item or as
plain text, and the client cuts what it shows (80 characters of a bad item, 500 of an error body, 200 of
a preflight answer). Oracles, independent of the redactor: no run of :data:`RUN` consecutive
characters of the key appears in anything the code returns or writes (``leaked_run``), and no part of
the key follows the ``Bearer `` it was sent after (``leaked_prefix``: a key cut before it was
redacted shows its first characters there).
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.errors import BenchError
from rag.rerankers.base import Candidate
from rag.rerankers.endpoint import EndpointReranker, EndpointRerankerParams
from rag.secrets import Redactor
from rag.testing import StandInServer, StandInSettings

RUN = 8
KEY_VARIABLE = "RAG_TEST_ECHOED_KEY"
# printable ASCII without white space (what an HTTP header can carry); the first character a letter
# or digit, so that "Bearer [REDACTED]" is told from "Bearer " followed by the key's first character
# The words an error line holds whatever the key: a key sharing a run of RUN characters with them (as
# hypothesis found, 'a0000000stand-in' and the model 'stand-in') would be "leaked" by the line itself.
SAID = ("retrievers.rerank.params.reranker.base_url: http://127.0.0.1:/v1/rerank (model 'stand-in'): "
        "server_error: HTTPStatusError: HTTP 500: {\"error\": {\"message\": \"bad upstream for Bearer [REDACTED]\", "
        "\"type\": \"server_error\"}} (gave up after 1 attempt(s)) did not answer in the /rerank shape "
        "(malformed_response: a result is not {index, relevance_score}: {'index': '...'}); expected "
        "{results: [{index, relevance_score}]} answered HTTP 500 upstream said: expected 200 0123456789")
keys = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
    st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=15, max_size=79),
).filter(lambda key: not any(key[i:i + 8] in SAID for i in range(len(key) - 7)))


def leaked_run(key: str, written: str) -> str | None:
    """The first run of RUN characters of ``key`` found in ``written``, if any."""
    return next((key[i:i + RUN] for i in range(len(key) - RUN + 1) if key[i:i + RUN] in written), None)


def leaked_prefix(key: str, written: str) -> bool:
    return f"Bearer {key[0]}" in written


def shapes(echoed: str) -> list[str]:
    """``echoed`` as a server writes it back: in a JSON error body, in a results item (as the client's
    repr shows it), as plain text."""
    return [json.dumps({"error": {"message": f"bad upstream for {echoed}"}}),
            repr({"index": echoed, "relevance_score": 1.0}), f"upstream said: {echoed}"]


@settings(max_examples=60, deadline=None)
@given(key=keys, data=st.data())
def test_every_cut_of_a_key_is_redacted_in_every_reply_shape(key: str, data: st.DataObject) -> None:
    redactor = Redactor([key])
    cut = data.draw(st.integers(0, len(key)))
    middle = data.draw(st.integers(0, max(0, len(key) - RUN)))
    for piece in (key[:cut], key[cut:], key[middle:middle + RUN + cut % 5], key, "Bearer " + key[:cut]):
        for text in shapes(piece):
            written = redactor.text(text)
            assert leaked_run(key, written) is None, (piece, written)
            for limit in range(len(written) + 1):  # whatever the cut after redaction
                assert leaked_run(key, redactor.excerpt(text, limit)) is None


def test_every_cut_of_a_known_key_exhaustively() -> None:
    key = "sk-proj-Q7x_9fZ2.kL0p+Tz4w~Rb8N=hJc1"
    redactor = Redactor([key])
    for start in range(len(key)):
        for end in range(start + RUN, len(key) + 1):
            written = redactor.text(f"said {key[start:end]}!")
            assert written == "said [REDACTED]!", (start, end, written)
    too_short = f"{key[:RUN - 1]} {key[-(RUN - 1):]}"  # 7 characters of a key are not known as the key's
    assert redactor.text(too_short) == too_short


@pytest.fixture(scope="module")
def stand_in():
    with StandInServer(StandInSettings(retry_after="0")) as server:
        yield server


def rerank_error(server: StandInServer, key: str, query: str) -> str:
    """The one-line error of an endpoint reranker whose server echoes ``key``: what the run prints and
    writes to manifest.json."""
    os.environ[KEY_VARIABLE] = key
    try:
        params = EndpointRerankerParams(model="stand-in", base_url=server.base_url, api_key_env=KEY_VARIABLE,
                                        max_retries=0, timeout_s=5.0)
        reranker = EndpointReranker(params)
        with pytest.raises(BenchError) as raised:
            reranker.score([query], [[Candidate("c1", "doc one"), Candidate("c2", "doc two")]])
    finally:
        del os.environ[KEY_VARIABLE]
    return str(raised.value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=keys, shape=st.sampled_from(["echo_auth_500", "echo_auth_text", "echo_auth_item"]),
       preflight=st.booleans(), pad=st.integers(0, 520))
def test_an_echoed_key_cut_anywhere_reaches_no_error_line(stand_in, key, shape, preflight, pad) -> None:
    # the echo comes after `pad` filler characters, so the client's cut (80, 200 or 500 characters)
    # falls anywhere in the key, or before or after it
    stand_in.settings.echo_pad = pad
    stand_in.settings.fault = shape if preflight else ""
    try:
        error = rerank_error(stand_in, key, "which planet" if preflight else f"which planet [[faults:{shape}]]")
    finally:
        stand_in.settings.fault, stand_in.settings.echo_pad = "", 0
    assert leaked_run(key, error) is None, error
    assert not leaked_prefix(key, error), error
