"""The end-of-run summary printed to the terminal, no line wider than 100 columns: the headline
first (failed answers, question sets that cannot separate the methods: :mod:`rag.results.headline`),
then the recommendation (per question set and overall, with the rule it followed) and the answer lift
over the no-context baseline — the first screen, at most 25 lines — then the configured URL-level
metrics and answer F1 (means with significance letters; CIs are in the files), the metric-by-metric
verdicts with ``verbose``, stage timings (question generation included) and where the outputs are;
the last lines name report.html and, when no question set can judge, the one command that fixes it
(:func:`next_step`)."""

from __future__ import annotations

import textwrap

from rag.config import portable_path
from rag.generation.judge import agreement_line
from rag.results.run_facts import files_fact, set_aside
from rag.results.format import lift_lines, recommendation_lines, terminal_tables, verdict_lines
from rag.results.recommendation import CANNOT_JUDGE
from rag.runner.state import RunResult
from rag.terminal import WIDTH


def summary_text(result: RunResult, width: int = WIDTH, verbose: bool = False) -> str:
    config = result.manifest.get("config", {})
    evaluation = config.get("evaluation", {})
    skipped = result.manifest.get("data", {}).get("skipped_invalid") or {}
    files = result.manifest.get("data", {}).get("files")
    comparison = result.comparison
    timer_lines = [f"  {name:<24} {secs:9.2f} s" for name, secs in result.timings.items()]
    timer_lines.append(f"  {'total':<24} {sum(result.timings.values()):9.2f} s")
    failures = result.answers.failed
    corrected = ", Holm-adjusted" if comparison.settings.correction else ""
    key = (f"Letters: the methods a row beats (paired sign-flip randomization test{corrected}, p < "
           f"{comparison.settings.alpha}); {evaluation.get('convention', 'trec')} convention, "
           f"{'+'.join(evaluation.get('levels', ['url']))} level. CIs and every metric: comparison.md, report.html.")
    verdicts = (["Verdict per metric (best method, difference over the runner-up with its paired "
                 f"{comparison.settings.confidence:.0%} CI):", *verdict_lines(comparison, width=width), ""] if verbose
                else ["Verdict per metric: comparison.md, report.html, or --verbose.", ""])
    answers = lift_lines(comparison, width=width)
    if result.manifest.get("judge_agreement"):
        answers += textwrap.wrap(agreement_line(result.manifest["judge_agreement"]), width=width,
                                 initial_indent="  ", subsequent_indent="    ")
    warnings = [line for warning in result.headline
                for line in textwrap.wrap(warning, width=width, subsequent_indent="    ")]
    figures = ["Question sets (kept of asked, leak, lexical bias or overlap with gold pages, ceiling):",
               *(line for figure in result.question_figures
                 for line in textwrap.wrap(figure, width=width, initial_indent="  ", subsequent_indent="    "))]
    return "\n".join([
        *warnings,
        "",
        *recommendation_lines(comparison, width=width),
        *figures,
        *([""] + answers if answers else []),
        "",
        *[line for table in terminal_tables(comparison, width) for line in (table, "")],
        *verdicts,
        *textwrap.wrap(key, width=width),
        "",
        *textwrap.wrap("Stage times (index:<method> holds its one-time start-up: index build or load, kernel "
                       "compile, model load; ret ms/q is steady-state search time):", width=width),
        *timer_lines,
        f"Generation failures: {failures}" + (" (counted; the answer results of a set with one are withheld)"
                                              if failures else ""),
        *(["F" + files_fact(files["read"], files["skipped"], set_aside(result.manifest["data"]),
                            result.manifest.get("chunks", {}).get("count"))[1:]] if files else []),
        "Invalid records or files skipped: " + (", ".join(f"{k}: {v}" for k, v in skipped.items()) if skipped else "none"),
        f"Outputs: {portable_path(result.run_dir)}",
        *textwrap.wrap(f"Report: {portable_path(result.run_dir / 'report.html')}", width=width, subsequent_indent="    ",
                       break_on_hyphens=False, break_long_words=False),
        *textwrap.wrap(next_step(result), width=width, subsequent_indent="    ", break_on_hyphens=False,
                       break_long_words=False),
    ])


def next_step(result: RunResult) -> str:
    """The one command that gives a run a verdict when none of its question sets can judge: grading
    the pool when a set has no gold (``judging.unjudged_sets``), your own questions when a folder of
    files has only questions that cannot judge (template questions copy their page); else ``""``."""
    run_dir = portable_path(result.run_dir)
    if (result.manifest.get("judging") or {}).get("unjudged_sets"):
        return f"Next: grade the pool: rag-bench judge {run_dir}, then rag-bench rescore {run_dir}"
    dataset = result.manifest.get("config", {}).get("dataset") or {}
    recommendation = result.comparison.recommendation
    if result.manifest.get("judged") and recommendation is not None and recommendation.outcome == CANNOT_JUDGE:
        return ("Next: the judged questions cannot separate the methods yet (the warnings above say why): add "
                "questions to the file, run again and judge the new pool, or grade more of this one")
    if dataset.get("format") == "files" and recommendation is not None and recommendation.outcome == CANNOT_JUDGE:
        return (f"Next: bring your own questions: rag-bench run --docs {dataset.get('path', 'DIR')} --questions mine.txt "
                "(one a line), then rag-bench judge <new run dir>")
    return ""
