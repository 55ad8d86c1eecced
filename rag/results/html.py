"""``report.html``: one self-contained page (no network) for a reader who wants to act.

Top to bottom: the headline (failed answers, question sets that cannot separate the methods:
:mod:`rag.results.headline`), the recommendation (per question set and overall, with its rule, and the
forest plot of its intervals against the margin band) beside each question set's figures (kept/asked,
leak, lexical bias, ceiling), and each method's answer lift over the no-context baseline; the
metric-by-metric verdicts, collapsed; a compact table per question set
with the best value per column
highlighted; each method's paired difference from the baseline per metric (CI whiskers); recall@k and
nDCG@k curves over the whole depth; latency against quality; the paired tests as a matrix per metric
(every test's details collapsible); the failure analysis in config order with retrieval-miss and
answer-miss examples from every set; a per-question drill-down.

The drill-down stays usable with 10,000 questions x 4 methods: its data is one JSON block (each
chunk's text stored once, cut to 300 characters; each method's top_k chunk ids per question), and a
small script renders only the current page of 25 matching questions, so the DOM never holds more
than that. All text reaches the page escaped (jinja2 autoescape; the script sets ``textContent``;
every ``<`` in the JSON block is written ``\\u003c``), so corpus text and answers cannot inject markup.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rag.io_utils import atomic_write_bytes
from rag.results import schema
from rag.results.comparison import Comparison, headline_metrics
from rag.results.format import (
    MISSING, column_best, interval, lift_lines, marks, number, overall_line, recommendation_lines, verdict_line,
)
from rag.results.recommendation import CANNOT_JUDGE, Recommendation
from rag.results.writers import pairwise_matrix

PASSAGE_CHARS = 300
FIGURE_WIDTH = 11.0  # inches at 100 dpi: 1100 px, scaled down by CSS to the page width


def _png(figure) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def difference_chart(comparison: Comparison, question_set: str, metrics: Sequence[str]) -> str | None:
    """One small panel per metric: each method's paired difference from the baseline with its CI."""
    diffs = comparison.differences
    if diffs.empty:
        return None
    part = diffs[(diffs["question_set"] == question_set) & diffs["metric"].isin(metrics) & diffs["mean_diff"].notna()]
    if part.empty:
        return None
    plt = _pyplot()
    shown = [m for m in metrics if m in set(part["metric"])]
    methods = list(dict.fromkeys(part["method"]))
    columns = min(4, len(shown))
    rows_n = math.ceil(len(shown) / columns)
    figure, axes = plt.subplots(rows_n, columns, figsize=(FIGURE_WIDTH, rows_n * (0.5 + 0.32 * len(methods)) + 0.5),
                                squeeze=False)
    for axis, metric in zip(axes.flat, shown):
        rows = part[part["metric"] == metric].set_index("method").reindex(methods)
        low = (rows["mean_diff"] - rows["ci_low"]).clip(lower=0).to_numpy()
        high = (rows["ci_high"] - rows["mean_diff"]).clip(lower=0).to_numpy()
        colors = ["#2a7" if lo > 0 else "#c44" if hi < 0 else "#888" for lo, hi in zip(rows["ci_low"], rows["ci_high"])]
        for position, (mean, below, above, color) in enumerate(zip(rows["mean_diff"], low, high, colors)):
            axis.errorbar([mean], [position], xerr=[[below], [above]], fmt="o", color=color, capsize=3)
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_yticks(range(len(methods)), methods)
        axis.set_ylim(-0.6, len(methods) - 0.4)
        axis.set_title(metric, fontsize=9)
        axis.tick_params(labelsize=7)
    for axis in list(axes.flat)[len(shown):]:
        axis.set_visible(False)
    figure.suptitle(f"{question_set}: difference from {part['baseline'].iloc[0]} (paired mean, "
                    f"{comparison.settings.confidence:.0%} CI)", fontsize=10)
    figure.tight_layout()
    return _png(figure)


