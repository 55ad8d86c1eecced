"""The grade file, the verdict from it, and grades in and out: bad input gets one line and loses
nothing; grades copied from gold reproduce the gold run's metrics exactly; qrels and Quepid CSV
travel both ways; agreement against hand-computed kappa."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evaluation.agreement import weighted_kappa
from rag.cli import main
from rag.judging.combine import combine, median_down
from rag.judging.exchange import export_grades, import_grades
from rag.judging.pool import read_pool
from rag.judging.session import JudgingSession
from rag.judging.store import JUDGMENTS_FILE, read_judgments

pytestmark = pytest.mark.slow


def line(**fields) -> str:
    record = {"question_set": "mine", "question_id": "x", "chunk_id": None, "url": None, "grade": 1,
              "judge": "ana", "time": "2026-11-27T12:00:00+00:00", **fields}
    return json.dumps(record) + "\n"


def first_item(run_dir: Path) -> tuple[str, str, str]:
    pool = read_pool(run_dir)
    question = next(iter(pool.questions.values()))
    return question.question_set, question.qid, question.pooled()[0]


@pytest.mark.parametrize("bad, expected", [
    ({"question_id": "nope"}, "question mine/nope is not in this run's pool"),
    ({"grade": 4}, "grade: Input should be less than or equal to 3"),
    ({"grade": "2"}, "grade: Input should be a valid integer"),
    ({"grade": None}, "expected a grade 0-3, or grade null with cant_tell true"),
    ({"chunk_id": None, "url": None}, "expected a chunk_id or a url"),
])
def test_a_bad_grade_line_is_one_error_naming_file_and_line(run_copy: Path, capsys, bad, expected) -> None:
    set_name, qid, chunk = first_item(run_copy)
    good = line(question_set=set_name, question_id=qid, chunk_id=chunk, grade=2)
    path = run_copy / JUDGMENTS_FILE
    path.write_text(good + line(**{"question_set": set_name, "question_id": qid, "chunk_id": chunk, **bad}))
    before = path.read_bytes()
    assert main(["judge", str(run_copy), "--export", "qrels", "--out", str(run_copy / "x.qrels")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path}:2" in err[0] and expected in err[0], err
    assert path.read_bytes() == before  # nothing lost, nothing rewritten


def test_a_last_line_cut_by_a_kill_is_set_aside_and_the_rest_reads(run_copy: Path) -> None:
    set_name, qid, chunk = first_item(run_copy)
    path = run_copy / JUDGMENTS_FILE
    good = line(question_set=set_name, question_id=qid, chunk_id=chunk, grade=2)
    path.write_text(good + good[:37])  # the second write was cut
    read = read_judgments(path)
    assert read.cut_last_line and [j.grade for j in read.judgments] == [2]
    session = JudgingSession(run_copy, "ana")  # opening for writing moves the cut line aside
    assert (run_copy / (JUDGMENTS_FILE + ".partial")).read_text() == good[:37] + "\n"
    pool = read_pool(run_copy)
    other = pool.questions[(set_name, qid)].pooled()[1]
    session.record(set_name, qid, other, 3)
    read = read_judgments(path)
    assert not read.cut_last_line and [j.grade for j in read.judgments] == [2, 3]


def test_the_same_judge_again_the_latest_counts_and_is_counted(run_copy: Path) -> None:
    set_name, qid, chunk = first_item(run_copy)
    path = run_copy / JUDGMENTS_FILE
    path.write_text(line(question_set=set_name, question_id=qid, chunk_id=chunk, grade=0)
                    + line(question_set=set_name, question_id=qid, chunk_id=chunk, grade=3, judge="bo")
                    + line(question_set=set_name, question_id=qid, chunk_id=chunk, grade=2))
    read = read_judgments(path)
    assert read.rejudged == 1 and [(j.judge, j.grade) for j in read.judgments] == [("bo", 3), ("ana", 2)]
    grades = combine(read.judgments)
    assert grades[(set_name, qid)].chunks == {chunk: 2}  # two judges: the lower grade


def test_a_run_directory_of_another_version_is_one_line(run_copy: Path, capsys) -> None:
    pool = json.loads((run_copy / "pool.json").read_text())
    (run_copy / "pool.json").write_text(json.dumps({**pool, "format": 0}))
    assert main(["judge", str(run_copy), "--export", "qrels", "--out", str(run_copy / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another version" in err[0]
    assert main(["judge", str(run_copy / "nothing-here")]) == 2


def test_median_rounded_down_combines_judges() -> None:
    assert [median_down(g) for g in ([3], [3, 1], [0, 2, 3], [1, 2, 3, 3])] == [3, 1, 2, 2]


def test_weighted_kappa_against_a_hand_computed_case() -> None:
    # 4 items, grades 0..3 (k = 4 labels), linear weights w_ij = |i - j| / 3
    a, b = [0, 1, 2, 3], [0, 2, 2, 3]
    # observed disagreement: one item off by 1 -> (1/3) / 4 = 1/12
    # expected: marginals a = (1,1,1,1)/4, b = (1,0,2,1)/4; E[w] = sum_ij pa_i pb_j |i-j|/3
    pa, pb = [0.25] * 4, [0.25, 0, 0.5, 0.25]
    expected = sum(pa[i] * pb[j] * abs(i - j) / 3 for i in range(4) for j in range(4))
    result = weighted_kappa(a, b)
    assert result.kappa == pytest.approx(1 - (1 / 12) / expected)
    assert result.observed == 0.75 and result.base_rate_a == 0.5 and result.base_rate_b == 0.75


def test_grades_copied_from_gold_reproduce_the_gold_runs_metrics(judging_runs, run_copy: Path, capsys) -> None:
    """Every gold page graded as a whole (chunk_id null) with its gold grade: rescore's per-question
    metrics equal the gold run's exactly, URL and chunk level."""
    questions = [json.loads(x) for x in (judging_runs["root"] / "mine-gold.jsonl").read_text().splitlines()]
    lines = [line(question_id=q["id"], url=url, grade=1) for q in questions for group in q["gold_urls"] for url in group]
    (run_copy / JUDGMENTS_FILE).write_text("".join(lines))
    out = run_copy / "rescored"
    assert main(["rescore", str(run_copy), "--output-dir", str(out), "--quiet"]) == 0
    said = capsys.readouterr().out
    assert "Verdict stands on gold from judgments: judges ana (person);" in said and f"{len(lines)} judgments" in said
    gold = pd.read_csv(judging_runs["gold"] / "per_query.csv").set_index(["method", "qid"]).sort_index()
    mine = pd.read_csv(out / "per_query.csv").set_index(["method", "qid"]).sort_index()
    columns = [c for c in gold.columns if c.split(":")[-1].split("@")[0] in {"mrr", "recall", "ndcg", "map", "p", "hit",
                                                                              "complete"}]
    assert len(columns) == 14
    pd.testing.assert_frame_equal(mine[columns], gold[columns])


