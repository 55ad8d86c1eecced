"""Sweep grids: ``--grid KEY=V1,V2,...`` axes, their cartesian product, and one config per point.

A key is a dotted config path as in ``--set`` (a list entry by index or, for the retrievers, by
name: ``retrievers.rrf.params.k``); the values are a YAML flow sequence without its brackets
(``0.1,0.3``, ``minmax,zscore``, ``[dense,bm25],[dense]``). Only settings of the system under test
can be swept — keys under ``retrievers``, ``chunking``, ``top_k`` and ``depth``: the data, the
questions and the evaluation stay fixed, or the points could not be compared with each other.

The grid's size, the product of the axes' lengths, is checked first, before any point is built: at
most ``--max-points`` points (default :data:`DEFAULT_MAX_POINTS`), since each point is a validated
config and at least one retrieval of every method it changes.

Every axis value is validated on its own first, so a bad key or value is reported with its key
(``--grid retrievers.rrf.params.kk: ...``); a combination that is invalid only together (e.g.
``chunking.overlap_tokens`` >= ``chunking.max_tokens``) names every key of that point.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rag.config import RunConfig, apply_override, config_from_mapping
from rag.errors import ConfigError

SWEEPABLE = ("retrievers", "chunking", "top_k", "depth")
DEFAULT_MAX_POINTS = 1000
CONFIG_POINT = "config"


@dataclass(frozen=True)
class GridAxis:
    key: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class GridPoint:
    """One point of the grid (``id`` ``p000``...), or the config's own setting (``id`` ``config``)."""

    id: str
    values: dict[str, Any]
    config: RunConfig


def parse_grid(text: str) -> GridAxis:
    """``KEY=V1,V2,...`` -> :class:`GridAxis` (values parsed as YAML, distinct, at least one)."""
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError("--grid", f"{text!r}: expected KEY=V1,V2,... (a dotted config key as in --set)")
    if key.split(".")[0] not in SWEEPABLE:
        raise ConfigError(
            f"--grid {key}",
            f"cannot be swept; expected a key under {', '.join(SWEEPABLE)} (data, questions and evaluation stay fixed)",
        )
    try:
        parsed = yaml.safe_load(f"[{values}]")
    except yaml.YAMLError:
        parsed = None
    if not isinstance(parsed, list) or not parsed:
        raise ConfigError(f"--grid {key}", f"values {values!r}: expected a comma-separated list of YAML values")
    encoded = [json.dumps(value, sort_keys=True) for value in parsed]
    if len(set(encoded)) != len(encoded):
        raise ConfigError(f"--grid {key}", f"values {values!r}: repeat a value; expected distinct values")
    return GridAxis(key, tuple(parsed))


def check_axes(axes: Sequence[GridAxis], max_points: int = DEFAULT_MAX_POINTS) -> None:
    keys = [axis.key for axis in axes]
    if not axes:
        raise ConfigError("--grid", "expected at least one --grid KEY=V1,V2,...")
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ConfigError(f"--grid {repeated[0]}", "given twice; expected each key once")
    size = math.prod(len(axis.values) for axis in axes)
    if size > max_points:
        raise ConfigError("--grid", f"the grid has {size:,} points ({' x '.join(str(len(a.values)) for a in axes)}), "
                                    f"more than --max-points {max_points:,}; expected fewer values, or a larger --max-points")


def with_values(raw: Mapping[str, Any], values: Mapping[str, Any], base_dir: Path, source: Path) -> RunConfig:
    """The config ``raw`` with ``values`` (dotted key -> value) set, validated."""
    point = copy.deepcopy(dict(raw))
    for key, value in values.items():
        apply_override(point, f"{key}={yaml.safe_dump(value, default_flow_style=True)}")
    return config_from_mapping(point, base_dir=base_dir, source=source)


def grid_points(raw: Mapping[str, Any], axes: Sequence[GridAxis], base_dir: Path, source: Path,
                max_points: int = DEFAULT_MAX_POINTS) -> list[GridPoint]:
    """The cartesian product of the axes (first axis slowest), each point's config validated."""
    check_axes(axes, max_points)
    for axis in axes:
        for value in axis.values:
            try:
                with_values(raw, {axis.key: value}, base_dir, source)
            except ConfigError as exc:
                raise ConfigError(f"--grid {axis.key}", f"value {value!r}: {_reason(exc)}") from None
    points = []
    for number, combination in enumerate(itertools.product(*(axis.values for axis in axes))):
        values = {axis.key: value for axis, value in zip(axes, combination)}
        try:
            config = with_values(raw, values, base_dir, source)
        except ConfigError as exc:
            keys = " ".join(f"{key}={value!r}" for key, value in values.items())
            raise ConfigError(f"--grid {keys}", f"this combination is invalid: {_reason(exc)}") from None
        points.append(GridPoint(f"p{number:03d}", values, config))
    return points


def _reason(exc: ConfigError) -> str:
    """The error without its file name (the key path stays: it says where the value landed)."""
    where = f"{exc.source}: " if exc.source else ""
    return str(exc).removeprefix(where)


def resolved_mapping(config: RunConfig) -> dict[str, Any]:
    """The config as JSON data with each retriever's parameters completed by their defaults."""
    data = config.model_dump(mode="json")
    for entry, spec in zip(data["retrievers"], config.retrievers):
        entry["params"] = spec.params.model_dump(mode="json")
    return data


def value_at(data: Any, key: str) -> Any:
    """The value at a dotted key of :func:`resolved_mapping` (list entries by index or name); None
    when the key is not set."""
    node = data
    for part in key.split("."):
        if isinstance(node, list):
            named = [i for i, item in enumerate(node) if isinstance(item, dict) and item.get("name") == part]
            index = named[0] if named else int(part) if part.lstrip("-").isdigit() else None
            node = node[index] if index is not None and -len(node) <= index < len(node) else None
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


def config_point(config: RunConfig, axes: Sequence[GridAxis]) -> GridPoint:
    """The config's own setting as a point: the value of every grid key in the config (defaults
    filled in; None where the key is unset)."""
    data = resolved_mapping(config)
    return GridPoint(CONFIG_POINT, {axis.key: value_at(data, axis.key) for axis in axes}, config)


def label(values: Mapping[str, Any], keys: Sequence[str]) -> str:
    """``alpha 0.3, k 30``: each key by its last component (the full key where two share it)."""
    lasts = [key.rsplit(".", 1)[-1] for key in keys]
    return ", ".join(f"{last if lasts.count(last) == 1 else key} {show(values[key])}" for key, last in zip(keys, lasts))


def show(value: Any) -> str:
    """A grid value for people: ``60`` for 60.0 and 60 alike, ``unset`` for None, text as is."""
    if value is None:
        return "unset"
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value)
