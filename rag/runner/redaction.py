"""Keeping secrets out of everything the benchmark writes or prints.

API keys are read only from the environment. Any environment value whose variable name looks like a
credential (contains KEY, TOKEN, SECRET or PASSWORD) and is at least 8 characters long is replaced by
``[REDACTED]`` in every string that goes into the manifest, the reports and the terminal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MIN_SECRET_LENGTH = 8
REPLACEMENT = "[REDACTED]"


class Redactor:
    """Replaces known secret values in strings and nested JSON-like structures."""

    def __init__(self, environ: Mapping[str, str] | None = None):
        environ = os.environ if environ is None else environ
        secrets = {
            value for name, value in environ.items() if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
        }
        # longest first, so a secret containing another one is replaced whole
        self._pattern = (
            re.compile("|".join(re.escape(s) for s in sorted(secrets, key=len, reverse=True))) if secrets else None
        )

    def text(self, value: str) -> str:
        return self._pattern.sub(REPLACEMENT, value) if self._pattern else value

    def deep(self, value: Any) -> Any:
        """A copy of a JSON-like value (dicts, lists, strings) with secrets replaced."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(key)): self.deep(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.deep(item) for item in value]
        return value
