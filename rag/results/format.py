"""One format for every number and significance mark, in the terminal, Markdown and HTML.

- a mean or a difference: 3 decimals (``0.758``, ``+0.019``); a CI: ``[0.726, 0.791]``;
- significance: the superscript letters of the methods a row beats (``0.806ᵃᵇᶜ``), the same
  characters in all three outputs;
- the recommendation first (:func:`recommendation_lines`), then each method's answer lift over the
  no-context baseline (:func:`lift_lines`), then the verdict: one sentence per question set and
  metric (:func:`verdict_line`);
- a test that could never be significant at its n reads "underpowered (n = 7: smallest possible p
  after Holm 0.23)", never "not significant".
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import pandas as pd
from tabulate import tabulate

from rag.results.comparison import POOLED, Comparison, headline_metrics
from rag.results.recommendation import CANNOT_JUDGE, NO_WINNER, WINNER, Recommendation, SetRecommendation
from rag.terminal import WIDTH

SUPERSCRIPTS = dict(zip("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"))
MISSING = "–"


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


def column_best(part: pd.DataFrame, metrics: Sequence[str]) -> dict[str, float]:
    """Per metric, the best (highest) value of one question set's rows to highlight; none for a column
    without a value or whose values all tie (highlighting every cell would say nothing)."""
    best = {}
    for metric in metrics:
        values = part[metric].dropna() if metric in part else pd.Series(dtype=float)
        if len(values) and not (len(values) > 1 and values.min() == values.max()):
            best[metric] = values.max()
    return best


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
        if "llm_calls_per_query" in table and table["llm_calls_per_query"].fillna(0).any():
            out["llm calls/q"] = table["llm_calls_per_query"].map(lambda v: MISSING if math.isnan(v) else f"{v:.1f}")
            out["llm tok/q"] = table["llm_tokens_per_query"].map(lambda v: MISSING if math.isnan(v) else f"{v:.0f}")
        out["gen s/q"] = table["generation_s_per_question"].map(lambda v: MISSING if math.isnan(v) else f"{v:.2f}")
        out["chunks/answer"] = table["chunks_used"].map(lambda v: MISSING if math.isnan(v) else f"{v:.1f}")
    return out


def markdown(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (tabulate), pipes in cells escaped."""
    escaped = frame.map(lambda v: str(v).replace("|", "\\|").replace("\n", " "))
    return tabulate(escaped, headers="keys", tablefmt="github", showindex=False, disable_numparse=True)


def power_note(n: int, smallest_p_adjusted: float, corrected: bool = True) -> str:
    """``underpowered (n = 7: smallest possible p after Holm 0.23)``."""
    after = " after Holm" if corrected else ""
    return f"underpowered (n = {n}: smallest possible p{after} {smallest_p_adjusted:.2g})"


def verdict_line(verdict: pd.Series | dict, corrected: bool = True) -> str:
    """``convex best on mrr@10 (0.806): +0.019 [+0.008, +0.031] over rrf (0.787), significant (p=0.002)``;
    a test that can never reach significance at its n ends in :func:`power_note` instead."""
    v = verdict
    if v["margin"] == 0 and v["best_mean"] == v["runner_up_mean"]:
        return (f"no single best on {v['metric']}: {v['best']} and {v['runner_up']} tie at {number(v['best_mean'])} "
                "(mean paired difference 0)")
    p = MISSING if v["p_adjusted"] is None or math.isnan(v["p_adjusted"]) else f"{v['p_adjusted']:.3g}"
    if v.get("underpowered"):
        outcome = f"{power_note(int(v['n_pairs']), v['smallest_p_adjusted'], corrected)}, p={p}"
    else:
        outcome = f"{'significant' if v['significant'] else 'not significant'} (p={p})"
    return (f"{v['best']} best on {v['metric']} ({number(v['best_mean'])}): {signed(v['margin'])} "
            f"{interval(v['margin_ci_low'], v['margin_ci_high'], sign=True)} over {v['runner_up']} "
            f"({number(v['runner_up_mean'])}), {outcome}")


def _ms(value: float) -> str:
    return MISSING if math.isnan(value) else f"{value:.1f} ms"


