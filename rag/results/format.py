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
from rag.results.recommendation import (
    CANNOT_JUDGE, EQUIVALENT, MIN_QUESTIONS, NON_INFERIOR, UNDECIDED, WINNER, Recommendation, SetRecommendation,
)
from rag.terminal import WIDTH

SUPERSCRIPTS = dict(zip("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"))
MISSING = "–"


def _shown(value: float) -> float:
    """``value`` with anything that prints as zero made +0.0: float noise (-1e-17, -0.0) never reads
    "-0.000", so the same difference computed two ways (the judging page, rescore) prints alike."""
    return 0.0 if abs(value) < 0.0005 else value


def number(value: float | None) -> str:
    return MISSING if value is None or (isinstance(value, float) and math.isnan(value)) else f"{_shown(value):.3f}"


def signed(value: float | None) -> str:
    return MISSING if value is None or (isinstance(value, float) and math.isnan(value)) else f"{_shown(value):+.3f}"


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
    if v["difference"] == 0 and v["best_mean"] == v["runner_up_mean"]:
        return (f"no single best on {v['metric']}: {v['best']} and {v['runner_up']} tie at {number(v['best_mean'])} "
                "(mean paired difference 0)")
    p = MISSING if v["p_adjusted"] is None or math.isnan(v["p_adjusted"]) else f"{v['p_adjusted']:.3g}"
    if v.get("underpowered"):
        outcome = f"{power_note(int(v['n_pairs']), v['smallest_p_adjusted'], corrected)}, p={p}"
    else:
        outcome = f"{'significant' if v['significant'] else 'not significant'} (p={p})"
    return (f"{v['best']} best on {v['metric']} ({number(v['best_mean'])}): {signed(v['difference'])} "
            f"{interval(v['difference_ci_low'], v['difference_ci_high'], sign=True)} over {v['runner_up']} "
            f"({number(v['runner_up_mean'])}), {outcome}")


def _ms(value: float) -> str:
    return MISSING if math.isnan(value) else f"{value:.1f} ms"


def overall_line(r: Recommendation) -> str:
    """The overall recommendation in one sentence a person can act on (the rule: :mod:`rag.results.recommendation`)."""
    n, m = len(r.judged_sets), r.method
    if r.outcome == CANNOT_JUDGE:
        return (f"No recommendation on {r.primary}: the questions of no set can separate the methods (the warnings "
                "above say why); the per-set lines below are for reading, not for choosing.")
    left_out = (f" Left out: {', '.join(r.unjudged)} ({'its' if len(r.unjudged) == 1 else 'their'} questions "
                "cannot judge).") if r.unjudged else ""
    return _overall(r, n, m) + left_out


def _worst(r: Recommendation, method: str) -> tuple[float, str, str]:
    """The lowest end of ``method``'s intervals against the best over the judged sets: (low, set, best)."""
    ends = [(s.against(method).interval[0], s.question_set, s.best) for s in r.judged_sets if s.best != method]
    return min(ends) if ends else (0.0, "", method)


def _needed(count: int | None, have: int | None = None) -> str:
    """``about 240 questions would decide (93 now)``, or that no practical number would."""
    if count is None:
        return "the difference may be real but smaller than any practical number of questions can show"
    return f"about {count} questions would decide" + (f" ({have} now)" if have is not None else "")


def _overall(r: Recommendation, n: int, m: str | None) -> str:
    delta = f"{r.margin:g}"
    if r.outcome == WINNER:
        cheapest = min(r.ms_per_query, key=lambda k: (math.inf if math.isnan(r.ms_per_query[k]) else r.ms_per_query[k]))
        cost = f"{_ms(r.ms_per_query[m])} per question" + (
            f" against {_ms(r.ms_per_query[cheapest])} for {cheapest}" if cheapest != m else " (the cheapest)")
        return (f"Use {m}: best on {r.primary} in {r.best_in[m]} of {n} sets, significantly better than every other "
                f"method in {r.wins[m]}, never significantly worse than the best; {cost}.")
    if r.outcome == NON_INFERIOR:
        low, where, best = _worst(r, m)
        others = [k for k in r.ms_per_query if k != m and k in {s.best for s in r.judged_sets}]
        against = ", ".join(f"{_ms(r.ms_per_query[k])} for {k}" for k in others)
        return (f"Use {m}: not worse than the best on {r.primary} by more than the margin {delta} {_in_sets(n)} "
                f"(at most {number(-low)} below {best} in {where}, simultaneous 95% intervals) and cheaper beyond timing "
                f"noise: {_ms(r.ms_per_query[m])} per question against {against}.")
    if r.outcome == EQUIVALENT:
        beaten = [k for k in r.ms_per_query if k not in r.equivalent]
        rest = (f"; {_and(beaten)} {'is' if len(beaten) == 1 else 'are'} significantly worse in at least one set"
                if beaten else "")
        return (f"{_and(r.equivalent)} are equivalent on {r.primary} within ±{delta} {_in_sets(n)} (simultaneous 95% "
                f"intervals){rest}; costs within timing noise ({_costs(r.equivalent, r.ms_per_query, r.ms_noise)}): "
                "pick on anything else.")
    if r.outcome == UNDECIDED:
        low, where, _ = min((_worst(r, k) for k in r.eligible if k != m), default=(0.0, "", m))
        open_sets = [s for s in r.judged_sets if s.outcome == UNDECIDED]
        shown = max(open_sets, key=lambda s: math.inf if s.questions_needed is None else s.questions_needed)
        if math.isnan(low):
            return f"Undecided on {r.primary}: {m} leads (best mean in {r.best_in[m]} of {n} sets); {EARLIER}."
        could = (f"; {', '.join(k for k in r.eligible if k != m)} may still be up to {number(-low)} below it ({where})"
                 if len(r.eligible) > 1 else "")
        return (f"Undecided on {r.primary} at the margin ±{delta}: {m} leads (best mean in {r.best_in[m]} of {n} sets), "
                f"neither shown better than every other method nor equivalent within the margin{could}; "
                f"{_needed(r.questions_needed, None)}" + (f" ({shown.question_set} has {shown.questions})"
                                                          if r.questions_needed is not None else "") + ".")
    return (f"No single method on {r.primary}: none is in the top group of every set, or the sets decide for "
            "different methods; use each set's method below.")


