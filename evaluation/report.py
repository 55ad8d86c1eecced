"""Comparison tables and reports of a benchmark run.

Input is the per-query table (one row per question x method) with the metric columns; output is
one row per question set x method: the mean of every metric with its bootstrap confidence interval,
answer metrics over answered questions only (failed generations are counted in ``failures`` and
never averaged in as zeros), cost columns, and paired-significance markers in the ranx style: a
method's cell carries the letters of the methods it beats with p < alpha under the named paired
test on the same questions.

Writers: CSV, JSON, Markdown (own formatter, no tabulate), and a self-contained HTML report (jinja2
with autoescaping, so corpus text and answers cannot inject markup; matplotlib charts embedded as
base64 PNG).
"""

from __future__ import annotations

import base64
import io
import json
import math
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation.answers import ANSWER_METRICS
from evaluation.stats import compare_metrics
from rag.io_utils import atomic_write_bytes, atomic_write_json, atomic_write_text

HEADLINE_METRICS = ("mrr@10", "recall@10", "f1")
SUPERSCRIPTS = dict(zip("abcdefghijklmnop", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ"))


@dataclass(frozen=True)
class StatisticsSettings:
    """Bootstrap CIs and paired tests as :func:`evaluation.compare_methods` computes them."""

    confidence: float = 0.95
    n_resamples: int = 10000
    alpha: float = 0.05
    correction: str | None = "holm"
    seed: int = 0


@dataclass
class Comparison:
    """The comparison of one run: ``table`` (one row per set x method) and ``pairwise`` tests."""

    table: pd.DataFrame
    pairwise: pd.DataFrame
    metrics: list[str]
    settings: StatisticsSettings
    letters: dict[str, str] = field(default_factory=dict)

    @property
    def test_name(self) -> str:
        return str(self.pairwise["test"].iloc[0]) if not self.pairwise.empty else "none (one method)"


def compare(per_query: pd.DataFrame, metrics: Sequence[str], settings: StatisticsSettings) -> Comparison:
    """Build the comparison table and the pairwise tests from the per-query table.

    Required columns: ``question_set``, ``method``, ``qid``, every name in ``metrics`` (NaN = undefined
    or not answered, left out of means and tests), ``generation_status`` (``answered``/``failed``/
    ``not requested``), ``retrieval_ms``, ``generation_s``, ``prompt_tokens``, ``completion_tokens``.
    Means, CIs and tests come from :func:`evaluation.compare_methods` (computed by
    :func:`evaluation.compare_metrics` for all metrics of a question set at once), per question set and metric.
    """
    metrics = list(metrics)
    methods = list(dict.fromkeys(per_query["method"]))
    letters = {method: string.ascii_lowercase[i % 26] for i, method in enumerate(methods)}
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    pairwise_frames = []
    for question_set, frame in per_query.groupby("question_set", sort=False):
        for method, scores in frame.groupby("method", sort=False):
            status = scores["generation_status"]
            generated = scores[status != "not requested"]
            rows[(question_set, method)] = {
                "question_set": question_set,
                "method": method,
                "questions": len(scores),
                "answered": int((status == "answered").sum()),
                "failures": int((status == "failed").sum()),
                "retrieval_ms_per_query": float(scores["retrieval_ms"].mean()),
                "generation_s_per_question": float(generated["generation_s"].mean()) if len(generated) else math.nan,
                "prompt_tokens": int(generated["prompt_tokens"].sum()),
                "completion_tokens": int(generated["completion_tokens"].sum()),
                "chunks_used": float(generated["chunks_used"].mean()) if "chunks_used" in generated else math.nan,
            }
        compared = compare_metrics(
            frame, metrics, confidence=settings.confidence, n_resamples=settings.n_resamples,
            seed=settings.seed, alpha=settings.alpha, correction=settings.correction,
        )
        for metric in metrics:
            summary, pairwise = compared[metric]
            for item in summary.itertuples():
                row = rows[(question_set, item.method)]
                row[metric], row[f"{metric}_ci_low"], row[f"{metric}_ci_high"] = item.mean, item.ci_low, item.ci_high
                if metric not in ANSWER_METRICS:
                    row[f"{metric}_undefined"] = int(item.n_undefined)
            pairwise_frames.append(pairwise.assign(question_set=question_set, metric=metric))
    table = pd.DataFrame(list(rows.values()))
    pairwise = pd.concat(pairwise_frames, ignore_index=True) if pairwise_frames else pd.DataFrame()
    if not pairwise.empty:
        pairwise = pairwise[["question_set", "metric", *[c for c in pairwise.columns if c not in ("question_set", "metric")]]]
    for metric in metrics:
        table[f"{metric}_beats"] = [
            _beaten(pairwise, row.question_set, metric, row.method, letters) for row in table.itertuples()
        ]
    return Comparison(table, pairwise, metrics, settings, letters)


def _beaten(pairwise: pd.DataFrame, question_set: str, metric: str, method: str, letters: dict[str, str]) -> str:
    """Letters of the methods that ``method`` beats significantly on ``metric`` in ``question_set``."""
    if pairwise.empty:
        return ""
    rows = pairwise[(pairwise["question_set"] == question_set) & (pairwise["metric"] == metric) & pairwise["significant"]]
    beaten = [r.method_b for r in rows.itertuples() if r.method_a == method and r.mean_diff > 0]
    beaten += [r.method_a for r in rows.itertuples() if r.method_b == method and r.mean_diff < 0]
    return "".join(sorted(letters[m] for m in beaten))


# --------------------------------------------------------------------------------------------------
# Formatting


def _cell(row: pd.Series, metric: str, superscript: bool = True) -> str:
    mean = row[metric]
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    beats = row.get(f"{metric}_beats", "") or ""
    marks = "".join(SUPERSCRIPTS.get(c, f"^{c}") for c in beats) if superscript else (f" >{beats}" if beats else "")
    return f"{mean:.4f} [{row[f'{metric}_ci_low']:.3f}, {row[f'{metric}_ci_high']:.3f}]{marks}"


def display_table(
    comparison: Comparison, superscript: bool = True, metrics: Sequence[str] | None = None
) -> pd.DataFrame:
    """The human-readable table: one formatted cell per metric (mean [CI low, high] + markers);
    ``metrics`` picks a subset (default: all)."""
    table = comparison.table
    out = pd.DataFrame(
        {
            "set": table["question_set"],
            "method": [f"{m} ({comparison.letters[m]})" for m in table["method"]],
            "n": table["questions"],
        }
    )
    for metric in comparison.metrics if metrics is None else [m for m in metrics if m in comparison.metrics]:
        out[metric] = [_cell(row, metric, superscript) for _, row in table.iterrows()]
    out["answered"] = table["answered"]
    out["failures"] = table["failures"]
    out["ret ms/q"] = table["retrieval_ms_per_query"].map(lambda v: "–" if math.isnan(v) else f"{v:.2f}")
    out["gen s/q"] = table["generation_s_per_question"].map(lambda v: "–" if math.isnan(v) else f"{v:.2f}")
    out["tokens"] = table["prompt_tokens"] + table["completion_tokens"]
    out["chunks/answer"] = table["chunks_used"].map(lambda v: "–" if math.isnan(v) else f"{v:.1f}")
    return out


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (pipes in cells escaped)."""
    header = [str(c) for c in frame.columns]
    body = [[str(v).replace("|", "\\|").replace("\n", " ") for v in row] for row in frame.itertuples(index=False)]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in body]
    return "\n".join(lines)


def legend(comparison: Comparison, convention: str, level: str) -> str:
    s = comparison.settings
    return (
        f"Cells: mean [{s.confidence:.0%} percentile-bootstrap CI, {s.n_resamples} resamples, seed {s.seed}]; "
        f"letters mark the methods a row beats with p < {s.alpha} on the same questions ({comparison.test_name}). "
        f"Retrieval metrics at {level} level, {convention} convention; undefined queries (no ground truth) left out; "
        "– = undefined (answer-only baselines such as closed_book and oracle have no retrieval metrics). "
        "answer_in_context@k: a reference answer occurs in the top-k chunks. "
        "Answer metrics (em, f1, match) over answered questions only; failed generations are counted in `failures`, "
        "never scored. chunks/answer: mean chunks in the prompt."
    )


# --------------------------------------------------------------------------------------------------
# Writers


def write_comparison(comparison: Comparison, run_dir: Path, convention: str, level: str) -> None:
    """``comparison.csv`` (numbers), ``comparison.json`` (numbers + pairwise tests), ``comparison.md``."""
    atomic_write_text(run_dir / "comparison.csv", comparison.table.to_csv(index=False))
    atomic_write_json(
        run_dir / "comparison.json",
        {
            "convention": convention,
            "level": level,
            "statistics": vars(comparison.settings),
            "letters": comparison.letters,
            "rows": _records(comparison.table),
            "pairwise": _records(comparison.pairwise),
        },
    )
    pairwise_md = (
        markdown_table(comparison.pairwise.drop(columns=["test"]).round(4))
        if not comparison.pairwise.empty
        else "(one method: no pairs)"
    )
    atomic_write_text(
        run_dir / "comparison.md",
        f"# Comparison\n\n{markdown_table(display_table(comparison))}\n\n{legend(comparison, convention, level)}\n\n"
        f"## Paired tests\n\n{pairwise_md}\n",
    )


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts (NaN -> None)."""
    return json.loads(frame.to_json(orient="records", force_ascii=False))


def bar_chart_png(comparison: Comparison, question_set: str, metrics: Sequence[str]) -> str:
    """Grouped bars (one group per metric, one bar per method) with CI whiskers, as base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = comparison.table[comparison.table["question_set"] == question_set]
    metrics = [m for m in metrics if m in table and table[m].notna().any()]
    figure, axes = plt.subplots(figsize=(1.6 + 1.9 * max(len(metrics), 1), 3.4), dpi=100)
    width = 0.8 / max(len(table), 1)
    for i, (_, row) in enumerate(table.iterrows()):
        means = row[metrics].to_numpy(float)
        low = row[[f"{m}_ci_low" for m in metrics]].to_numpy(float)
        high = row[[f"{m}_ci_high" for m in metrics]].to_numpy(float)
        positions = np.arange(len(metrics)) + i * width
        axes.bar(positions, np.nan_to_num(means), width, label=row["method"])
        whiskers = np.clip([means - low, high - means], 0, None)  # 0 where rounding puts the mean on a bound
        axes.errorbar(positions, means, yerr=whiskers, fmt="none", ecolor="black", capsize=3)
    axes.set_xticks(np.arange(len(metrics)) + width * (len(table) - 1) / 2, metrics)
    axes.set_ylim(0, 1)
    axes.set_title(f"{question_set}: mean with {comparison.settings.confidence:.0%} CI")
    axes.legend(fontsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def breakdown_by_type(per_query: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Mean of each metric per question set x question type x method (NaN left out), with counts."""
    grouped = per_query.groupby(["question_set", "qtype", "method"], sort=False)
    frame = grouped[list(metrics)].mean().round(4)
    frame.insert(0, "n", grouped.size())
    return frame.reset_index()


def failure_analysis(per_query: pd.DataFrame, hit_metric: str, f1_threshold: float = 0.5) -> pd.DataFrame:
    """Where answers go wrong, per set x method, over the questions sent to the generator:
    ``generation failed``; ``retrieval miss`` (no relevant URL in the top k: ``hit_metric`` == 0);
    ``answer miss`` (retrieved, but answer F1 < ``f1_threshold``); ``answered well`` (F1 >= it)."""
    asked = per_query[per_query["generation_status"] != "not requested"]
    outcome = np.select(
        [
            asked["generation_status"] == "failed",
            asked[hit_metric] == 0,  # NaN (no gold, or an answer-only baseline) is no retrieval miss
            asked["f1"] < f1_threshold,
        ],
        ["generation failed", "retrieval miss", "answer miss"],
        default="answered well",
    )
    counts = pd.crosstab([asked["question_set"], asked["method"]], outcome)
    for column in ("retrieval miss", "answer miss", "answered well", "generation failed"):
        if column not in counts:
            counts[column] = 0
    return counts[["retrieval miss", "answer miss", "answered well", "generation failed"]].reset_index()


EXAMPLE_COLUMNS = ["question_set", "method", "question", "answer", "reference", "f1"]
HTML_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.q{max-width:380px} .note{color:#555;font-size:13px}
</style></head><body>
<h1>{{ title }}</h1>
<p class="note">{{ legend }}</p>
<ul class="note">{% for item in facts %}<li>{{ item }}</li>{% endfor %}</ul>
<h2>Comparison</h2>
{{ comparison_table }}
{% for name, png in charts %}<h3>{{ name }}</h3>
<img alt="bar chart of {{ name }}" src="data:image/png;base64,{{ png }}">{% endfor %}
<h2>Paired tests</h2>
{{ pairwise_table }}
<h2>By question type</h2>
{{ type_table }}
<h2>Failure analysis</h2>
<p class="note">Over the questions sent to the generator. Retrieval miss: no relevant URL in the top k.
Answer miss: a relevant URL was retrieved but answer F1 &lt; {{ f1_threshold }}.</p>
{{ failure_table }}
<h3>Examples of answer misses</h3>
<table><tr><th>set</th><th>method</th><th>question</th><th>answer</th><th>reference</th><th>f1</th></tr>
{% for ex in examples %}<tr><td>{{ ex.question_set }}</td><td>{{ ex.method }}</td><td class="q">{{ ex.question }}</td>
<td class="q">{{ ex.answer }}</td><td class="q">{{ ex.reference }}</td><td>{{ ex.f1 }}</td></tr>{% endfor %}
</table>
{% if errors %}<h3>Generation failures</h3>
<table><tr><th>set</th><th>method</th><th>question</th><th>error</th></tr>
{% for ex in errors %}<tr><td>{{ ex.question_set }}</td><td>{{ ex.method }}</td>
<td class="q">{{ ex.question }}</td><td class="q">{{ ex.error }}</td></tr>{% endfor %}
</table>{% endif %}
</body></html>
"""


def html_table(frame: pd.DataFrame) -> str:
    """An HTML table with every cell escaped (pandas ``escape=True``)."""
    return frame.to_html(index=False, escape=True, na_rep="–", border=0)


def write_html_report(
    path: Path,
    title: str,
    comparison: Comparison,
    per_query: pd.DataFrame,
    convention: str,
    level: str,
    hit_metric: str,
    facts: Sequence[str] = (),
    n_examples: int = 12,
) -> None:
    """The self-contained report: table, CI bar charts, pairwise tests, per-type breakdown and the
    failure analysis. All text (corpus, questions, answers, errors) is HTML-escaped."""
    from markupsafe import Markup
    from jinja2 import Environment

    environment = Environment(autoescape=True)
    asked = per_query[per_query["generation_status"] != "not requested"]
    misses = asked[(asked["generation_status"] == "answered") & (asked[hit_metric] > 0) & (asked["f1"] < 0.5)]
    failed = asked[asked["generation_status"] == "failed"]
    charts = [
        (str(question_set), bar_chart_png(comparison, question_set, [m for m in comparison.metrics if ":" not in m]))
        for question_set in dict.fromkeys(comparison.table["question_set"])
    ]
    pairwise = comparison.pairwise
    html = environment.from_string(HTML_TEMPLATE).render(
        title=title,
        legend=legend(comparison, convention, level),
        facts=list(facts),
        comparison_table=Markup(html_table(display_table(comparison, superscript=False))),
        charts=charts,
        pairwise_table=Markup(html_table(pairwise) if not pairwise.empty else "<p>One method: no pairs.</p>"),
        type_table=Markup(html_table(breakdown_by_type(per_query, comparison.metrics))),
        failure_table=Markup(html_table(failure_analysis(per_query, hit_metric))) if len(asked) else "",
        f1_threshold=0.5,
        examples=[
            {**row, "f1": f"{row['f1']:.2f}"}
            for row in misses.head(n_examples)[EXAMPLE_COLUMNS].to_dict("records")
        ],
        errors=failed.head(n_examples)[["question_set", "method", "question", "error"]].to_dict("records"),
    )
    atomic_write_bytes(path, html.encode("utf-8"))
