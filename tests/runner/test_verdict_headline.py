"""The headline, end to end on the tiny BM25-only data set. Issue 28, "Failures are part of the
verdict", against the stand-in OpenAI-compatible server: every answer failing (500s), one set
failing beside one that stands, and ``rag-bench compare`` over a run with failed answers; issue 27,
a set too small to judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from rag.cli import EXIT_ANSWERS_FAILED, main
from rag.config import portable_path
from rag.testing.stand_in import StandInServer, StandInSettings

from .conftest import question_line, tiny_config, write_tiny_dataset

pytestmark = pytest.mark.slow


def generation(server: StandInServer) -> dict:
    return {"generator": {"type": "openai", "base_url": server.base_url, "model": "stand-in", "concurrency": 1,
                          "max_retries": 1, "backoff": {"initial_s": 0.01, "max_s": 0.02}, "timeout_s": 10}}


def only_run(directory: Path) -> Path:
    (run,) = (directory / "runs" / "tiny").iterdir()
    return run


def headline_items(html: str) -> list[str]:
    """The report's headline items, and that the headline stands above the recommendation."""
    match = re.search(r'<ul id="headline"[^>]*>(.*?)</ul>', html, re.S)
    assert match is not None and match.start() < html.index('id="recommendation"')
    return re.findall(r"<li>(.*?)</li>", match.group(1), re.S)


@pytest.mark.parametrize(("fault", "cause"), [
    ("error_500", "server_error: InternalServerError: Error code: 500"), ("malformed_json", "malformed_response: "),
    ("empty_content", "empty_response: "), ("drop_connection", "connection: APIConnectionError"),
])
def test_every_answer_failing_is_the_headline_and_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture, fault: str, cause: str
) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    marked = [json.loads(line) for line in questions.read_text().splitlines()]
    questions.write_text("".join(json.dumps({**q, "question": f"{q['question']} [[faults:{fault}]]"}) + "\n"
                                 for q in marked))  # every attempt of every answer meets the fault
    with StandInServer(StandInSettings()) as server:
        config = tiny_config(tmp_path, corpus, questions, generation=generation(server))
        assert main(["--config", str(config), "--quiet"]) == EXIT_ANSWERS_FAILED == 3
        assert server.stats.faults[fault] >= 4
    out = capsys.readouterr().out
    first = out.strip().splitlines()[0]
    assert first.startswith("WARNING answers: 4 of 4 failed - answer results withheld;"), out
    flat = " ".join(out.split())  # the terminal wraps lines at 100 columns
    assert "per method: bm25 4; cause: " + cause in flat
    run = only_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "partial"
    assert manifest["generation"]["failures"] == 4 and manifest["generation"]["failures_by_method"] == {"bm25": 4}
    assert manifest["generation"]["experiment_failed"] is True
    item = headline_items((run / "report.html").read_text())[0]  # then: too few questions to judge
    assert "answers: 4 of 4 failed - answer results withheld" in item and cause in item


def test_a_set_with_a_failed_answer_is_withheld_and_the_other_stands(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus, clean = write_tiny_dataset(tmp_path / "data")
    failing = tmp_path / "data" / "failing.jsonl"
    failing.write_text(clean.read_text() + question_line(
        "q5", "Which planet is sixth? [[faults:error_500]]", ["Saturn"], ["Saturn"]) + "\n")
    with StandInServer(StandInSettings()) as server:
        config = tiny_config(tmp_path, corpus, clean, generation=generation(server),
                             dataset={"format": "jsonl", "corpus": str(corpus),
                                      "questions": {"clean": str(clean), "failing": str(failing)}},
                             evaluation={"metrics": ["mrr", "hit@3"], "n_resamples": 200})
        assert main(["--config", str(config), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[0].startswith(
        "WARNING answers: 1 of 9 failed - answer results withheld for failing"), out
    run = only_run(tmp_path)
    assert json.loads((run / "manifest.json").read_text())["status"] == "partial"
    table = pd.read_csv(run / "comparison.csv").set_index("question_set")
    assert pd.isna(table.loc["failing", "f1"]) and table.loc["failing", "answered"] == 4  # not computed on the rest
    assert not pd.isna(table.loc["clean", "f1"])


def test_compare_names_the_run_with_failed_answers_first(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    with StandInServer(StandInSettings(error_rate=1.0)) as server:
        failed = tiny_config(tmp_path / "failed", corpus, questions, generation=generation(server))
        assert main(["--config", str(failed), "--quiet"]) == 3
    good = tiny_config(tmp_path / "good", corpus, questions)  # the extractive generator
    assert main(["--config", str(good), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["compare", str(only_run(tmp_path / "good")), str(only_run(tmp_path / "failed")),
                 "--output-dir", str(tmp_path / "cmp"), "--n-resamples", "200"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("WARNING run ") and "answers: 4 of 4 failed" in first and "failed" in first.split(":")[0] + first


def test_a_set_too_small_to_judge_is_said_first(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    config = tiny_config(tmp_path, corpus, questions, generation=None)
    assert main(["--config", str(config), "--quiet"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("WARNING questions: its questions cannot separate the methods - ") and \
        "too few questions (4 < 10)" in " ".join(lines[:3])
    figures = lines.index("Question sets (kept of asked, leak, lexical bias or overlap with gold pages, ceiling):")
    assert re.match(r"questions: 4 questions, leak 0%, overlap with gold pages [01]\.\d\d(, ceiling \w+)?$", lines[figures + 1].strip())
    report = f"Report: {portable_path(only_run(tmp_path) / 'report.html')}"  # a long path: whole, on its own line
    assert " ".join(line.strip() for line in lines[-len(report.split()):]) == report  # no Next line: no set lacks gold
    assert json.loads((only_run(tmp_path) / "manifest.json").read_text())["status"] == "complete"
