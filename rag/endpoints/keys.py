"""An endpoint's API key: read from the environment variable its config names, checked before any
work, and never written anywhere (the run's :class:`rag.secrets.Redactor` knows it)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from pydantic import BaseModel

from rag.errors import ConfigError
from rag.secrets import check_key_characters


def is_loopback(url: str) -> bool:
    """True when ``url``'s host is this machine (``localhost``, ``*.localhost``, 127.0.0.0/8, ::1)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_api_key(api_key_env: str, base_url: str, key_path: str,
                     environ: Mapping[str, str] | None = None) -> str | None:
    """The API key of an OpenAI-compatible endpoint (chat or embeddings) from the variable named
    ``api_key_env``. An unset or empty variable is accepted for a loopback endpoint (keyless local
    servers) and is a :class:`ConfigError` at ``key_path`` for any other, raised before any request.
    So is a key with a control or non-ASCII character (:func:`rag.secrets.check_key_characters`),
    which no HTTP header can carry; the key is never echoed."""
    key = (os.environ if environ is None else environ).get(api_key_env) or None
    problem = check_key_characters(key, api_key_env) if key is not None else None
    if problem is not None:
        raise ConfigError(key_path, problem)
    if key is None and not is_loopback(base_url):
        raise ConfigError(
            key_path,
            f"the environment variable {api_key_env} is not set, and the endpoint "
            f"{urlsplit(base_url).hostname} is not on this machine; expected the API key in "
            f"{api_key_env} (or a base_url on localhost for a keyless server)",
        )
    return key


def check_endpoint_keys(config: BaseModel, environ: Mapping[str, str] | None = None, prefix: str = "") -> None:
    """:func:`endpoint_api_key` for every endpoint of a config tree (each model with ``api_key_env``
    and ``base_url``: the generator, endpoint embedders), so that a missing or unusable key fails
    before any work; the key path names the endpoint (``retrievers.dense.params.embedder.api_key_env``)."""
    if isinstance(config, BaseModel):
        if isinstance(getattr(config, "api_key_env", None), str) and isinstance(getattr(config, "base_url", None), str):
            endpoint_api_key(config.api_key_env, config.base_url, f"{prefix}api_key_env", environ)
        for field in type(config).model_fields:
            check_endpoint_keys(getattr(config, field), environ, f"{prefix}{field}.")
    elif isinstance(config, (list, tuple)):
        for index, item in enumerate(config):
            label = getattr(item, "name", None)
            check_endpoint_keys(item, environ, f"{prefix}{label if isinstance(label, str) else index}.")

