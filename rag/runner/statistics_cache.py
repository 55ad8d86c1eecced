"""The statistics cache: a run's :class:`rag.results.comparison.Comparison` on disk, as JSON.

Bootstrap CIs and paired tests are the slowest part of a warm run, so the comparison is cached under
``<cache_dir>/statistics/<key>.json``, the key hashing the per-query columns it reads, the metrics,
the settings, the primary metric, the control and :data:`STATISTICS_VERSION` (not run-specific columns
such as ``attempts``, which differ between a cold and a cached run).

The file holds only JSON data — never a pickle, which would run code from anyone who can write to a
shared cache directory. Each field of the comparison is stored by kind: a table as its columns, each
with its dtype (one of :data:`DTYPES`) and its values (floats as Python writes them, which read back
bit for bit; NaN as ``NaN``); a dataclass (the settings, the recommendation) as its fields, rebuilt
from its type hints; lists and mappings as they are. A file that does not parse into exactly that
shape is damaged: warned about and computed again.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rag.io_utils import atomic_write_text, sha256_text
from rag.results import schema
from rag.results.comparison import Comparison, StatisticsSettings, compare

log = logging.getLogger(__name__)
DTYPES = frozenset({"float64", "int64", "bool", "object", "str", "string"})
_DAMAGED = (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError)
#: Bumped whenever :class:`Comparison` gains fields, so older cached statistics are recomputed.
STATISTICS_VERSION = 7


def cached_comparison(
    per_query: pd.DataFrame, metrics: Sequence[str], settings: StatisticsSettings, cache_dir: Path,
    primary: str | None = None, control: str | None = None,
) -> Comparison:
    """:func:`rag.results.comparison.compare`, read from the cache when it holds it (see the module)."""
    noise = [schema.RETRIEVAL_MS_NOISE] if schema.RETRIEVAL_MS_NOISE in per_query else []  # absent in older tables
    columns = ["question_set", "method", "qid", *metrics, *schema.STATISTICS_INPUTS, *noise]
    key = sha256_text(per_query[columns].to_csv(index=False)
                      + json.dumps([list(metrics), vars(settings), primary, control, STATISTICS_VERSION]))
    path = cache_dir / "statistics" / f"{key[:32]}.json"
    if path.is_file():
        try:
            return comparison_from_json(json.loads(path.read_text(encoding="utf-8")))
        except _DAMAGED as exc:
            log.warning("ignoring unreadable statistics cache %s (%s: %s); computing it again", path,
                        type(exc).__name__, exc)
    comparison = compare(per_query, metrics, settings, primary=primary, control=control)
    try:
        text = json.dumps(comparison_to_json(comparison))
    except (TypeError, ValueError) as exc:  # a value JSON cannot hold: not cached, still correct
        log.debug("statistics not cached (%s)", exc)
        return comparison
    atomic_write_text(path, text)
    return comparison


def frame_to_json(frame: pd.DataFrame) -> dict[str, Any]:
    dtypes = [str(dtype) for dtype in frame.dtypes]
    unknown = sorted(set(dtypes) - DTYPES)
    if unknown:
        raise TypeError(f"columns of dtype {unknown}")
    return {"columns": [str(c) for c in frame.columns], "dtypes": dtypes,
            "values": [frame[c].tolist() for c in frame.columns]}


def frame_from_json(data: dict[str, Any]) -> pd.DataFrame:
    columns, dtypes, values = data["columns"], data["dtypes"], data["values"]
    if not (len(columns) == len(dtypes) == len(values)) or not set(dtypes) <= DTYPES:
        raise ValueError("a table with unknown dtypes or ragged columns")
    if len({len(column) for column in values}) > 1:
        raise ValueError("columns of different lengths")
    return pd.DataFrame({name: pd.Series(column, dtype=dtype) for name, dtype, column in zip(columns, dtypes, values)},
                        columns=columns)


def comparison_to_json(comparison: Comparison) -> dict[str, Any]:
    """Each field of the comparison as JSON data, by kind (see the module docstring)."""
    data: dict[str, Any] = {}
    for field in dataclasses.fields(comparison):
        value = getattr(comparison, field.name)
        if isinstance(value, pd.DataFrame):
            data[field.name] = frame_to_json(value)
        elif dataclasses.is_dataclass(value):
            data[field.name] = dataclasses.asdict(value)
        else:
            data[field.name] = value
    return data


def comparison_from_json(data: dict[str, Any]) -> Comparison:
    """The inverse of :func:`comparison_to_json`; raises ValueError/TypeError/KeyError on any other shape."""
    return _from_json(Comparison, data, "comparison")


def _from_json(kind: Any, raw: Any, where: str) -> Any:
    """``raw`` read back as ``kind`` (a type hint): tables, dataclasses (recursively, from their type
    hints), optional values, lists and mappings of them; other values must already be of their type."""
    if kind is Any:
        return raw
    if kind is pd.DataFrame:
        return frame_from_json(raw)
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if raw is None and type(None) in args:
            return None
        options = [arg for arg in args if arg is not type(None)]
        if len(options) == 1:
            return _from_json(options[0], raw, where)
        if any(_is_instance(raw, arg) for arg in options):
            return raw
        raise TypeError(f"{where}: expected {kind}, got {type(raw).__name__}")
    if dataclasses.is_dataclass(kind):
        if not isinstance(raw, dict):
            raise TypeError(f"{where}: expected the fields of {kind.__name__}, got {type(raw).__name__}")
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: _from_json(hints[f.name], raw[f.name], f"{where}.{f.name}")
                       for f in dataclasses.fields(kind) if f.init and (f.name in raw or _required(f))})
    if origin is list:
        if not isinstance(raw, list):
            raise TypeError(f"{where}: expected a list, got {type(raw).__name__}")
        return [_from_json(args[0] if args else Any, item, where) for item in raw]
    if origin is dict:
        if not isinstance(raw, dict):
            raise TypeError(f"{where}: expected a mapping, got {type(raw).__name__}")
        return {key: _from_json(args[1] if args else Any, value, where) for key, value in raw.items()}
    if not _is_instance(raw, kind):
        raise TypeError(f"{where}: expected {kind}, got {type(raw).__name__}")
    return raw


def _is_instance(raw: Any, kind: Any) -> bool:
    expected = typing.get_origin(kind) or kind
    if expected is float:
        return isinstance(raw, (int, float)) and not isinstance(raw, bool)
    return not isinstance(expected, type) or isinstance(raw, expected)


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
