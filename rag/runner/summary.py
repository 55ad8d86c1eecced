"""The end-of-run summary printed to the terminal, no line wider than 100 columns: the verdict
first, then the configured URL-level metrics and answer F1 (means with significance letters; CIs
are in the files), stage timings and where the outputs are."""

from __future__ import annotations

import textwrap

from rag.results.format import TERMINAL_WIDTH, terminal_tables, verdict_lines
from rag.runner.pipeline import RunResult


def summary_text(result: RunResult, width: int = TERMINAL_WIDTH) -> str:
    config = result.manifest.get("config", {})
    evaluation = config.get("evaluation", {})
    skipped = result.manifest.get("data", {}).get("skipped_invalid") or {}
    files = result.manifest.get("data", {}).get("files")
    comparison = result.comparison
    timer_lines = [f"  {name:<24} {secs:9.2f} s" for name, secs in result.timings.items()]
    timer_lines.append(f"  {'total':<24} {sum(result.timings.values()):9.2f} s")
    failures = int(comparison.table["failures"].sum())
    key = (f"Letters: the methods a row beats (paired {comparison.test_name.split(',')[0]}, p < "
           f"{comparison.settings.alpha}); {evaluation.get('convention', 'trec')} convention, "
           f"{'+'.join(evaluation.get('levels', ['url']))} level. CIs and every metric: comparison.md, report.html.")
    return "\n".join([
        "",
        "Verdict (best method, margin over the runner-up with its paired 95% CI):",
        *verdict_lines(comparison, width=width),
        "",
        *[line for table in terminal_tables(comparison, width) for line in (table, "")],
        *textwrap.wrap(key, width=width),
        "",
        "Stage times:",
        *timer_lines,
        f"Generation failures: {failures}" + (" (counted, not averaged in)" if failures else ""),
        *([f"Files: {files['read']} read, {files['skipped']} skipped, {result.manifest.get('chunks', {}).get('count')} chunks"]
          if files else []),
        "Invalid records or files skipped: " + (", ".join(f"{k}: {v}" for k, v in skipped.items()) if skipped else "none"),
        f"Outputs: {result.run_dir}",
    ])
