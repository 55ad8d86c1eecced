"""Keeping secrets out of everything the benchmark writes or prints: one redactor per run.

API keys are read only from the environment (``api_key_env`` names the variable). A
:class:`Redactor` built by :meth:`Redactor.for_config` knows these secrets (each at least
:data:`MIN_SECRET_LENGTH` characters, shorter values are not treated as secrets):

1. the value of every variable an ``api_key_env`` or ``password_env`` field of the config names (at
   any depth: an endpoint's key, a database's password);
2. credential-like environment values: the variable's name contains KEY, TOKEN, SECRET, PASSWORD,
   PASSWD or CREDENTIAL, or the value itself looks like an API key (:func:`looks_like_key`);
3. URL credentials: the user-info of any URL in the config (``http://user:PASS@host``), as written,
   percent-decoded, cut where a URL parser would cut it (at ``#``, ``?``, ``/``, ``@``), and as the
   base64 ``user:pass`` of an HTTP Basic ``Authorization`` header.

Each secret is known in every form a program may write it in (:func:`secret_forms`): as is, stripped
of surrounding white space, each part between control characters (an HTTP library that cuts a header
at a line break prints the part before it), and escaped the way Python's ``repr``/``ascii`` of the
text or of its UTF-8 bytes and JSON write it (``sk-...\\n``, ``b'Bearer sk-...\\r'``, ``\\u00e4``). A
header value built from a secret (``Bearer <key>``) contains one of these forms, so it is redacted too.
A key with a control or non-ASCII character cannot be sent in an HTTP header at all: such keys are
refused before any request (:func:`check_key_characters`), without echoing them.

:meth:`Redactor.text` replaces every run of :data:`MIN_SECRET_LENGTH` or more consecutive characters
of a known secret (the whole secret, or a prefix, suffix or middle of it that a server or a program cut
out: every stretch of text each of whose 8-character windows is one of some secret's) by one
``[REDACTED]`` and, known or
not, the whole user-info of any URL in the text (``scheme://[REDACTED]@host``): everything from
``://`` to the last ``@`` before white space, ``"``, ``<`` or ``>`` (characters a URL cannot hold
unencoded, RFC 3986), so a password holding ``@``, ``#``, ``?`` or ``/`` is removed whole; a later
``@`` in the same run of characters (``https://host/path@x``) is redacted too, which loses nothing
secret. The runner applies it to
plan.json, manifest.json, the reports, log records, the terminal and error lines; the LLM generators
apply it to answers and error messages before they are cached or returned. A server's words are
redacted before anything cuts or formats them (:meth:`Redactor.excerpt`): a key cut in the middle by a
length limit leaves a run of it that is still redacted, but the 7 characters or less of a key that a cut
may leave are no longer recognisable as the key's.
"""

from __future__ import annotations

import base64
import json
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
#: Every config field that names the environment variable of a secret: an endpoint's key, a database's password.
SECRET_VARIABLE_FIELDS = (KEY_VARIABLE_FIELD, "password_env")
ENV_VAR_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
# Well-known API key shapes: OpenAI/Anthropic (sk-), GitHub, Slack, Hugging Face, GitLab, AWS access keys.
_KEY_SHAPE = re.compile(r"^(sk-|sk_|pk_live_|rk_live_|ghp_|gho_|ghs_|github_pat_|xox[abprs]-|hf_|glpat-|AKIA[0-9A-Z]{12})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s\"<>]+)@")  # to the last @
_URL_CUTS = re.compile(r"[#?/@]")  # where a URL parser ends the user-info of a URL written unencoded


def secret_forms(secret: str) -> set[str]:
    """Every form of ``secret`` that may be written: as is, stripped, its parts between control
    characters, and escaped (``repr``/``ascii`` of the text and of its UTF-8 bytes, JSON, unicode
    escapes), each at least :data:`MIN_SECRET_LENGTH` characters long."""
    forms = {secret, secret.strip(), *_CONTROL.split(secret)}
    for form in list(forms):
        forms |= {repr(form)[1:-1], ascii(form)[1:-1], repr(form.encode("utf-8"))[2:-1],
                  json.dumps(form)[1:-1], json.dumps(form, ensure_ascii=False)[1:-1],
                  form.encode("unicode_escape").decode("ascii")}
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


