"""scripts/question_validity.py: third-party known items from a real man page's NAME line, and the
comparison of a finished run's question sets."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "question_validity.py"
SAMPLE = REPO / "tests" / "fixtures" / "thirdparty" / "git-doc"  # real git-doc pages, tests/fixtures/thirdparty/README.md


def _run(monkeypatch, *argv: str) -> int:
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *argv])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    return exit_.value.code


def test_man_page_name_lines_become_known_items_without_the_page_name(tmp_path, monkeypatch, capsys):
    out = tmp_path / "man.jsonl"
    assert _run(monkeypatch, "man-pages", str(SAMPLE), "--out", str(out)) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    # the NAME sections read "git-mv - Move or rename a file, a directory, or a symlink", "git-rm - Remove
    # files from the working tree and from the index", "git-stash - Stash the changes in a dirty working
    # directory away", "git - the stupid content tracker"; index.html, a link to git.html, is not read twice
    assert [(r["question"], r["gold_urls"], r["answers"]) for r in records] == [
        ("Move or rename a file, a directory, or a symlink", [["git-mv.html"]], ["git-mv"]),
        ("Remove files from the working tree and from the index", [["git-rm.html"]], ["git-rm"]),
        ("Stash the changes in a dirty working directory away", [["git-stash.html"]], ["git-stash"]),
        ("the stupid content tracker", [["git.html"]], ["git"]),
    ]
    assert "4 questions written" in capsys.readouterr().out


def test_without_names_removes_every_spelling_of_the_page_name():
    namespace = runpy.run_path(str(SCRIPT))
    assert namespace["without_names"]("git-stash - Stash the changes (see Git Stash)", "git-stash") == \
        "Stash the changes (see )"
    assert namespace["without_names"]("Show what gitk shows", "gitk") == "Show what shows"


def test_an_unknown_set_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "per_query.csv").write_text("question_set,method,qid,question,ndcg@10\ns,bm25,q1,x?,1\n")
    assert _run(monkeypatch, "compare", str(run), "--synthetic", "s", "--third-party", "t") == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no question set t" in err
