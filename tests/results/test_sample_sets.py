"""A derived ``<set>@sample`` set shows its base set's answers again (rag/runner/sample.py): every
answer counts once in the failure totals and in the lift pooled over the sets. Hand-built tables,
counted by hand."""

from __future__ import annotations

import pandas as pd

from rag.results import schema
from rag.results.comparison import POOLED, StatisticsSettings, answer_lifts
from rag.results.headline import AnswerFailures

A, B = "known_item", "multi_doc"


def row(question_set: str, method: str, qid: str, status: str = schema.ANSWERED, f1: float = 1.0) -> dict:
    return {schema.QUESTION_SET: question_set, schema.METHOD: method, schema.QID: qid, schema.GENERATION_STATUS: status,
            schema.ERROR: "boom" if status == schema.FAILED else "", "f1": f1}


def test_an_answer_shown_in_a_base_and_its_sample_counts_once():
    per_query = pd.DataFrame([
        row(A, "bm25", "q1", schema.FAILED), row(A, "bm25", "q2"), row(A, "bm25", "q3", schema.NOT_REQUESTED),
        row(schema.sampled_set(A), "bm25", "q1", schema.FAILED), row(schema.sampled_set(A), "bm25", "q2"),
        row(schema.sampled_set(A), "hyde", "q1"), row(schema.sampled_set(A), "hyde", "q2", schema.FAILED),
    ])
    failures = AnswerFailures.of(per_query)
    # distinct answers: bm25 q1 (failed), bm25 q2, hyde q1, hyde q2 (failed)
    assert (failures.requested, failures.failed) == (4, 2)
    assert failures.by_method == {"bm25": 1, "hyde": 1}
    assert failures.by_set == {A: 1, schema.sampled_set(A): 2}  # each set that shows a failure withholds


def test_the_pooled_lift_reads_the_runs_own_sets_only():
    rows = []
    for question_set, qids in ((A, ["a1", "a2", "a3"]), (B, ["b1", "b2"]), (schema.sampled_set(A), ["a1", "a2"])):
        for qid in qids:
            rows += [row(question_set, "bm25", qid, f1=1.0), row(question_set, "closed_book", qid, f1=0.0)]
    lifts = answer_lifts(pd.DataFrame(rows), ["f1"], "closed_book", StatisticsSettings(n_resamples=200))
    pairs = dict(zip(lifts.question_set, lifts.n_pairs))
    assert pairs == {A: 3, B: 2, schema.sampled_set(A): 2, POOLED: 5}  # 3 + 2, not 3 + 2 + 2
