"""One PNG per grid key: the selection metric against the key's values, dev and test, with the
bootstrap CI band, one panel per question set and one colour per method the key touches.

With several grid keys a curve is a slice through the chosen point: the method's other touched
keys stay at the values chosen on dev. The dev curve is dashed (the data the choice was made on),
the test curve solid with its CI band; the star marks the chosen value and the dotted line the
test score of the config's own setting.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from rag.sweep.grid import CONFIG_POINT, GridAxis, GridPoint
from rag.sweep.split import DEV, TEST


def plot_file_name(key: str) -> str:
    return "sweep_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", key) + ".png"


def write_plots(directory: Path, axes: Sequence[GridAxis], points: Sequence[GridPoint], table: pd.DataFrame,
                selection: pd.DataFrame, touched: Mapping[str, Sequence[str]], metric: str) -> list[Path]:
    """Write one PNG per grid key that touches some method; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_id = {p.id: p for p in points}
    sets = list(dict.fromkeys(table["question_set"]))
    rows = table.set_index(["point", "method", "question_set", "split"])
    paths = []
    for axis in axes:
        methods = [m for m, keys in touched.items() if axis.key in keys]
        if not methods:
            continue
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in axis.values)
        position = {repr(v): (v if numeric else i) for i, v in enumerate(axis.values)}
        columns = min(len(sets), 2)
        figure, panels = plt.subplots(math.ceil(len(sets) / columns), columns, squeeze=False,
                                      figsize=(5.2 * columns, 3.4 * math.ceil(len(sets) / columns)), dpi=100)
        for panel, question_set in zip(panels.flat, sets):
            for colour, method in enumerate(methods):
                chosen = by_id[selection.set_index(["method", "question_set"]).loc[(method, question_set), "chosen_point"]]
                fixed = {k: repr(chosen.values[k]) for k in touched[method] if k != axis.key}
                slice_ids = {}
                for point in points:
                    if point.id != CONFIG_POINT and all(repr(point.values[k]) == v for k, v in fixed.items()):
                        slice_ids.setdefault(repr(point.values[axis.key]), point.id)
                xs = [position[value] for value in slice_ids]
                test = [rows.loc[(pid, method, question_set, TEST)] for pid in slice_ids.values()]
                dev = [rows.loc[(pid, method, question_set, DEV)][metric] for pid in slice_ids.values()]
                line = f"C{colour}"
                panel.plot(xs, [r[metric] for r in test], "-o", color=line, markersize=3, label=f"{method} test")
                panel.fill_between(xs, [r[f"{metric}_ci_low"] for r in test], [r[f"{metric}_ci_high"] for r in test],
                                   color=line, alpha=0.15, linewidth=0)
                panel.plot(xs, dev, "--", color=line, alpha=0.7, label=f"{method} dev")
                mark = rows.loc[(chosen.id, method, question_set, TEST)][metric]
                panel.plot([position[repr(chosen.values[axis.key])]], [mark], "*", color=line, markersize=12)
                panel.axhline(rows.loc[(CONFIG_POINT, method, question_set, TEST)][metric], color=line, linestyle=":",
                              linewidth=1)
            panel.set_title(question_set, fontsize=10)
            panel.set_xlabel(axis.key, fontsize=8)
            panel.set_ylabel(metric, fontsize=8)
            if not numeric:
                panel.set_xticks(range(len(axis.values)), [str(v) for v in axis.values], fontsize=8)
            panel.legend(fontsize=7)
        for panel in list(panels.flat)[len(sets):]:
            panel.set_visible(False)
        figure.suptitle(f"{metric} against {axis.key}\nsolid: test with CI; dashed: dev; star: chosen on dev; "
                        "dotted: the config's setting on test", fontsize=8)
        figure.tight_layout()
        path = directory / plot_file_name(axis.key)
        figure.savefig(path, format="png")
        plt.close(figure)
        paths.append(path)
    return paths