def margin_chart(recommendation: Recommendation | None) -> str | None:
    """The forest plot of the verdict: per set, every other method's difference to the set's best with
    its simultaneous interval, against the margin band (shaded ±margin) and 0, so a reader sees which
    outcome it is: an interval left of the band (the best is better by more than the margin), inside it
    (equivalent), its lower end inside it (non-inferior), across an edge (undecided)."""
    if recommendation is None or not any(s.versus for s in recommendation.sets):
        return None
    rows = [(f"{s.question_set}: {v.method} - {s.best}", v, s.question_set in recommendation.unjudged)
            for s in recommendation.sets for v in s.versus]
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(FIGURE_WIDTH, 0.9 + 0.3 * len(rows)))
    delta = recommendation.margin
    axis.axvspan(-delta, delta, color="#dde8f6", zorder=0)
    axis.axvline(0, color="black", linewidth=0.8)
    for position, (_, v, unjudged) in enumerate(rows):
        low, high = v.interval
        if math.isnan(low) or math.isnan(high):
            continue
        inside = -delta < low and high < delta
        color = "#999" if unjudged else "#2a7" if inside else "#c44" if high < -delta else "#36c" if low > -delta \
            else "#d80"
        axis.plot([low, high], [position, position], color=color, linewidth=2.5, solid_capstyle="butt")
        axis.plot([v.difference], [position], "o", color=color)
    axis.set_yticks(range(len(rows)), [label + (" (cannot judge)" if unjudged else "") for label, _, unjudged in rows])
    axis.set_ylim(len(rows) - 0.4, -0.6)
    axis.tick_params(labelsize=8)
    axis.set_xlabel(f"difference on {recommendation.primary} to the set's best (simultaneous 95% interval)", fontsize=9)
    axis.set_title(f"shaded: the margin ±{delta:g}", fontsize=9)
    figure.tight_layout()
    return _png(figure)


def curve_chart(curves: pd.DataFrame, question_set: str) -> str | None:
    part = curves[curves["question_set"] == question_set]
    if part.empty:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(FIGURE_WIDTH, 3.3))
    for method, rows in part.groupby("method", sort=False):
        axes[0].plot(rows["k"], rows["recall"], label=method)
        axes[1].plot(rows["k"], rows["ndcg"], label=method)
    for axis, name in zip(axes, ("recall@k", "nDCG@k")):
        axis.set_xscale("log")
        axis.set_xlabel("k (chunks)")
        axis.set_title(f"{question_set}: URL-level {name}", fontsize=10)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.tight_layout()
    return _png(figure)


def latency_chart(comparison: Comparison, metric: str) -> str:
    plt = _pyplot()
    table = comparison.table
    sets = list(dict.fromkeys(table["question_set"]))
    figure, axes = plt.subplots(1, len(sets), figsize=(FIGURE_WIDTH, 3.0), squeeze=False)
    for axis, question_set in zip(axes[0], sets):
        rows = table[table["question_set"] == question_set]
        axis.scatter(rows["retrieval_ms_per_query"], rows[metric])
        for _, row in rows.iterrows():
            axis.annotate(row["method"], (row["retrieval_ms_per_query"], row[metric]), fontsize=8,
                          xytext=(3, 3), textcoords="offset points")
        axis.set_xlabel("retrieval ms / question", fontsize=8)
        axis.set_title(question_set, fontsize=10)
        axis.tick_params(labelsize=8)
    axes[0][0].set_ylabel(metric)
    figure.tight_layout()
    return _png(figure)


def compact_tables(comparison: Comparison) -> list[dict]:
    """Per question set: header and rows of (text, ci, is_best) cells for the headline metrics (a column
    whose values all tie has no best: :func:`rag.results.format.column_best`)."""
    metrics = headline_metrics(comparison.metrics)
    out = []
    for question_set, part in comparison.table.groupby("question_set", sort=False):
        best = column_best(part, metrics)
        rows = []
        for _, row in part.iterrows():
            cells = []
            for metric in metrics:
                value = row.get(metric)
                defined = value is not None and not (isinstance(value, float) and math.isnan(value))
                cells.append({
                    "text": f"{number(value)}{marks(row.get(f'{metric}_beats', ''))}" if defined else MISSING,
                    "ci": interval(row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]) if defined else "",
                    "best": defined and value == best.get(metric),
                })
            rows.append({"method": f"{row['method']} ({comparison.letters[row['method']]})", "cells": cells,
                         "n": int(row["questions"]), "answered": int(row["answered"]),
                         "ms": MISSING if math.isnan(row["retrieval_ms_per_query"]) else f"{row['retrieval_ms_per_query']:.2f}",
                         "llm": llm_cost(row)})
        out.append({"name": question_set, "metrics": metrics, "rows": rows,
                    "llm": any(row["llm"] for row in rows)})
    return out