def overall_line(r: Recommendation) -> str:
    """The overall recommendation in one sentence (the rule: :mod:`rag.results.recommendation`)."""
    n, m = len(r.judged_sets), r.method
    if r.outcome == CANNOT_JUDGE:
        return (f"No recommendation on {r.primary}: the questions of no set can separate the methods (the warnings "
                "above say why); the per-set lines below are for reading, not for choosing.")
    left_out = (f" Left out: {', '.join(r.unjudged)} ({'its' if len(r.unjudged) == 1 else 'their'} questions "
                "cannot judge).") if r.unjudged else ""
    return _overall(r, n, m) + left_out


def _overall(r: Recommendation, n: int, m: str | None) -> str:
    if r.outcome == WINNER:
        cheapest = min(r.ms_per_query, key=lambda k: (math.inf if math.isnan(r.ms_per_query[k]) else r.ms_per_query[k]))
        cost = f"{_ms(r.ms_per_query[m])} per question" + (
            f" against {_ms(r.ms_per_query[cheapest])} for {cheapest}" if cheapest != m else " (the cheapest)")
        return (f"Use {m}: best on {r.primary} in {r.best_in[m]} of {n} sets, significantly better than every other "
                f"method in {r.wins[m]}, never significantly worse than the best; {cost}.")
    if r.outcome == NO_WINNER:
        head = (f"No winner on {r.primary}: {', '.join(r.eligible)} are never significantly worse than the best "
                "and none beats every other method in any set; ")
        if r.by_cost:
            return head + (f"use the cheapest, {m} ({_ms(r.ms_per_query[m])} per question, cheaper than the others "
                           "beyond their timing noise).")
        return head + (f"their costs are within timing noise of each other, so none is chosen on cost; best mean "
                       f"in the most sets: {m} ({_costs(r.eligible, r.ms_per_query, r.ms_noise)}).")
    return (f"No single method on {r.primary}: none is in the top group of every set; use each set's method "
            "below.")


def set_line(s: SetRecommendation, verdict: pd.Series | dict | None, corrected: bool = True) -> str:
    """One question set's recommendation with the best method's margin over the runner-up."""
    margin = ""
    if verdict is not None:
        margin = (f" {signed(verdict['margin'])} {interval(verdict['margin_ci_low'], verdict['margin_ci_high'], sign=True)}"
                  f" over {verdict['runner_up']}")
    others = len(s.versus)
    weak = [v for v in s.versus if v.state == "underpowered"]
    power = f"; {power_note(weak[0].n_pairs, weak[0].smallest_p_adjusted, corrected)}" if weak else ""
    head = f"{s.question_set} ({s.questions} q): "
    if s.outcome == WINNER:
        return (f"{head}use {s.method} ({number(s.best_mean)}),{margin}, significantly better than "
                f"{'the other method' if others == 1 else f'all {others} others'}{power}")
    if s.by_cost:
        cost = f"the cheapest beyond timing noise is {s.method} ({_ms(s.method_ms_per_query)})"
    else:
        ms = {s.method: s.method_ms_per_query, **{v.method: v.ms_per_query for v in s.versus}}  # method: the best
        noise = {s.method: s.method_ms_noise, **{v.method: v.ms_noise for v in s.versus}}
        cost = f"costs within timing noise ({_costs(s.top_group, ms, noise)})"
    return (f"{head}no winner: {', '.join(s.top_group)} not separable ({s.best} {number(s.best_mean)}{margin}); "
            f"{cost}{power}")


def _costs(methods: list[str], ms: dict[str, float], noise: dict[str, float]) -> str:
    """``dense 10.7 ± 2.1 ms, bm25 0.3 ms``: each method's cost per question and its noise when known."""
    return ", ".join(f"{m} {_ms(ms.get(m, math.nan))}" + (
        "" if math.isnan(noise.get(m, math.nan)) else f" (noise {noise[m]:.1f})") for m in methods)


