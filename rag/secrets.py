"""Keeping secrets out of everything the benchmark writes or prints: one redactor per run.

API keys are read only from the environment (``api_key_env`` names the variable). A
:class:`Redactor` built by :meth:`Redactor.for_config` knows these secrets (each at least
:data:`MIN_SECRET_LENGTH` characters, shorter values are not treated as secrets):

1. the value of every variable an ``api_key_env`` field of the config names (at any depth);
2. credential-like environment values: the variable's name contains KEY, TOKEN, SECRET, PASSWORD,
   PASSWD or CREDENTIAL, or the value itself looks like an API key (:func:`looks_like_key`);
3. URL credentials: the user-info of any URL in the config (``http://user:PASS@host``), as written
   and as the base64 ``user:pass`` of an HTTP Basic ``Authorization`` header.

:meth:`Redactor.text` replaces every occurrence of a known secret by ``[REDACTED]`` and, known or
not, the user-info of any URL in the text (``scheme://[REDACTED]@host``). The runner applies it to
plan.json, manifest.json, the reports, log records, the terminal and error lines; the LLM generators
apply it to answers and error messages before they are cached or returned.
"""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel

MIN_SECRET_LENGTH = 8
REPLACEMENT = "[REDACTED]"
KEY_VARIABLE_FIELD = "api_key_env"
ENV_VAR_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
# Well-known API key shapes: OpenAI/Anthropic (sk-), GitHub, Slack, Hugging Face, GitLab, AWS access keys.
_KEY_SHAPE = re.compile(r"^(sk-|sk_|pk_live_|rk_live_|ghp_|gho_|ghs_|github_pat_|xox[abprs]-|hf_|glpat-|AKIA[0-9A-Z]{12})")
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@?#]+)@")


def looks_like_key(value: str) -> bool:
    """True for a value shaped like a well-known API key (``sk-...``, ``ghp_...``, ``hf_...``, ...)."""
    return bool(_KEY_SHAPE.match(value.strip()))


def redact_url_credentials(text: str) -> str:
    """``text`` with the user-info of every ``scheme://user:pass@host`` replaced by ``[REDACTED]``."""
    return _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REPLACEMENT}@", text)


def url_credentials(value: str) -> Iterator[str]:
    """The secrets in the user-info of every URL in ``value``: the password (or a lone user name,
    which is then the token), percent-decoded as well as raw, and the base64 ``user:pass`` that an
    HTTP client sends as Basic authorization."""
    for match in _URL_USERINFO.finditer(value):
        userinfo = match["userinfo"]
        user, _, password = userinfo.partition(":")
        yield from (password, unquote(password)) if password else (user, unquote(user))
        yield base64.b64encode(unquote(userinfo).encode()).decode()


def credential_env_values(environ: Mapping[str, str]) -> Iterator[str]:
    """Environment values whose variable name says credential, or that look like an API key."""
    for name, value in environ.items():
        if _SECRET_NAME.search(name) or looks_like_key(value):
            yield value


def _string_fields(tree: Any, field: str = "") -> Iterator[tuple[str, str]]:
    """(name of the enclosing field, string) for every string in a JSON-like tree."""
    if isinstance(tree, str):
        yield field, tree
    elif isinstance(tree, Mapping):
        for key, value in tree.items():
            yield from _string_fields(value, str(key))
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _string_fields(item, field)


class Redactor:
    """Replaces known secrets and URL credentials in strings and nested JSON-like structures."""

    def __init__(self, secrets: Iterable[str] = ()):
        known = {secret for secret in secrets if secret and len(secret) >= MIN_SECRET_LENGTH}
        # longest first, so a secret containing another one is replaced whole
        self._pattern = (
            re.compile("|".join(re.escape(s) for s in sorted(known, key=len, reverse=True))) if known else None
        )

    @classmethod
    def for_config(cls, config: BaseModel | Mapping[str, Any] | None = None,
                   environ: Mapping[str, str] | None = None) -> "Redactor":
        """The redactor of a run (or of one generator): see the module docstring for what it knows."""
        environ = os.environ if environ is None else environ
        tree = config.model_dump(mode="json") if isinstance(config, BaseModel) else config
        secrets = list(credential_env_values(environ))
        for field, value in _string_fields(tree):
            if field == KEY_VARIABLE_FIELD and environ.get(value):
                secrets.append(environ[value])
            secrets.extend(url_credentials(value))
        return cls(secrets)

    def text(self, value: str) -> str:
        if self._pattern is not None:
            value = self._pattern.sub(REPLACEMENT, value)
        return redact_url_credentials(value)

    def deep(self, value: Any) -> Any:
        """A copy of a JSON-like value (dicts, lists, strings) with secrets replaced."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(key)): self.deep(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.deep(item) for item in value]
        return value

    def logging_filter(self) -> logging.Filter:
        """A filter for log handlers that redacts each record's formatted message (and exception text)."""
        return _RedactingFilter(self)


class _RedactingFilter(logging.Filter):
    def __init__(self, redactor: Redactor):
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = self.redactor.text(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self.redactor.text(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True