def llm_cost(row: pd.Series) -> str:
    """``2.0 (812 tok)``: a method's LLM or endpoint calls per question and their tokens; empty when it makes none."""
    calls = row.get("llm_calls_per_query", 0.0)
    if not isinstance(calls, (int, float)) or math.isnan(calls) or calls == 0:
        return ""
    return f"{calls:.1f} ({row.get('llm_tokens_per_query', 0.0):.0f} tok)"


def failure_analysis(per_query: pd.DataFrame, hit_metric: str) -> pd.DataFrame:
    """Per set x method (config order), over the questions sent to the generator: ``generation
    failed``; ``retrieval miss`` (``hit_metric`` == 0); ``answer miss`` (retrieved, F1 below the
    threshold); ``answered well``."""
    asked = per_query[per_query[schema.GENERATION_STATUS] != schema.NOT_REQUESTED]
    outcome = np.select(
        [asked[schema.GENERATION_STATUS] == schema.FAILED, asked[hit_metric] == 0,  # NaN (baseline) is no miss
         asked["f1"] < schema.ANSWER_F1_THRESHOLD],
        ["generation failed", "retrieval miss", "answer miss"], default="answered well")
    columns = ["retrieval miss", "answer miss", "answered well", "generation failed"]
    counts = (asked.assign(outcome=outcome).groupby([schema.QUESTION_SET, schema.METHOD, "outcome"], sort=False)
              .size().unstack("outcome", fill_value=0).reindex(columns=columns, fill_value=0))
    return counts.reset_index()


def failure_examples(per_query: pd.DataFrame, hit_metric: str, per_kind: int = 2) -> list[dict]:
    """For every set x method: up to ``per_kind`` retrieval misses and answer misses."""
    asked = per_query[per_query[schema.GENERATION_STATUS] == schema.ANSWERED]
    examples = []
    for (question_set, method), part in asked.groupby([schema.QUESTION_SET, schema.METHOD], sort=False):
        retrieval = part[part[hit_metric] == 0].head(per_kind)
        answer = part[(part[hit_metric] > 0) & (part["f1"] < schema.ANSWER_F1_THRESHOLD)].head(per_kind)
        for kind, rows in (("retrieval miss", retrieval), ("answer miss", answer)):
            for _, row in rows.iterrows():
                examples.append({"set": question_set, "method": method, "kind": kind, "question": row[schema.QUESTION],
                                 "gold": ", ".join(_page_names(row[schema.GOLD_URLS])),
                                 "retrieved": ", ".join(_page_names(row[schema.RETRIEVED_URLS])[:5]),
                                 "answer": row[schema.ANSWER], "reference": row[schema.REFERENCE],
                                 "f1": number(row["f1"])})
    return examples


def _page_names(urls_json: str) -> list[str]:
    value = json.loads(urls_json)
    urls = list(value) if isinstance(value, dict) else [u for group in value for u in (group if isinstance(group, list) else [group])]
    return [url.rstrip("/").rsplit("/", 1)[-1] for url in urls]


def drilldown_data(per_query: pd.DataFrame, chunk_text: Mapping[str, str], chunk_url: Mapping[str, str],
                   hit_metric: str, top_k: int) -> dict:
    """The drill-down's JSON: each chunk once, each question once with every method's top_k ids."""
    methods = list(dict.fromkeys(per_query[schema.METHOD]))
    questions: dict[tuple[str, str], dict] = {}
    used: set[str] = set()
    for row in per_query.to_dict("records"):  # not itertuples: "hit@10" is no attribute name
        key = (row[schema.QUESTION_SET], row[schema.QID])
        gold = json.loads(row[schema.GOLD_URLS])
        entry = questions.setdefault(key, {
            "s": key[0], "id": key[1], "q": row[schema.QUESTION], "t": row[schema.QTYPE],
            "gold": list(gold) if isinstance(gold, dict) else [u for g in gold for u in g],
            "ref": row[schema.REFERENCE] if isinstance(row[schema.REFERENCE], str) else "", "m": {},
        })
        ids = json.loads(row[schema.RETRIEVED_CHUNKS])[:top_k]
        used.update(ids)
        f1 = row.get("f1")
        entry["m"][row[schema.METHOD]] = {
            "r": ids, "hit": 1 if (row.get(hit_metric) or 0) > 0 else 0,
            "f1": None if f1 is None or (isinstance(f1, float) and math.isnan(f1)) else round(float(f1), 3),
            "a": row[schema.ANSWER] if isinstance(row[schema.ANSWER], str) else "",
        }
    chunks = {cid: [chunk_url[cid], chunk_text[cid][:PASSAGE_CHARS]] for cid in sorted(used) if cid in chunk_text}
    return {"methods": methods, "sets": list(dict.fromkeys(per_query[schema.QUESTION_SET])), "k": top_k,
            "chunks": chunks, "questions": list(questions.values())}


