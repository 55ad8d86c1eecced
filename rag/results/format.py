"""One format for every number and significance mark, in the terminal, Markdown and HTML.

- a mean or a difference: 3 decimals (``0.758``, ``+0.019``); a CI: ``[0.726, 0.791]``;
- significance: the superscript letters of the methods a row beats (``0.806ᵃᵇᶜ``), the same
  characters in all three outputs;
- the verdict: one sentence per question set and metric (:func:`verdict_line`).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import pandas as pd
from tabulate import tabulate

from rag.results.comparison import Comparison, headline_metrics

SUPERSCRIPTS = dict(zip("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"))
MISSING = "–"
TERMINAL_WIDTH = 100


def number(value: float | None) -> str:
    return MISSING if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def signed(value: float | None) -> str:
    return MISSING if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:+.3f}"


def interval(low: float, high: float, sign: bool = False) -> str:
    show = signed if sign else number
    return f"[{show(low)}, {show(high)}]"


def marks(beats: str) -> str:
    """Superscript letters of the beaten methods."""
    return "".join(SUPERSCRIPTS.get(letter, letter) for letter in beats or "")


def cell(row: pd.Series, metric: str, with_ci: bool) -> str:
    """``mean [low, high]ᵃᵇ`` (or ``meanᵃᵇ``); ``–`` where undefined (e.g. answer metrics of a retrieval-only run)."""
    mean = row.get(metric)
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return MISSING
    ci = f" {interval(row[f'{metric}_ci_low'], row[f'{metric}_ci_high'])}" if with_ci else ""
    return f"{number(mean)}{ci}{marks(row.get(f'{metric}_beats', ''))}"


def display_table(comparison: Comparison, metrics: Sequence[str] | None = None, with_ci: bool = True,
                  costs: bool = True) -> pd.DataFrame:
    """One formatted row per question set x method."""
    table = comparison.table
    chosen = [m for m in (comparison.metrics if metrics is None else metrics) if m in comparison.metrics]
    out = pd.DataFrame({
        "set": table["question_set"],
        "method": [f"{m} ({comparison.letters[m]})" for m in table["method"]],
        "n": table["questions"],
    })
    for metric in chosen:
        out[metric] = [cell(row, metric, with_ci) for _, row in table.iterrows()]
    if costs:
        out["answered"] = table["answered"]
        out["failures"] = table["failures"]
        out["ret ms/q"] = table["retrieval_ms_per_query"].map(lambda v: MISSING if math.isnan(v) else f"{v:.2f}")
        out["gen s/q"] = table["generation_s_per_question"].map(lambda v: MISSING if math.isnan(v) else f"{v:.2f}")
        out["chunks/answer"] = table["chunks_used"].map(lambda v: MISSING if math.isnan(v) else f"{v:.1f}")
    return out


def markdown(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (tabulate), pipes in cells escaped."""
    escaped = frame.map(lambda v: str(v).replace("|", "\\|").replace("\n", " "))
    return tabulate(escaped, headers="keys", tablefmt="github", showindex=False, disable_numparse=True)


def verdict_line(verdict: pd.Series | dict) -> str:
    """``convex best on mrr@10 (0.806): +0.019 [+0.008, +0.031] over rrf (0.787), significant (p=0.002)``."""
    v = verdict
    if v["margin"] == 0 and v["best_mean"] == v["runner_up_mean"]:
        return (f"no single best on {v['metric']}: {v['best']} and {v['runner_up']} tie at {number(v['best_mean'])} "
                "(mean paired difference 0)")
    outcome = "significant" if v["significant"] else "not significant"
    p = MISSING if math.isnan(v["p_adjusted"]) else f"{v['p_adjusted']:.3g}"
    return (f"{v['best']} best on {v['metric']} ({number(v['best_mean'])}): {signed(v['margin'])} "
            f"{interval(v['margin_ci_low'], v['margin_ci_high'], sign=True)} over {v['runner_up']} "
            f"({number(v['runner_up_mean'])}), {outcome} (p={p})")


def verdict_lines(comparison: Comparison, metrics: Sequence[str] | None = None, width: int = TERMINAL_WIDTH) -> list[str]:
    """The verdicts, one block per question set, each line wrapped to ``width``."""
    lines: list[str] = []
    verdicts = comparison.verdicts
    if verdicts.empty:
        return ["(one method: no verdict)"]
    for question_set, part in verdicts.groupby("question_set", sort=False):
        n = int(comparison.table.loc[comparison.table["question_set"] == question_set, "questions"].iloc[0])
        lines.append(f"{question_set} ({n} question{'' if n == 1 else 's'}):")
        for _, verdict in part.iterrows():
            if metrics is None or verdict["metric"] in metrics:
                lines += textwrap.wrap(verdict_line(verdict), width=width, initial_indent="  ", subsequent_indent="    ")
    return lines


def legend(comparison: Comparison, convention: str, level: str) -> str:
    s = comparison.settings
    return (
        f"Cells: mean [{s.confidence:.0%} percentile-bootstrap CI, {s.n_resamples} resamples, seed {s.seed}]; "
        f"superscript letters mark the methods a row beats with p < {s.alpha} on the same questions "
        f"({comparison.test_name}). Retrieval metrics at {level} level, {convention} convention; questions "
        f"without ground truth left out; {MISSING} = undefined (answer-only baselines such as closed_book and oracle "
        "have no retrieval metrics). answer_in_context@k: a reference answer occurs in the top-k chunks. Answer "
        "metrics (em, f1, match) over answered questions only; failed generations are counted in `failures`, never "
        "scored. chunks/answer: mean chunks in the prompt. Verdict margins: paired bootstrap CI of the difference."
    )


def terminal_tables(comparison: Comparison, width: int = TERMINAL_WIDTH) -> list[str]:
    """The headline metrics without CIs, as plain tables no wider than ``width`` (split by columns)."""
    metrics = headline_metrics(comparison.metrics)
    base = display_table(comparison, metrics=[], with_ci=False, costs=False)[["set", "method"]]
    cells = display_table(comparison, metrics=metrics, with_ci=False, costs=False)
    blocks, current = [], []
    for metric in metrics:
        trial = tabulate(pd.concat([base, cells[current + [metric]]], axis=1), headers="keys", tablefmt="simple",
                         showindex=False, disable_numparse=True)
        if current and max(map(len, trial.splitlines())) > width:
            blocks.append(current)
            current = []
        current.append(metric)
    if current:
        blocks.append(current)
    return [tabulate(pd.concat([base, cells[block]], axis=1), headers="keys", tablefmt="simple", showindex=False,
                     disable_numparse=True) for block in blocks]
