"""When the questions cannot judge, and the failed-answer line: rag/results/headline.py on hand-made
tables whose verdict is known by construction."""

from __future__ import annotations

import pandas as pd
import pytest

from rag.results.headline import (
    CEILING, LEAK_LIMIT, LEXICAL_BIAS_LIMIT, MIN_QUESTIONS, AnswerFailures, QuestionFigures, cannot_judge, headline,
)


def table(means: dict[str, dict[str, float]], n: int = 100) -> pd.DataFrame:
    return pd.DataFrame([{"question_set": s, "method": m, "questions": n, "ndcg@10": v}
                         for s, by_method in means.items() for m, v in by_method.items()])


def test_a_set_that_separates_nothing_is_named_with_each_reason() -> None:
    frame = table({"top": {"a": 0.99, "b": CEILING}, "flat": {"a": 0.5, "b": 0.5}, "fine": {"a": 0.9, "b": 0.7},
                   "ok": {"a": 0.96, "b": 0.94}})
    found = cannot_judge(frame, "ndcg@10", {})
    assert set(found) == {"top", "flat"}  # "ok": one method below the ceiling; "fine": a spread
    assert "ceiling" in found["top"][0] and "ceiling" in found["flat"][0]


@pytest.mark.parametrize(("figures", "reason"), [
    (QuestionFigures(MIN_QUESTIONS - 1), f"too few questions ({MIN_QUESTIONS - 1} < {MIN_QUESTIONS})"),
    (QuestionFigures.of(100, {"leak": LEAK_LIMIT + 0.01}), "51% of the questions name their gold document"),
    (QuestionFigures.of(100, {"leak": {"share": 0.9}}), "90% of the questions name their gold document"),
    (QuestionFigures.of(100, {"lexical_bias": {"questions": 100, "mean": LEXICAL_BIAS_LIMIT + 0.05}}),
     "lexical bias 0.85 > 0.8"),
])
def test_thresholds_from_the_question_sets_figures(figures: QuestionFigures, reason: str) -> None:
    found = cannot_judge(table({"s": {"a": 0.9, "b": 0.6}}), "ndcg@10", {"s": figures})
    assert reason in " ".join(found["s"])


def test_figures_at_the_thresholds_do_not_warn() -> None:
    figures = QuestionFigures.of(MIN_QUESTIONS, {"requested": 60, "leak": LEAK_LIMIT,
                                                 "lexical_bias": {"questions": 30, "mean": LEXICAL_BIAS_LIMIT}})
    assert cannot_judge(table({"s": {"a": 0.9, "b": 0.6}}), "ndcg@10", {"s": figures}) == {}
    assert figures.text(False) == f"{MIN_QUESTIONS} questions ({MIN_QUESTIONS} kept of 60 asked), leak 50%, lexical bias 0.80, ceiling no"


def test_failed_answers_line_counts_per_method_and_keeps_the_first_cause() -> None:
    rows = [{"question_set": s, "method": m, "qid": f"q{i}", "generation_status": status,
             "error": "server_error: 500" if status == "failed" else ""}
            for s, status_of in (("x", lambda m, i: "failed" if m == "b" and i < 2 else "answered"),
                                 ("y", lambda m, i: "answered"))
            for m in ("a", "b") for i in range(3) for status in [status_of(m, i)]]
    failures = AnswerFailures.of(pd.DataFrame(rows))
    assert (failures.requested, failures.failed, failures.by_method, failures.withheld_sets) == (12, 2, {"b": 2}, ["x"])
    assert not failures.experiment_failed
    (line,) = headline(failures, {})
    assert line == ("WARNING answers: 2 of 12 failed - answer results withheld for x (every set with a failure; "
                    "those of y stand); per method: b 2; cause: server_error: 500")
