"""The one redactor (rag.secrets): what it knows, against hand-written cases."""

from __future__ import annotations

import base64
import logging

import numpy as np

from rag.config import load_config
from rag.secrets import REPLACEMENT, Redactor, looks_like_key, redact_url_credentials

from .conftest import SMOKE_CONFIG


def test_secret_environment_values_by_name_or_by_shape() -> None:
    environ = {"OPENAI_API_KEY": "sk-abcdef123456", "HOME": "/root", "SHORT_TOKEN": "abc",
               "SOMETHING": "ghp_0123456789abcdef", "PLAIN": "just a long value here"}
    redactor = Redactor.for_config(environ=environ)
    assert redactor.text("Bearer sk-abcdef123456!") == f"Bearer {REPLACEMENT}!"
    assert redactor.text("token ghp_0123456789abcdef") == f"token {REPLACEMENT}"
    assert redactor.deep({"a": ["x sk-abcdef123456"], "b": 3}) == {"a": [f"x {REPLACEMENT}"], "b": 3}
    assert redactor.text("/root abc just a long value here") == "/root abc just a long value here"
    assert np.isnan(redactor.deep(float("nan")))


def test_the_configured_key_variable_is_known_whatever_its_name() -> None:
    config = load_config(SMOKE_CONFIG, ["generation.generator={type: openai, model: m, api_key_env: LLM_AUTH}"])
    environ = {"LLM_AUTH": "plainvalue-1234", "OTHER": "othervalue-5678"}
    redactor = Redactor.for_config(config, environ)
    assert redactor.text("got plainvalue-1234, othervalue-5678") == f"got {REPLACEMENT}, othervalue-5678"
    assert Redactor.for_config(None, environ).text("plainvalue-1234") == "plainvalue-1234"


def test_url_credentials_known_and_unknown() -> None:
    url = "http://alice:s3cr%40t-pass@llm.internal:8080/v1"
    config = load_config(SMOKE_CONFIG, [f"generation.generator={{type: openai, model: m, base_url: '{url}'}}"])
    redactor = Redactor.for_config(config, environ={})
    basic = base64.b64encode(b"alice:s3cr@t-pass").decode()
    assert redactor.text(f"echo {url}") == f"echo http://{REPLACEMENT}@llm.internal:8080/v1"
    assert redactor.text("password s3cr@t-pass and s3cr%40t-pass") == f"password {REPLACEMENT} and {REPLACEMENT}"
    assert redactor.text(f"Authorization: Basic {basic}") == f"Authorization: Basic {REPLACEMENT}"
    assert REPLACEMENT not in redactor.text("https://en.wikipedia.org/wiki/Foo_(bar)#0 a@b.c")
    assert redact_url_credentials("see https://tok123@example.org/x") == f"see https://{REPLACEMENT}@example.org/x"


def test_key_shapes() -> None:
    assert looks_like_key("sk-proj-abc") and looks_like_key("hf_abcdef") and looks_like_key("AKIAABCDEFGHIJKLMNOP")
    assert not looks_like_key("OPENAI_API_KEY") and not looks_like_key("/usr/bin") and not looks_like_key("skeleton")


def test_the_logging_filter_redacts_the_formatted_message(caplog) -> None:
    redactor = Redactor(["sk-abcdef123456"])
    logger = logging.getLogger("test_secrets")
    handler_filter = redactor.logging_filter()
    logger.addFilter(handler_filter)
    try:
        with caplog.at_level(logging.WARNING, logger="test_secrets"):
            logger.warning("failed: %s", "Bearer sk-abcdef123456")
    finally:
        logger.removeFilter(handler_filter)
    assert caplog.records[0].getMessage() == f"failed: Bearer {REPLACEMENT}"
