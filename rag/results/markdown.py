"""The README's / docs' result tables and verdicts as Markdown, from a run directory's
``comparison.json`` and ``manifest.json``, so that every result statement in them is a run's own
verdict, not prose (``scripts/results_markdown.py`` prints it; ``rag-bench reproduce --readme``
writes it into the README).

In order: the run's headline warnings, the recommendation (overall and per question set, the rule's
own sentences), each method's answer lift over closed_book (pooled over the answered sets, with
CIs), per question set the methods with the chosen metrics (mean [95% CI] and the superscript
letters of the methods each beats; bold = the column's best), then the verdict lines.

:func:`compact_markdown` is the README's short form: the headline warnings, the recommendation and
one table of one metric, a row per question set and a column per method (mean [95% CI] and letters;
bold = the row's best).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from rag.results.format import column_best, interval, lift_cell, marks, number, overall_line, power_note, set_line, verdict_line
from rag.results.recommendation import Recommendation

DEFAULT_METRICS = ("mrr@10", "recall@10", "ndcg@10", "complete@10", "f1")


def results_markdown(run_dir: Path, metrics: Sequence[str] = DEFAULT_METRICS) -> list[str]:
    """The Markdown lines of one run directory (see the module's docstring)."""
    data = json.loads((run_dir / "comparison.json").read_text(encoding="utf-8"))
    table = pd.DataFrame(data["rows"])
    metrics = [m for m in metrics if m in table and table[m].notna().any()]
    letters = data["letters"]
    manifest = run_dir / "manifest.json"
    lines: list[str] = []
    for line in json.loads(manifest.read_text(encoding="utf-8")).get("headline", []) if manifest.exists() else []:
        lines += [f"> {line}", ""]
    lines += recommendation_lines(data) + lift_lines(data)
    lines += ["| question set | method | " + " | ".join(metrics) + " |", "|---|---|" + "---|" * len(metrics)]
    for question_set, part in table.groupby("question_set", sort=False):
        best = column_best(part, metrics)
        for i, row in enumerate(part.to_dict("records")):
            cells = []
            for m in metrics:
                if row[m] is None or pd.isna(row[m]):
                    cells.append("–")
                    continue
                text = f"{number(row[m])} {interval(row[f'{m}_ci_low'], row[f'{m}_ci_high'])}{marks(row.get(f'{m}_beats') or '')}"
                cells.append(f"**{text}**" if row[m] == best.get(m) else text)
            label = f"{question_set} ({row['questions']})" if i == 0 else ""
            lines.append(f"| {label} | {row['method']} ({letters[row['method']]}) | " + " | ".join(cells) + " |")
    lines.append("")
    verdicts = pd.DataFrame(data.get("verdict") or [])
    for question_set, part in (verdicts.groupby("question_set", sort=False) if "question_set" in verdicts else []):
        lines.append(f"- **{question_set}**: " + "; ".join(verdict_line(v) for v in part.to_dict("records")
                                                           if v["metric"] in metrics))
    return lines


def compact_markdown(run_dir: Path, metric: str | None = None) -> list[str]:
    """The headline warnings, the recommendation and one table: ``metric`` (default: the primary
    metric) per question set (rows) and method (columns); methods without a value (answer-only
    baselines) are left out."""
    data = json.loads((run_dir / "comparison.json").read_text(encoding="utf-8"))
    manifest = run_dir / "manifest.json"
    lines: list[str] = []
    for line in json.loads(manifest.read_text(encoding="utf-8")).get("headline", []) if manifest.exists() else []:
        lines += [f"> {line}", ""]
    return lines + recommendation_lines(data) + compact_table(data, metric or (data.get("recommendation") or {}).get(
        "primary", "ndcg@10"))


def compact_table(data: dict, metric: str) -> list[str]:
    """``| question set | dense (a) | ... |``, one row per set of ``metric`` (see :func:`compact_markdown`)."""
    table = pd.DataFrame(data["rows"])
    if metric not in table:
        return []
    table = table[table[metric].notna()]
    methods = list(dict.fromkeys(table["method"]))
    letters = data["letters"]
    lines = [f"{metric}, mean [95% CI]; a letter: significantly better than that method; bold: the set's best", "",
             "| question set | " + " | ".join(f"{m} ({letters[m]})" for m in methods) + " |",
             "|---|" + "---|" * len(methods)]
    for question_set, part in table.groupby("question_set", sort=False):
        best = column_best(part, [metric]).get(metric)
        by_method = {row["method"]: row for row in part.to_dict("records")}
        cells = []
        for method in methods:
            row = by_method.get(method)
            if row is None:
                cells.append("–")
                continue
            text = (f"{number(row[metric])} {interval(row[f'{metric}_ci_low'], row[f'{metric}_ci_high'])}"
                    f"{marks(row.get(f'{metric}_beats') or '')}")
            cells.append(f"**{text}**" if row[metric] == best else text)
        lines.append(f"| {question_set} ({int(part['questions'].iloc[0])}) | " + " | ".join(cells) + " |")
    return lines


def recommendation_lines(data: dict) -> list[str]:
    """The recommendation, overall and per question set, in the run's own sentences (rebuilt from
    comparison.json with the functions that printed them)."""
    if not data.get("recommendation"):
        return []
    recommendation = Recommendation.from_dict(data["recommendation"])
    corrected = data["statistics"].get("correction") is not None
    lines = [f"**Recommendation** (primary metric {recommendation.primary}, margin ±{recommendation.margin:g}, "
             f"simultaneous 95% intervals, paired tests at alpha {recommendation.alpha}; the rule: docs/evaluation.md, "
             "\"Recommendation\"): "
             f"{overall_line(recommendation)}", ""]
    for s in recommendation.sets:
        unjudged = " (its questions cannot judge: not counted)" if s.question_set in recommendation.unjudged else ""
        lines.append(f"- {set_line(s, corrected)}{unjudged}")
    return lines + [""]


def lift_lines(data: dict) -> list[str]:
    """Each method's answer lift over closed_book (the pooled scope, else the one answered set)."""
    lifts = pd.DataFrame(data.get("answer_lift") or [])
    if lifts.empty:
        return []
    scope = "all sets" if (lifts["question_set"] == "all sets").any() else lifts["question_set"].iloc[0]
    part = lifts[lifts["question_set"] == scope]
    metrics = list(dict.fromkeys(part["metric"]))
    n = int(part["n_pairs"].max())
    lines = [f"**Answers: lift over {part['control'].iloc[0]}** ({scope}, {n} questions answered by every method; "
             f"mean paired difference [95% CI], * = significant after Holm over {part['method'].nunique()} methods; "
             f"smallest possible p {part['smallest_p_adjusted'].min():.2g}):", "",
             "| method | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    for method in dict.fromkeys(part["method"]):
        cells = []
        for metric in metrics:
            row = part[(part["method"] == method) & (part["metric"] == metric)].iloc[0]
            text = lift_cell(row).split(" ", 1)[1]
            cells.append(text + (f" ({power_note(int(row['n_pairs']), row['smallest_p_adjusted'])})"
                                 if row["underpowered"] else ""))
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines + [""]