def check_key_characters(key: str, variable: str) -> str | None:
    """None when ``key`` can be sent in an HTTP header (printable ASCII, no white space at its ends),
    else what is wrong with it, naming the position and the variable but never the key."""
    for position, character in enumerate(key, start=1):
        if _CONTROL.match(character):
            return (f"the value of {variable} holds a control character ({character!r} at position {position} of "
                    f"{len(key)}; a line break from a CRLF .env file?); expected the key alone, printable ASCII")
        if not character.isascii():
            return (f"the value of {variable} holds a non-ASCII character at position {position} of {len(key)}, "
                    "which an HTTP header cannot carry; expected the key alone, printable ASCII")
    if key != key.strip():
        return f"the value of {variable} starts or ends with a space; expected the key alone"
    return None


def looks_like_key(value: str) -> bool:
    """True for a value shaped like a well-known API key (``sk-...``, ``ghp_...``, ``hf_...``, ...)."""
    return bool(_KEY_SHAPE.match(value.strip()))


def redact_url_credentials(text: str) -> str:
    """``text`` with the user-info of every ``scheme://user:pass@host`` replaced by ``[REDACTED]``."""
    return _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REPLACEMENT}@", text)


def url_credentials(value: str) -> Iterator[str]:
    """The secrets in the user-info of every URL in ``value``: the password (or a lone user name,
    which is then the token), percent-decoded as well as raw and in the pieces a URL parser cuts it
    into, and the base64 ``user:pass`` that an HTTP client sends as Basic authorization."""
    for match in _URL_USERINFO.finditer(value):
        userinfo = match["userinfo"]
        user, _, password = userinfo.partition(":")
        secret = password or user
        yield from (secret, unquote(secret), *_URL_CUTS.split(secret))
        yield base64.b64encode(unquote(userinfo).encode()).decode()


def credential_env_values(environ: Mapping[str, str]) -> Iterator[str]:
    """Environment values whose variable name says credential, or that look like an API key."""
    for name, value in environ.items():
        if _SECRET_NAME.search(name) or looks_like_key(value):
            yield value


def _alternation(words: Iterable[str]) -> str:
    """A regular expression matching any of ``words`` (equally long), as a trie: at each position the
    regex engine follows one branch per character instead of trying every word in turn."""
    trie: dict = {}
    for word in words:
        node = trie
        for character in word:
            node = node.setdefault(character, {})

    def branch(node: dict) -> str:
        options = [re.escape(character) + branch(child) for character, child in sorted(node.items())]
        return options[0] if len(options) == 1 else f"(?:{'|'.join(options)})" if options else ""

    return branch(trie)


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
        known = {form for secret in secrets if secret for form in secret_forms(secret)}
        windows = {form[i:i + MIN_SECRET_LENGTH] for form in known for i in range(len(form) - MIN_SECRET_LENGTH + 1)}
        # every position where a window of a secret starts (a zero-width look-ahead finds overlapping ones)
        self._window = re.compile(f"(?=({_alternation(windows)}))") if windows else None

    @classmethod
    def for_config(cls, config: BaseModel | Mapping[str, Any] | None = None,
                   environ: Mapping[str, str] | None = None) -> "Redactor":
        """The redactor of a run (or of one generator): see the module docstring for what it knows."""
        environ = os.environ if environ is None else environ
        tree = config.model_dump(mode="json") if isinstance(config, BaseModel) else config
        secrets = list(credential_env_values(environ))
        for field, value in _string_fields(tree):
            if field in SECRET_VARIABLE_FIELDS and environ.get(value):
                secrets.append(environ[value])
            secrets.extend(url_credentials(value))
        return cls(secrets)

    def text(self, value: str) -> str:
        """``value`` with every run of a known secret's characters and every URL user-info replaced
        (module docstring)."""
        if self._window is not None:
            value = self._replace_runs(value)
        return redact_url_credentials(value)

    def excerpt(self, value: str, limit: int) -> str:
        """At most ``limit`` characters of ``value``, redacted before it is cut: the one way a server's
        words (an error body, a malformed answer) are shortened."""
        return self.text(value)[:limit]

    def _replace_runs(self, value: str) -> str:
        runs: list[list[int]] = []  # [start, end) of the stretches covered by a secret's windows, merged
        for match in self._window.finditer(value):
            start, end = match.start(), match.start() + MIN_SECRET_LENGTH
            if runs and start <= runs[-1][1]:
                runs[-1][1] = end
            else:
                runs.append([start, end])
        if not runs:
            return value
        pieces, done = [], 0
        for start, end in runs:
            pieces += [value[done:start], REPLACEMENT]
            done = end
        return "".join(pieces) + value[done:]

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
