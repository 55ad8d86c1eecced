"""Issue 7 on the runner side, end to end on a tiny BM25-only data set (no model to load): bad data
with and without --skip-invalid, untrusted text escaped in report.html, a planted API key absent from
every output, and a Ctrl-C in the middle of generation followed by --resume."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pandas as pd
import pytest

from rag.cli import main
from rag.testing.stand_in import StandInServer, StandInSettings

from .conftest import (REPO, document_line, question_line, signal_when_held, start_foreground, tiny_config,
                       write_tiny_dataset)

pytestmark = pytest.mark.slow
PLANTED_KEY = "sk-planted-7f3a9c1e5b2d4f60"


@pytest.mark.parametrize(
    ("extra_documents", "extra_questions", "where", "kind"),
    [
        (['{"doc_id": "Broken", "text": '], [], "corpus.jsonl:7", "invalid_json"),
        ([document_line("Volcano", "A second volcano record.")], [], "corpus.jsonl:7", "duplicate_id"),
        ([json.dumps({"doc_id": "Empty", "url": "u", "title": "", "text": ""})], [], "corpus.jsonl:7", "empty_text"),
        ([], [question_line("q9", "Where is Atlantis?", ["Atlantis"], ["nowhere"])], "questions.jsonl:5", "unknown_url"),
        ([], [json.dumps({"id": "q8", "question": "No truth?", "gold_urls": []})], "questions.jsonl:5", "no_ground_truth"),
    ],
)
def test_bad_data_fails_or_is_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture, extra_documents, extra_questions, where, kind
) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data", extra_documents, extra_questions)
    config = tiny_config(tmp_path, corpus, questions, generation=None)
    assert main(["--config", str(config), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert where in err and "Traceback" not in err
    assert main(["--config", str(config), "--quiet", "--skip-invalid"]) == 0
    (run,) = (tmp_path / "runs" / "tiny").iterdir()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["data"]["skipped_invalid"] == {kind: 1}
    assert f"&#34;{kind}&#34;: 1" in (run / "report.html").read_text() or f'"{kind}": 1' in (run / "report.html").read_text()


def test_non_utf8_bytes_name_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    corpus.write_bytes(corpus.read_bytes() + b'{"doc_id": "Bad", "text": "caf\xe9"}\n')
    config = tiny_config(tmp_path, corpus, questions, generation=None)
    assert main(["--config", str(config), "--quiet"]) == 2
    assert "corpus.jsonl:7" in capsys.readouterr().err
    assert main(["--config", str(config), "--quiet", "--skip-invalid"]) == 0


def test_script_in_document_and_answer_is_escaped(tmp_path: Path) -> None:
    hostile = "Espresso is brewed <script>alert('pwned')</script> by forcing hot water through ground coffee."
    corpus, questions = write_tiny_dataset(
        tmp_path / "data",
        [document_line("Espresso_script", hostile)],
        [question_line("q5", "How is espresso brewed <script>alert(2)</script>?", ["Espresso_script"], ["<b>x</b>"])],
    )
    config = tiny_config(tmp_path, corpus, questions)
    assert main(["--config", str(config), "--quiet"]) == 0
    (run,) = (tmp_path / "runs" / "tiny").iterdir()
    per_query = pd.read_csv(run / "per_query.csv", keep_default_na=False)
    assert per_query["answer"].str.contains("<script>", regex=False).any()  # the answer does carry it
    html = (run / "report.html").read_text()
    # the page's own two script elements (drill-down data and code), no other
    assert html.lower().count("<script") == 2 and "<script>alert" not in html.lower()
    assert '<script type="application/json" id="dd-data">' in html and "<script>\n(function ()" in html
    assert "\\u003cscript>alert(2)" in html and "<b>x</b>" not in html  # the question, inert in the drill-down data


@pytest.fixture
def stand_in():
    """No added latency: the Ctrl-C test holds a request to interrupt at a known point (an event), and
    a delay would only add 0.05 s to each of its 88 answers."""
    with StandInServer(StandInSettings()) as server:
        yield server


def openai_generation(server: StandInServer) -> dict:
    return {"generator": {"type": "openai", "base_url": server.base_url, "model": "stand-in",
                          "api_key_env": "RAG_TEST_PLANTED_KEY", "concurrency": 1, "max_retries": 1,
                          "backoff": {"initial_s": 0.01, "max_s": 0.02}, "timeout_s": 10}}


def test_planted_api_key_appears_in_no_output(
    tmp_path: Path, stand_in: StandInServer, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_TEST_PLANTED_KEY", PLANTED_KEY)
    corpus, questions = write_tiny_dataset(
        tmp_path / "data", [], [question_line("q5", "Which planet? [[faults:echo_auth_500]]", ["Saturn"], ["Saturn"])]
    )
    config = tiny_config(tmp_path, corpus, questions, generation=openai_generation(stand_in))
    assert main(["--config", str(config), "--quiet"]) == 3  # the one set has a failed answer: no answer result stands
    (run,) = (tmp_path / "runs" / "tiny").iterdir()
    comparison = pd.read_csv(run / "comparison.csv")
    assert comparison["failures"].tolist() == [1] and comparison["answered"].tolist() == [4]
    outputs = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "generations.jsonl" for p in outputs)  # the cache is grepped too
    captured = capsys.readouterr()
    for path in outputs:
        assert PLANTED_KEY.encode() not in path.read_bytes(), path
    assert PLANTED_KEY not in captured.out + captured.err
    assert stand_in.stats.faults["echo_auth_500"] >= 1  # the server did echo the key back


def test_ctrl_c_mid_generation_then_resume_equals_an_uninterrupted_run(tmp_path: Path, stand_in: StandInServer) -> None:
    interrupted_then_resumed_equals_uninterrupted(tmp_path, stand_in)


HELD_AFTER = 8  # answers the interrupted run gets before the stand-in holds its next request


def interrupted_then_resumed_equals_uninterrupted(tmp_path: Path, stand_in: StandInServer) -> None:
    corpus, questions = write_tiny_dataset(
        tmp_path / "data",
        [],
        [question_line(f"x{i}", f"Extra question number {i} about planets and coffee?", ["Saturn"], ["Saturn"])
         for i in range(40)],
    )
    generation = openai_generation(stand_in)
    reference_config = tiny_config(tmp_path / "ref", corpus, questions, generation=generation)
    assert main(["--config", str(reference_config), "--quiet", "--output-dir", str(tmp_path / "ref" / "run")]) == 0
    sent_for_reference = stand_in.stats.completions_requests

    config = tiny_config(tmp_path / "int", corpus, questions, generation=generation)
    run_dir = tmp_path / "int" / "run"
    cache_file = tmp_path / "int" / "cache" / "generation" / "generations.jsonl"
    # the Ctrl-C lands at a known point however loaded the machine: the stand-in answers HELD_AFTER
    # requests, then holds the next one (concurrency 1: the run waits on it) until the signal was sent
    stand_in.hold_completions(after=HELD_AFTER)
    process = start_foreground([sys.executable, str(REPO / "scripts" / "run_benchmark.py"), "--config", str(config),
                                "--quiet", "--output-dir", str(run_dir)])
    held, err = signal_when_held(stand_in, process, signal.SIGINT, timeout_s=120)
    assert held, f"the run never sent its answer request number {HELD_AFTER + 1}: {err}"
    assert process.returncode == 130, err
    assert "--resume" in err and "Traceback" not in err
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    answered_before = cache_file.read_text().count("\n")
    assert answered_before == HELD_AFTER

    sent_before_resume = stand_in.stats.completions_requests
    assert main(["--config", str(config), "--quiet", "--output-dir", str(run_dir), "--resume"]) == 0
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"
    # only the unanswered requests were sent again
    assert stand_in.stats.completions_requests - sent_before_resume == 44 - answered_before
    assert sent_for_reference == 44

    timing = ["retrieval_ms", "retrieval_ms_noise", "generation_s", "attempts"]
    ours, reference = (pd.read_csv(d / "per_query.csv").drop(columns=timing) for d in (run_dir, tmp_path / "ref" / "run"))
    pd.testing.assert_frame_equal(ours, reference)
    ours, reference = (pd.read_csv(d / "comparison.csv").drop(columns=["generation_s_per_question", "retrieval_ms_per_query",
                                                                                       "retrieval_ms_noise"])
                       for d in (run_dir, tmp_path / "ref" / "run"))
    pd.testing.assert_frame_equal(ours, reference)
