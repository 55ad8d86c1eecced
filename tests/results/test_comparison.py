"""Comparison statistics, verdicts and writers against hand-computed values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from rag.results.comparison import StatisticsSettings, compare
from rag.results.curves import curves
from rag.results.format import display_table, markdown, terminal_tables, verdict_lines
from rag.results.html import failure_analysis, write_html_report
from rag.results.writers import write_comparison


def per_query_frame(failed: bool = True) -> pd.DataFrame:
    """Method a finds everything at rank 1; b at rank 2 for half; one failed (unless not ``failed``:
    then answered) and one unasked answer."""
    rows = []
    for i in range(20):
        for method, rr in (("a", 1.0), ("b", 0.5 if i % 2 else 1.0)):
            status = "answered"
            f1 = 0.8 if method == "a" else 0.4
            if method == "b" and i == 3 and failed:
                status, f1 = "failed", math.nan
            if i == 19:
                status, f1 = "not requested", math.nan
            rows.append({
                "question_set": "s", "method": method, "qid": f"q{i}", "qtype": "t" if i < 10 else "u",
                "question": f"question {i} <script>alert(1)</script>", "mrr": rr, "hit@10": 1.0, "f1": f1,
                "gold_urls": json.dumps([["u/A"]]), "retrieved_urls": json.dumps(["u/A", "u/B"]),
                "retrieved_chunks": json.dumps(["A#0", "B#0"]),
                "em": 0.0 if status == "answered" else math.nan, "generation_status": status,
                "answer": "an answer <b>bold</b>", "reference": "ref", "error": "timeout" if status == "failed" else "",
                "retrieval_ms": 2.0, "generation_s": 1.5, "prompt_tokens": 100, "completion_tokens": 10,
            })
    return pd.DataFrame(rows)


SETTINGS = StatisticsSettings(n_resamples=2000, seed=0)


def test_failures_are_counted_and_withhold_the_sets_answer_results() -> None:
    comparison = compare(per_query_frame(), ["mrr", "em", "f1"], SETTINGS)
    table = comparison.table.set_index("method")
    assert table.loc["b", "failures"] == 1 and table.loc["a", "failures"] == 0
    assert table.loc["b", "answered"] == 18 and table.loc["a", "answered"] == 19
    # one failed answer in set s: its answer results are withheld for every method, not computed on the rest
    assert comparison.answers_withheld == {"s": 1}
    assert table[["f1", "em"]].isna().all().all()
    assert "f1" not in set(comparison.verdicts["metric"])
    assert not comparison.pairwise[comparison.pairwise["metric"] == "f1"]["significant"].any()
    # without the failure, the unasked question is still left out of the mean (never a zero)
    answered = compare(per_query_frame(failed=False), ["f1"], SETTINGS).table.set_index("method")
    assert answered.loc["b", "f1"] == pytest.approx(0.4) and answered.loc["b", "answered"] == 19
    assert table.loc["b", "mrr"] == pytest.approx((10 * 1.0 + 10 * 0.5) / 20)
    assert table.loc["a", "generation_s_per_question"] == pytest.approx(1.5)
    assert table.loc["a", "prompt_tokens"] == 19 * 100  # the unasked question costs nothing
    for metric in ("mrr",):  # the CI contains the mean (up to float rounding of a constant sample)
        assert (table[f"{metric}_ci_low"] <= table[metric] + 1e-12).all()
        assert (table[metric] <= table[f"{metric}_ci_high"] + 1e-12).all()


def test_significance_letters_mark_the_winner() -> None:
    comparison = compare(per_query_frame(failed=False), ["mrr", "f1"], SETTINGS)
    table = comparison.table.set_index("method")
    assert table.loc["a", "mrr_beats"] == "b" and table.loc["b", "mrr_beats"] == ""
    assert table.loc["a", "f1_beats"] == "b"
    pair = comparison.pairwise[comparison.pairwise["metric"] == "f1"].iloc[0]
    assert pair["n_pairs"] == 19  # only questions answered by both methods are paired (q19 was not asked)
    assert "ᵇ" in display_table(comparison)["mrr"].iloc[0]
    assert display_table(comparison)["mrr"].iloc[0] == "1.000 [1.000, 1.000]ᵇ"


def test_failure_analysis_splits_retrieval_and_answer_misses() -> None:
    frame = per_query_frame()
    frame.loc[(frame["method"] == "a") & (frame["qid"] == "q0"), "hit@10"] = 0.0
    counts = failure_analysis(frame, "hit@10").set_index("method")
    assert counts.loc["a"].tolist()[1:] == [1, 0, 18, 0]
    assert counts.loc["b"].tolist()[1:] == [0, 18, 0, 1]


def test_verdict_names_best_method_margin_and_significance() -> None:
    comparison = compare(per_query_frame(), ["mrr", "f1"], SETTINGS)
    verdict = comparison.verdicts.set_index("metric").loc["mrr"]
    assert (verdict["best"], verdict["runner_up"]) == ("a", "b")
    assert verdict["difference"] == pytest.approx(0.25)  # mean(a - b) = (10 * 0 + 10 * 0.5) / 20
    assert 0 < verdict["difference_ci_low"] <= 0.25 <= verdict["difference_ci_high"] <= 0.5
    assert verdict["significant"] and verdict["n_pairs"] == 20
    line = verdict_lines(comparison)[1]
    assert line.strip().startswith("a best on mrr (1.000): +0.250 [") and "over b (0.750), significant" in line


def test_terminal_tables_fit_100_columns_with_many_metrics() -> None:
    frame = per_query_frame()
    metrics = ["mrr", "hit@10", "f1"]
    for i in range(12):
        frame[f"recall@{i + 1}"] = frame["mrr"]
        metrics.append(f"recall@{i + 1}")
    comparison = compare(frame, metrics, StatisticsSettings(n_resamples=200))
    tables = terminal_tables(comparison, width=100)
    assert len(tables) > 1
    shown = [column for table in tables for column in table.splitlines()[0].split()]
    assert all(metric in shown for metric in metrics)  # every configured metric shown, none cut
    assert max(len(line) for table in tables for line in table.splitlines()) <= 100


def test_writers_escape_untrusted_text(tmp_path: Path) -> None:
    frame = per_query_frame()
    comparison = compare(frame, ["mrr", "hit@10", "f1"], SETTINGS)
    write_comparison(comparison, tmp_path, "trec", "url")
    write_html_report(tmp_path / "report.html", "T <i>", comparison, frame, curves({}, {}, {}, 10), "legend", ["fact"],
                      "hit@10", {"A#0": "text of <b>A</b>", "B#0": "B"}, {"A#0": "u/A", "B#0": "u/B"}, 10)
    html = (tmp_path / "report.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html and "<b>A</b>" not in html and "T &lt;i&gt;" in html
    assert "data:image/png;base64," in html
    data = json.loads((tmp_path / "comparison.json").read_text())
    assert {row["method"] for row in data["rows"]} == {"a", "b"}
    assert {v["metric"] for v in data["verdict"]} == {"mrr", "hit@10"}  # f1 withheld: the set has a failed answer
    assert pd.read_csv(tmp_path / "comparison.csv")["failures"].tolist() == [0, 1]


def test_markdown_table_escapes_pipes() -> None:
    text = markdown(pd.DataFrame({"x": ["a|b"], "y": [1]}))
    assert text.splitlines()[2].replace(" ", "") == "|a\\|b|1|"