def write_html_report(path: Path, title: str, comparison: Comparison, per_query: pd.DataFrame, curves: pd.DataFrame,
                      legend_text: str, facts: Sequence[str], hit_metric: str, chunk_text: Mapping[str, str],
                      chunk_url: Mapping[str, str], top_k: int, headline: Sequence[str] = (),
                      question_figures: Sequence[str] = ()) -> None:
    from jinja2 import Environment, PackageLoader
    from markupsafe import Markup

    environment = Environment(loader=PackageLoader("rag.results", "templates"), autoescape=True)
    metrics = headline_metrics(comparison.metrics)
    sets = list(dict.fromkeys(comparison.table["question_set"]))
    corrected = comparison.settings.correction is not None
    verdicts = {s: [verdict_line(v, corrected) for _, v in comparison.verdicts[comparison.verdicts["question_set"] == s].iterrows()]
                for s in sets} if not comparison.verdicts.empty else {}
    lines = recommendation_lines(comparison, width=10_000)
    answers = lift_lines(comparison, width=10_000)
    significant = {s: list(comparison.verdicts[comparison.verdicts["question_set"] == s]["significant"])
                   for s in sets} if not comparison.verdicts.empty else {}
    asked = per_query[per_query[schema.GENERATION_STATUS] != schema.NOT_REQUESTED]
    data = json.dumps(drilldown_data(per_query, chunk_text, chunk_url, hit_metric, top_k), ensure_ascii=False,
                      separators=(",", ":")).replace("<", "\\u003c")
    html = environment.get_template("report.html.j2").render(
        title=title,
        headline=list(headline),
        question_figures=list(question_figures),
        rule=lines[0].rstrip(":") + ".",
        overall=overall_line(comparison.recommendation) if comparison.recommendation else "",
        neutral=comparison.recommendation is None or comparison.recommendation.outcome == CANNOT_JUDGE,
        per_set=[line.strip() for line in lines[2:]] if comparison.recommendation else [],
        margin_chart=margin_chart(comparison.recommendation),
        answers={"head": answers[0], "lines": [line.strip() for line in answers[1:]]} if answers else None,
        verdicts=[{"set": s, "lines": list(zip(verdicts.get(s, []), significant.get(s, [])))} for s in sets],
        legend=legend_text,
        facts=list(facts),
        tables=compact_tables(comparison),
        differences=[(s, png) for s in sets if (png := difference_chart(comparison, s, metrics))],
        baseline=comparison.differences["baseline"].iloc[0] if not comparison.differences.empty else "",
        curves=[(s, png) for s in sets if (png := curve_chart(curves, s))],
        latency=latency_chart(comparison, metrics[0]) if metrics else None,
        matrices=[{"set": s, "metric": m, "frame": pairwise_matrix(comparison, s, m)} for s in sets for m in metrics],
        pairwise=comparison.pairwise.round(4).to_dict("records") if not comparison.pairwise.empty else [],
        test_name=comparison.test_name,
        failures=failure_analysis(per_query, hit_metric).to_dict("records") if len(asked) else [],
        examples=failure_examples(per_query, hit_metric) if len(asked) else [],
        f1_threshold=schema.ANSWER_F1_THRESHOLD,
        hit_metric=hit_metric,
        drilldown=Markup(data),
    )
    atomic_write_bytes(path, html.encode("utf-8"))
