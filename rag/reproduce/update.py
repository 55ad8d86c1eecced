"""``rag-bench reproduce --update-expected NAME``: the measured values of a condition's last run
written into its YAML file as the new expected values, every other character of the file kept
(comments, tolerances, layout).

The file is parsed into YAML nodes (:func:`yaml.compose`), which carry the character span of each
expected value; only those spans are replaced, by the measured value written to 6 decimals
(:func:`value_text`), and the file is replaced atomically, keeping its mode and, when it is a
symbolic link, the link (:func:`rag.reproduce.matrix.rewrite_in_place`). The unified diff of the change
is returned for printing. A cell that was not measured keeps its expected value. Rows that share a
value through a YAML anchor and alias (``&e`` / ``*e``) keep it when they measured the same value;
when they did not, the update is refused with one line naming both cells (the file is left alone).
"""

from __future__ import annotations

import difflib

import yaml

from rag.errors import ConfigError
from rag.reproduce.matrix import Condition, rewrite_in_place
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
    spans: dict[tuple[int, int], tuple[str, str]] = {}  # (start, end) -> (new text, the cell that wrote it)
    for index, (row, row_node) in enumerate(zip(condition.spec.rows, rows.value)):
        expected = _mapping_value(row_node, "expected")
        for key_node, value_node in expected.value:
            value = measured.get((row.label, key_node.value))
            if value is None:
                continue
            span, new, cell = (value_node.start_mark.index, value_node.end_mark.index), value_text(value), \
                f"rows.{index}.expected.{key_node.value}"
            if span in spans and spans[span][0] != new:  # one YAML node (&anchor / *alias) read by two cells
                raise ConfigError(cell, f"shares its YAML node (an &anchor / *alias) with {spans[span][1]}, and "
                                        f"they measured {spans[span][0]} and {new}; expected each row's values "
                                        "written out (no alias) to update them", source=condition.path)
            spans.setdefault(span, (new, cell))
    updated = text
    for (start, end), (new, _) in sorted(spans.items(), reverse=True):
        updated = updated[:start] + new + updated[end:]
    if updated == text:
        return ""
    rewrite_in_place(condition.path, updated)
    return "".join(difflib.unified_diff(text.splitlines(keepends=True), updated.splitlines(keepends=True),
                                        fromfile=str(condition.path), tofile=str(condition.path)))