def test_qrels_and_quepid_round_trip(run_copy: Path, tmp_path: Path) -> None:
    pool = read_pool(run_copy)
    session = JudgingSession(run_copy, "ana")
    graded = {}
    for i, question in enumerate(list(pool.questions.values())[:3]):
        for j, chunk in enumerate(question.pooled()[:4]):
            grade = (i + j) % 4
            session.record(question.question_set, question.qid, chunk, grade)
            graded[(question.question_set, question.qid, chunk)] = grade
    for kind in ("qrels", "quepid"):
        out = tmp_path / f"grades.{kind}"
        assert export_grades(run_copy, kind, out) == 12
        fresh = tmp_path / f"fresh-{kind}"
        fresh.mkdir()
        (fresh / "pool.json").write_bytes((run_copy / "pool.json").read_bytes())
        count, judge = import_grades(fresh, out)
        assert count == 12 and judge == "grades"
        back = {(j.question_set, j.question_id, j.chunk_id): j.grade for j in read_judgments(fresh / JUDGMENTS_FILE).judgments}
        assert back == graded
    quepid = (tmp_path / "grades.quepid").read_text().splitlines()
    assert quepid[0] == "query,docid,rating"


def test_an_import_row_naming_no_pooled_passage_is_one_line_and_appends_nothing(run_copy: Path, tmp_path, capsys) -> None:
    set_name, qid, chunk = first_item(run_copy)
    bad = tmp_path / "bad.qrels"
    bad.write_text(f"{set_name}/{qid} 0 {chunk} 2\n{set_name}/{qid} 0 no-such-chunk 1\n")
    assert main(["judge", str(run_copy), "--import", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:2" in err[0] and "not in this run's pool" in err[0]
    assert not (run_copy / JUDGMENTS_FILE).exists()


def test_coverage_counts_judged_at_k_condensed_values_and_unanswered_questions(tmp_path: Path) -> None:
    """By hand: k = 2; q1's top 2 fully judged with no grade >= 2 (no method answers it); q2's
    top 2 holds an unjudged page (not established); condensed nDCG removes unjudged pages first."""
    import math

    from evaluation import write_qrels, write_run
    from rag.judging.verdict import coverage

    runs = tmp_path / "runs"
    runs.mkdir()
    write_qrels({"s/q1": {"a": 1, "b": 0}, "s/q2": {"c": 3}}, runs / "qrels.url.txt")
    write_run({"s/q1": {"a": 2.0, "b": 1.0}, "s/q2": {"x": 2.0, "c": 1.0}}, runs / "m.url@2.trec")
    result = coverage(tmp_path, ["m"], "ndcg@2")
    assert result["methods"]["m"]["judged@2"] == pytest.approx((2 / 2 + 1 / 2) / 2)
    # condensed: q1 [a, b] -> nDCG 1; q2 [c] (x removed) -> c at rank 1 -> nDCG 1
    assert result["methods"]["m"]["condensed ndcg@2"] == pytest.approx(1.0)
    assert result["unanswered"] == ["s/q1"] and result["not_yet_answered"] == []
    write_run({"s/q1": {"a": 2.0, "b": 1.0}, "s/q2": {"x": 2.0, "y": 1.0}}, runs / "m.url@2.trec")
    result = coverage(tmp_path, ["m"], "ndcg@2")
    assert result["not_yet_answered"] == ["s/q2"]
    assert not math.isnan(result["methods"]["m"]["condensed ndcg@2"])