#: What a run written before the margin lacks (Recommendation.from_dict reads it as undecided).
EARLIER = "no interval: a run written before the margin; run it again for its verdict"


def _in_sets(n: int) -> str:
    return "in its one set" if n == 1 else f"in all {n} sets"


def _and(methods: Sequence[str]) -> str:
    return ", ".join(methods[:-1]) + f" and {methods[-1]}" if len(methods) > 1 else "".join(methods)


def set_line(s: SetRecommendation, corrected: bool = True) -> str:
    """One question set's outcome with the interval that decided it (the best's lead over the runner-up,
    or the chosen or undecided method's difference to the best) and the margin."""
    head = f"{s.question_set} ({s.questions} q): "
    delta = f"{s.margin:g}"
    weak = [v for v in s.versus if v.state == "underpowered"]
    power = f"; {power_note(weak[0].n_pairs, weak[0].smallest_p_adjusted, corrected)}" if weak else ""
    if s.outcome == WINNER:
        runner = s.versus[0]
        others = len(s.versus)
        lead = f"{signed(-runner.difference)} {interval(-runner.interval[1], -runner.interval[0], sign=True)}"
        beyond = f", by more than the margin {delta}" if runner.interval[1] < -s.margin else ""
        return (f"{head}use {s.method} ({number(s.best_mean)}), {lead} over {runner.method}, significantly better "
                f"than {'the other method' if others == 1 else f'all {others} others'}{beyond}{power}")
    if s.outcome == NON_INFERIOR:
        v = s.against(s.method)
        return (f"{head}use {s.method} ({number(v.mean)}): at most {number(-v.interval[0])} below {s.best} "
                f"({number(s.best_mean)}), within the margin {delta} ({s.method} - {s.best} {_diff(v)}); cheaper "
                f"beyond timing noise ({_ms(s.method_ms_per_query)} against {_ms(s.best_ms_per_query)})")
    if s.outcome == EQUIVALENT:
        members = [v for v in s.versus if v.method in s.top_group]
        diffs = "; ".join(f"{v.method} - {s.best} {_diff(v)}" for v in members)
        ms = {s.method: s.method_ms_per_query, **{v.method: v.ms_per_query for v in s.versus}}
        noise = {s.method: s.method_ms_noise, **{v.method: v.ms_noise for v in s.versus}}
        return (f"{head}{_and(s.top_group)} equivalent within ±{delta} ({diffs}); costs within timing noise "
                f"({_costs(s.top_group, ms, noise)}): pick on anything else")
    open_ = [v for v in s.versus if v.method in s.top_group and not v.equivalent(s.margin)] or s.versus[:1]
    worst = min(open_, key=lambda v: v.interval[0])
    if math.isnan(worst.interval[0]):
        return (f"{head}undecided at ±{delta}: {s.best} leads ({number(s.best_mean)}); {worst.method} - {s.best} "
                f"{signed(worst.difference)} ({EARLIER}){power}")
    if s.questions < MIN_QUESTIONS:
        why = f"fewer than {MIN_QUESTIONS} questions decide nothing"
    else:
        why = (f"{worst.method} may be up to {number(-worst.interval[0])} below {s.best} or "
               f"{number(max(worst.interval[1], 0.0))} above ({worst.method} - {s.best} {_diff(worst)})")
    return (f"{head}undecided at ±{delta}: {s.best} leads ({number(s.best_mean)}); {why}; "
            f"{_needed(s.questions_needed, s.questions)}{power}")


def _diff(v) -> str:
    return f"{signed(v.difference)} {interval(v.interval[0], v.interval[1], sign=True)}"


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
    lines = textwrap.wrap(f"Recommendation on {r.primary} (margin ±{r.margin:g}, alpha {r.alpha}; rule: "
                          "docs/evaluation.md, \"Recommendation\"):", width=width)
    lines += textwrap.wrap(overall_line(r), width=width, initial_indent="  ", subsequent_indent="    ")
    for s in r.sets:
        unjudged = " - its questions cannot judge (warning above); not counted" if s.question_set in r.unjudged else ""
        lines += textwrap.wrap(set_line(s, corrected) + unjudged, width=width, initial_indent="  ",
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
"Verdict differences: paired bootstrap CI; recommendation intervals: the inverted sign-flip test, "
        "simultaneous over the best method's comparisons; "
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
