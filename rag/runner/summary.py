"""The end-of-run summary printed to the terminal: the comparison table, stage timings, where the
outputs are."""

from __future__ import annotations

from evaluation.report import display_table, legend, markdown_table
from rag.runner.pipeline import RunResult

TERMINAL_METRICS = ("mrr@10", "recall@10", "ndcg@10", "hit@10", "complete@10", "answer_in_context@10", "em", "f1", "match")


def summary_text(result: RunResult) -> str:
    config = result.manifest.get("config", {})
    evaluation = config.get("evaluation", {})
    skipped = result.manifest.get("data", {}).get("skipped_invalid") or {}
    timer_lines = [f"  {name:<24} {secs:9.2f} s" for name, secs in result.timings.items()]
    timer_lines.append(f"  {'total':<24} {sum(result.timings.values()):9.2f} s")
    failures = int(result.comparison.table["failures"].sum())
    return "\n".join(
        [
            "",
            markdown_table(display_table(result.comparison, metrics=TERMINAL_METRICS)),
            "(all metrics, chunk level included: comparison.md / comparison.csv / report.html)",
            "",
            legend(result.comparison, evaluation.get("convention", "trec"), "+".join(evaluation.get("levels", ["url"]))),
            "",
            "Stage times:",
            *timer_lines,
            f"Generation failures: {failures}" + (" (counted, not averaged in)" if failures else ""),
            "Invalid records skipped: " + (", ".join(f"{k}: {v}" for k, v in skipped.items()) if skipped else "none"),
            f"Outputs: {result.run_dir}",
        ]
    )


def print_summary(result: RunResult) -> None:
    print(summary_text(result))
