"""``rag-bench reproduce --update-expected NAME``: the measured values of a condition's last run
written into its YAML file as the new expected values, every other character of the file kept
(comments, tolerances, layout).

The file is parsed into YAML nodes (:func:`yaml.compose`), which carry the character span of each
expected value; only those spans are replaced, by the measured value written to 6 decimals
(:func:`value_text`), and the file is replaced atomically. The unified diff of the change is returned
for printing. A cell that was not measured keeps its expected value.
"""

from __future__ import annotations

import difflib

import yaml

from rag.io_utils import atomic_write_text
from rag.reproduce.matrix import Condition
from rag.reproduce.runner import ConditionResult


def value_text(value: float) -> str:
    """``value`` to 6 decimals without trailing zeros, always with a decimal point (YAML 1.1 reads
    ``1e-06`` as a string, ``0.000001`` as a float)."""
    text = f"{value:.6f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _mapping_value(node: yaml.Node, key: str) -> yaml.Node:
    for key_node, value_node in node.value:
        if key_node.value == key:
            return value_node
    raise KeyError(key)


def update_expected(condition: Condition, result: ConditionResult) -> str:
    """Write ``result``'s measured values into ``condition``'s file; return the unified diff ('' when
    nothing changed)."""
    text = condition.path.read_text(encoding="utf-8")
    measured = {(cell.row, cell.metric): cell.measured for cell in result.cells}
    rows = _mapping_value(yaml.compose(text), "rows")
    spans = []
    for row, row_node in zip(condition.spec.rows, rows.value):
        expected = _mapping_value(row_node, "expected")
        for key_node, value_node in expected.value:
            value = measured.get((row.label, key_node.value))
            if value is not None:
                spans.append((value_node.start_mark.index, value_node.end_mark.index, value_text(value)))
    updated = text
    for start, end, new in sorted(spans, reverse=True):
        updated = updated[:start] + new + updated[end:]
    if updated == text:
        return ""
    atomic_write_text(condition.path, updated)
    return "".join(difflib.unified_diff(text.splitlines(keepends=True), updated.splitlines(keepends=True),
                                        fromfile=str(condition.path), tofile=str(condition.path)))
