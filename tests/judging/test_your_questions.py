"""The user's path end to end on a real third-party folder (libffi's Texinfo manual as Debian ships
it): a plain list of questions -> run -> grades -> rescore, through the CLI as a user types it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rag.cli import main
from rag.judging.pool import read_pool
from rag.judging.session import JudgingSession

pytestmark = pytest.mark.slow

FOLDER = Path(__file__).parents[1] / "fixtures" / "thirdparty" / "texinfo-libffi"
QUESTIONS = [
    "How do I call a function whose signature is only known at run time?",
    "How are structures passed by value described to libffi?",
    "What does a closure let me do?",
]


def test_plain_questions_run_unjudged_then_a_verdict_from_grades(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)  # the plan's paths are relative to where the run starts; rescore runs from there
    (tmp_path / "mine.txt").write_text("\n".join(QUESTIONS) + "\n\n", encoding="utf-8")
    run_dir = tmp_path / "run"
    argv = ["run", "--docs", str(FOLDER), "--questions", "mine.txt", "--no-generation", "--quiet",
            "--output-dir", str(run_dir), "--set", f"cache_dir={tmp_path / 'cache'}"]
    assert main(argv) == 0
    out = capsys.readouterr()
    printed = (out.err + out.out).splitlines()
    assert any("mine: its questions cannot separate the methods - no gold yet" in line for line in printed[:12])
    assert "Recommendation: none" in out.out or "No recommendation" in out.out
    assert out.out.rstrip().splitlines()[-1].startswith("Next: grade the pool: rag-bench judge run")
    pool = read_pool(run_dir)
    expected_ids = ["q" + hashlib.sha256(q.encode()).hexdigest()[:8] for q in QUESTIONS]
    assert [qid for (_, qid) in pool.questions] == expected_ids
    for question in pool.questions.values():
        assert set(question.lists) == {"dense", "bm25", "rrf", "convex"}
        assert all(1 <= len(ranked) <= 10 for ranked in question.lists.values())
        # the pool's texts are the folder's: each pooled passage's page is a file of the folder
        assert all((FOLDER / pool.chunks[c].url).is_file() for c in question.pooled())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["judging"]["unjudged_sets"] == ["mine"]

    session = JudgingSession(run_dir, "ana")
    graded = 0
    while graded < 12 and (item := session.next_item()) is not None:
        _, qid, chunk = item
        # a rule standing in for a person: a passage from a page named after the question's topic answers it
        page = pool.chunks[chunk].url.lower()
        session.record("mine", qid, chunk, 3 if any(w in page for w in ("closure", "struct", "simple-example")) else 0)
        graded += 1
    assert main(["rescore", "run", "--quiet"]) == 0
    said = capsys.readouterr().out
    assert f"Verdict stands on gold from judgments: judges ana (person); {graded} judgments" in said
    assert "judged@10" in said and "condensed ndcg@10" in said
    (rescored,) = (run_dir / "rescored").iterdir()
    assert json.loads((rescored / "manifest.json").read_text())["judged"]["judgments"] == graded
    report = (rescored / "report.html").read_text()
    assert f"gold from judgments: judges ana (person); {graded} judgments" in report  # which judge the verdict stands on


def test_a_set_mixing_gold_and_no_gold_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mixed.jsonl").write_text(
        json.dumps({"id": "a", "question": "What is libffi?", "gold_urls": ["Introduction.html"]}) + "\n"
        + json.dumps({"id": "b", "question": "What is a closure?"}) + "\n", encoding="utf-8")
    argv = ["run", "--docs", str(FOLDER), "--questions", "mixed.jsonl", "--no-generation", "--quiet",
            "--output-dir", str(tmp_path / "run"), "--set", f"cache_dir={tmp_path / 'cache'}"]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith(("WARNING", "    "))]
    assert len(err) == 1 and "mixed.jsonl:2" in err[0] and "all judged" in err[0], err
    assert not (tmp_path / "run").exists()  # bad input leaves no run directory behind


def test_the_same_question_twice_in_a_text_file_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "twice.txt").write_text("What is libffi?\nWhat does a closure do?\n  What is libffi?\n")
    argv = ["run", "--docs", str(FOLDER), "--questions", "twice.txt", "--no-generation", "--quiet",
            "--output-dir", str(tmp_path / "run"), "--set", f"cache_dir={tmp_path / 'cache'}"]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith(("WARNING", "    "))]
    assert len(err) == 1 and "twice.txt:3" in err[0] and "line 1" in err[0], err
