"""What a verdict from judgments stands on, read from the rescored run's own TREC files.

* ``judged@k``: the share of a method's top-k units (pages at URL level) that some judge graded,
  averaged over the judged questions: a method whose list is mostly unjudged is scored mostly on
  the assumption that unjudged is irrelevant (trec_eval's convention);
* the *condensed-list* value (Sakai 2007): the primary metric with every unjudged unit removed from
  the lists first, beside the trec value, so a reader sees how much the convention moves it;
* the questions no method answers: every unit of every method's top k graded, none 2 or more; and
  apart, those with no unit graded 2 or more *so far*, whose top k still holds unjudged units (MTC
  never asks for a passage every method ranks alike: it cannot change the comparison, but it may be
  the answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evaluation import evaluate_run, read_qrels, read_run
from evaluation.metrics import parse_metric
from evaluation.runs import ranked_ids, ranked_lists_to_run

ANSWERS_GRADE = 2


def coverage(run_dir: Path, methods: Sequence[str], primary: str) -> dict:
    """Per method: ``judged@k`` and the condensed value of ``primary``; and the questions whose
    judged pool holds no unit graded :data:`ANSWERS_GRADE` or more in any method's top k."""
    chunk = primary.startswith("chunk:")
    metric = primary.removeprefix("chunk:")
    k = parse_metric(metric).k or 10
    runs_dir = run_dir / "runs"
    qrels = read_qrels(runs_dir / ("qrels.chunk.txt" if chunk else "qrels.url.txt"))
    per_method: dict[str, dict[str, float]] = {}
    answered: dict[str, bool] = {qid: False for qid in qrels}
    complete: dict[str, bool] = {qid: True for qid in qrels}
    for method in methods:
        path = runs_dir / (f"{method}.trec" if chunk else f"{method}.url@{k}.trec")
        if not path.exists():
            continue
        lists = {qid: ranked_ids(scores)[:k] for qid, scores in read_run(path).items() if qid in qrels}
        if not lists:
            continue
        judged = [sum(u in qrels[qid] for u in ranked) / k for qid, ranked in lists.items()]
        condensed = ranked_lists_to_run({qid: [u for u in ranked if u in qrels[qid]] for qid, ranked in lists.items()})
        value = evaluate_run(qrels, condensed, [metric])[metric].mean() if condensed else float("nan")
        per_method[method] = {f"judged@{k}": sum(judged) / len(judged), f"condensed {primary}": float(value)}
        for qid, ranked in lists.items():
            answered[qid] = answered[qid] or any(qrels[qid].get(u, 0) >= ANSWERS_GRADE for u in ranked)
            complete[qid] = complete[qid] and all(u in qrels[qid] for u in ranked)
    return {"methods": per_method, "k": k,
            "unanswered": sorted(q for q, found in answered.items() if not found and complete[q]),
            "not_yet_answered": sorted(q for q, found in answered.items() if not found and not complete[q])}
