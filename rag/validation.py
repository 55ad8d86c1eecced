"""The base of every config model, and the one translator from pydantic's ``ValidationError`` to a
:class:`rag.errors.ConfigError`.

:class:`ConfigModel` forbids unknown keys and refuses booleans where a number is expected (pydantic
would read ``top_k: true`` as 1). :func:`config_error_from_validation` names the first problem by its
dotted key path, in the style ``--set`` accepts: list entries that carry a ``name`` (the retrievers)
are addressed by that name, other list entries by index, and the tags pydantic adds for
discriminated unions are dropped (``retrievers.bm25.params.k1``, ``evaluation.levels.0``,
``generation.generator.backoff.initial_s``).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError, model_validator

from rag.errors import ConfigError
from rag.secrets import redact_url_credentials

SECRET_ERROR = "secret_value"  # an error type whose input is never echoed
ENTRY_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"  # a list entry's name, usable as a key-path part


class _Boolean:
    """A boolean given where a number is expected: no numeric type accepts it, so pydantic reports
    the field with its own location, and the translator says what was wrong."""

    def __init__(self, value: bool):
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


class ConfigModel(BaseModel):
    """The one base of every settings model: unknown keys are errors; a boolean is not a number
    (``top_k: true`` is refused, not read as 1); NaN and infinity are not numbers either (``k: .inf``
    is refused); a validated model is frozen (changed only through ``model_copy(update=...)``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _booleans_are_not_numbers(cls, data: Any) -> Any:
        # A model-level hook: pydantic forbids field-level "before" validators on discriminator fields.
        if not isinstance(data, Mapping):
            return data
        flagged = {
            name: _Boolean(value)
            for name, value in data.items()
            if isinstance(value, bool) and name in cls.model_fields and _expects_number(cls.model_fields[name].annotation)
        }
        return {**data, **flagged} if flagged else data


def _expects_number(annotation: Any) -> bool:
    """True when the annotation accepts int or float but not bool (``Optional``/``Annotated`` unwrapped)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _expects_number(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        members = typing.get_args(annotation)
        return bool not in members and any(_expects_number(member) for member in members)
    return annotation in (int, float)


def config_error_from_validation(
    exc: ValidationError,
    data: Any,
    model: Any,
    prefix: str = "",
    source: str | Path | None = None,
) -> ConfigError:
    """The first validation error as a ConfigError: dotted key path + what was expected.

    ``model`` is the model class validated (or a list of the members of a discriminated union), used
    to list the allowed keys when a key is unknown."""
    error = exc.errors(include_url=False)[0]
    parts, model_at = _locate(error["loc"], data, model)
    key = ".".join(part for part in [prefix, *parts] if part) or "<root>"
    if error["type"] == "extra_forbidden":
        allowed = sorted(model_at.model_fields) if model_at is not None else []
        message = "unknown key" + (f"; expected one of: {', '.join(allowed)}" if allowed else "")
    elif error["type"] == "missing":
        message = "missing required key"
    elif error["type"] == SECRET_ERROR:
        message = error["msg"]  # the value may be a secret: not shown
    elif isinstance(error.get("input"), _Boolean):
        message = f"expected a number, not a boolean (got {error['input']!r})"
    else:
        shown = redact_url_credentials(repr(error.get("input")))
        message = f"{error['msg'].removeprefix('Value error, ')} (got {shown})"
    return ConfigError(key, message, source)


def _locate(loc: Sequence[Any], data: Any, model: Any) -> tuple[list[str], type[BaseModel] | None]:
    """Walk pydantic's error location through the input data, naming list entries by their ``name``
    when they have one, dropping the union tags pydantic adds (e.g. the ``wiki`` in
    ``dataset.wiki.path``), and track the model class at the end (for the list of allowed keys)."""
    parts: list[str] = []
    node, current = data, model
    parent_model: Any = model
    for position, item in enumerate(loc):
        is_last = position == len(loc) - 1
        if isinstance(node, Mapping) and item in node:
            parts.append(str(item))
            parent_model = current
            current = _field_model(current, str(item))
            node = node[item]
        elif isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node):
            node = node[item]
            parts.append(entry_label(node, item))
        elif is_last or not isinstance(item, str):
            parts.append(str(item))
            parent_model = current
            node = None
        else:  # a tag of a (discriminated) union: select the member, keep the path clean
            current = _union_member(current, item)
    return parts, parent_model if isinstance(parent_model, type) else None


def entry_label(entry: Any, index: int) -> str:
    """A list entry's part of a key path: its ``name`` when it has a valid one, else its index."""
    name = entry.get("name") if isinstance(entry, Mapping) else None
    return name if isinstance(name, str) and re.match(ENTRY_NAME_PATTERN, name) else str(index)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """BaseModel classes inside an annotation (Optional, Union, list[...], Annotated[...])."""
    if isinstance(annotation, type) and issubclass(annotation, RootModel):
        return _models_in(annotation.model_fields["root"].annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def _field_model(model: Any, field: str) -> Any:
    candidates = model if isinstance(model, list) else [model]
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel) and field in candidate.model_fields:
            members = _models_in(candidate.model_fields[field].annotation)
            return members[0] if len(members) == 1 else (members or None)
    return None


def _union_member(model: Any, tag: str) -> Any:
    candidates = model if isinstance(model, list) else [model]
    for candidate in candidates:
        if not (isinstance(candidate, type) and issubclass(candidate, BaseModel)):
            continue
        for field in candidate.model_fields.values():
            if typing.get_origin(field.annotation) is Literal and tag in typing.get_args(field.annotation):
                return candidate
    return model
