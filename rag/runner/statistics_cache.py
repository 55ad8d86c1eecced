"""The statistics cache: a run's :class:`rag.results.comparison.Comparison` on disk, as JSON.

Bootstrap CIs and paired tests are the slowest part of a warm run, so the comparison is cached under
``<cache_dir>/statistics/<key>.json``, the key hashing the per-query columns it reads, the metrics
and the settings (not run-specific columns such as ``attempts``, which differ between a cold and a
cached run).

The file holds only JSON data — never a pickle, which would run code from anyone who can write to a
shared cache directory. Each field of the comparison is stored by kind: a table as its columns, each
with its dtype (one of :data:`DTYPES`) and its values (floats as Python writes them, which read back
bit for bit; NaN as ``NaN``); the settings as their fields; lists and mappings as they are. A file
that does not parse into exactly that shape is damaged: warned about and computed again.
"""

from __future__ import annotations

import dataclasses
import json
import logging
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


def cached_comparison(
    per_query: pd.DataFrame, metrics: Sequence[str], settings: StatisticsSettings, cache_dir: Path
) -> Comparison:
    """:func:`rag.results.comparison.compare`, read from the cache when it holds it (see the module)."""
    columns = ["question_set", "method", "qid", *metrics, *schema.STATISTICS_INPUTS]
    key = sha256_text(per_query[columns].to_csv(index=False) + json.dumps([list(metrics), vars(settings)]))
    path = cache_dir / "statistics" / f"{key[:32]}.json"
    if path.is_file():
        try:
            return comparison_from_json(json.loads(path.read_text(encoding="utf-8")))
        except _DAMAGED as exc:
            log.warning("ignoring unreadable statistics cache %s (%s: %s); computing it again", path,
                        type(exc).__name__, exc)
    comparison = compare(per_query, metrics, settings)
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
    hints = typing.get_type_hints(Comparison)
    values = {}
    for field in dataclasses.fields(Comparison):
        kind, raw = hints[field.name], data[field.name]
        if kind is pd.DataFrame:
            values[field.name] = frame_from_json(raw)
        elif dataclasses.is_dataclass(kind):
            values[field.name] = kind(**raw)
        else:
            expected = typing.get_origin(kind) or kind
            if isinstance(expected, type) and not isinstance(raw, expected):
                raise TypeError(f"{field.name}: expected {kind}, got {type(raw).__name__}")
            values[field.name] = raw
    return Comparison(**values)