def recommendation_lines(comparison: Comparison, width: int = WIDTH) -> list[str]:
    """The recommendation block: the rule's name, the overall sentence, one line per question set."""
    r = comparison.recommendation
    if r is None:
        return ["Recommendation: none (fewer than two methods with a retrieval metric)."]
    corrected = comparison.settings.correction is not None
    verdicts = comparison.verdicts
    lines = textwrap.wrap(f"Recommendation on {r.primary} (paired tests, alpha {r.alpha}; rule: docs/evaluation.md, "
                          "\"Recommendation\"):", width=width)
    lines += textwrap.wrap(overall_line(r), width=width, initial_indent="  ", subsequent_indent="    ")
    for s in r.sets:
        match = verdicts[(verdicts["question_set"] == s.question_set) & (verdicts["metric"] == r.primary)] \
            if not verdicts.empty else verdicts
        verdict = match.iloc[0] if len(match) else None
        unjudged = " - its questions cannot judge (warning above); not counted" if s.question_set in r.unjudged else ""
        lines += textwrap.wrap(set_line(s, verdict, corrected) + unjudged, width=width, initial_indent="  ",
                               subsequent_indent="    ")
    return lines


def lift_cell(lift: pd.Series | dict) -> str:
    """``convex +0.214 [+0.071, +0.357]*`` (* = significant after the correction)."""
    star = "*" if lift["significant"] else ""
    return f"{lift['method']} {signed(lift['lift'])} {interval(lift['ci_low'], lift['ci_high'], sign=True)}{star}"


def lift_lines(comparison: Comparison, metrics: Sequence[str] = ("f1", "match", "judge"),
               width: int = WIDTH) -> list[str]:
    """Each method's answer lift over the no-context baseline, pooled over the answered sets (or the one
    answered set), one wrapped line per answer metric, methods by lift."""
    lifts = comparison.lifts
    if lifts.empty:
        return []
    scope = POOLED if (lifts["question_set"] == POOLED).any() else lifts["question_set"].iloc[0]
    part = lifts[lifts["question_set"] == scope]
    sets = [s for s in dict.fromkeys(lifts["question_set"]) if s != POOLED]
    n = int(part["n_pairs"].max()) if len(part) else 0
    corrected = comparison.settings.correction is not None
    smallest = float(part["smallest_p_adjusted"].min()) if len(part) else math.nan
    lines = textwrap.wrap(
        f"Answers: lift over {comparison.control} (mean paired difference on the same questions, "
        f"{comparison.settings.confidence:.0%} CI; * = significant"
        + (f", Holm over {part['method'].nunique()} methods" if corrected else "")
        + f"), {'pooled over ' + ', '.join(sets) if scope == POOLED else scope} ({n} questions; smallest possible p"
        + (" after Holm" if corrected else "") + f" {smallest:.2g}):", width=width)
    for metric in [m for m in metrics if m in set(part["metric"])]:
        rows = part[part["metric"] == metric].sort_values("lift", ascending=False, kind="stable")
        text = f"{metric}: " + ", ".join(lift_cell(row) for _, row in rows.iterrows())
        weak = rows[rows["underpowered"]]
        if len(weak):
            text += f"; {power_note(int(weak['n_pairs'].iloc[0]), float(weak['smallest_p_adjusted'].iloc[0]), corrected)}"
        lines += textwrap.wrap(text, width=width, initial_indent="  ", subsequent_indent="    ")
    return lines


def verdict_lines(comparison: Comparison, metrics: Sequence[str] | None = None, width: int = WIDTH) -> list[str]:
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
                lines += textwrap.wrap(verdict_line(verdict, comparison.settings.correction is not None), width=width,
                                       initial_indent="  ", subsequent_indent="    ")
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
        f"scored, and a question set with one has its answer results withheld ({MISSING}). Costs (ret ms/q): "
        "everything a method runs per question, a fusion's inputs included. chunks/answer: mean chunks in the prompt. "
        "Verdict margins: paired bootstrap CI of the difference; "
        "underpowered: no p-value after the correction could fall below alpha at that many questions."
    )


def terminal_tables(comparison: Comparison, width: int = WIDTH) -> list[str]:
    """The headline metrics without CIs, as plain tables no wider than ``width`` (split by columns);
    in each table, a row with no value in it is left out (a baseline that did not run; the answer-only
    oracle in the retrieval metrics' table)."""
    metrics = headline_metrics(comparison.metrics)
    cells = display_table(comparison, metrics=metrics, with_ci=False, costs=False)
    base = cells[["set", "method"]]
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
    tables = []
    for block in blocks:
        ran = (cells[block] != MISSING).any(axis=1)
        if ran.any():
            tables.append(tabulate(pd.concat([base, cells[block]], axis=1)[ran], headers="keys", tablefmt="simple",
                                   showindex=False, disable_numparse=True))
    return tables
