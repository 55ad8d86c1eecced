"""The judging page's "decided" is the statement rescore prints: gold replayed as the judge (grade 3 when
the passage's page is the question's gold page, else 0) in the page's own order until the page says
decided; then ``rag-bench rescore`` prints, for the set, exactly the line the page showed. Also: the
page names the kind of decision and an estimate of the grades left, and counts a question no grade can
change (every method ranks the same pages in the same places) with difference 0."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag.cli import main
from rag.judging.session import JudgingSession

pytestmark = pytest.mark.slow


def gold_of(judging_runs) -> dict[str, set[str]]:
    lines = (judging_runs["root"] / "mine-gold.jsonl").read_text().splitlines()
    return {r["id"]: {u for group in r["gold_urls"] for u in group} for r in map(json.loads, lines)}


def test_the_page_decides_with_the_words_rescore_prints(judging_runs, run_copy: Path, capsys) -> None:
    gold = gold_of(judging_runs)
    session = JudgingSession(run_copy, "ana")
    status = session.status()["sets"][0]
    assert not status["decided"] and status["verdict"] is None  # nothing graded: no verdict yet
    seen_estimate = False
    while (item := session.next_item()) is not None:
        name, qid, chunk = item
        session.record(name, qid, chunk, 3 if session.pool.chunks[chunk].url in gold[qid] else 0)
        status = session.status()["sets"][0]
        seen_estimate |= status["grades_left"] is not None and status["grades_left"] > 0
        if status["decided"]:
            break
    assert status["decided"] and status["decision"] in ("winner", "non-inferior", "equivalent", "undecided")
    assert status["judged"] < status["pooled"]  # decided before the whole pool was graded
    assert status["verdict"].startswith("mine (") and f"±{status['margin']:g}" in status["verdict"] or \
        status["decision"] == "winner"
    # 12 questions cannot settle this set at ±0.02: the page says so early, with the questions that would
    assert seen_estimate or (status["cannot_decide"] and status["questions_needed"] > status["questions"])
    capsys.readouterr()
    assert main(["rescore", str(run_copy), "--output-dir", str(run_copy / "rescored"), "--quiet"]) == 0
    printed = " ".join(capsys.readouterr().out.split())  # rescore wraps at 100 columns
    assert " ".join(status["verdict"].split()) in printed


def test_a_question_no_grade_can_change_counts_with_difference_zero(run_copy: Path) -> None:
    session = JudgingSession(run_copy, "ana")
    state = session.sets["mine"]
    decision = state.decision
    fixed = decision.fixed_questions()
    lists = [{m: decision.pools[q].lists[m][:decision.k] for m in decision.methods} for q in decision.qids]
    expected = [all(ranked == next(iter(ls.values())) for ranked in ls.values()) for ls in lists]
    assert list(fixed) == expected
    # a question made to rank alike for every method: fixed, and its difference is 0 whatever is graded
    qid = decision.qids[0]
    pool = decision.pools[qid]
    same = type(pool)({m: list(pool.lists[decision.methods[0]]) for m in decision.methods}, pool.chunk_unit)
    from evaluation.mtc import PoolDecision

    alike = PoolDecision({qid: same, **{q: decision.pools[q] for q in decision.qids[1:]}}, decision.methods, decision.k)
    assert alike.fixed_questions()[0]
    for chunk in list(same.chunk_unit)[:3]:
        alike.judge(qid, chunk, 3)
    assert np.ptp(alike.values[0]) == 0.0
