"""evaluation.mtc against independent oracles: pytrec_eval for the point values, brute force over
every grade the open chunks may take for the bounds, hand-computed cases for the order."""

from __future__ import annotations

import itertools

import pytest
import pytrec_eval
from hypothesis import given, settings, strategies as st

from evaluation.mtc import JudgingOrder, PoolDecision, QuestionPool, depth_pool

METHODS = ("a", "b", "c")
K = 3


def _trec_ndcg(ranked: list[str], grades: dict[str, int], k: int) -> float:
    """nDCG@k by pytrec_eval (trec_eval's ndcg_cut) on one query; 0 without a relevant unit."""
    qrels = {"q": {u: g for u, g in grades.items()}} if grades else {"q": {"zz-none": 0}}
    run = {"q": {u: float(len(ranked) - r) for r, u in enumerate(ranked)}}
    if not ranked:
        return 0.0
    return pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}"}).evaluate(run)["q"][f"ndcg_cut_{k}"]


@st.composite
def pools(draw):
    """A question of up to 5 chunks on up to 4 pages; each method ranks 0..k chunks; URL level."""
    n_chunks = draw(st.integers(2, 5))
    chunks = [f"c{i}" for i in range(n_chunks)]
    page = {c: f"p{draw(st.integers(0, 3))}" for c in chunks}
    chunk_lists = {m: draw(st.permutations(chunks))[:draw(st.integers(0, K))] for m in METHODS}
    unit_lists = {m: list(dict.fromkeys(page[c] for c in ranked)) for m, ranked in chunk_lists.items()}
    pooled = depth_pool(chunk_lists, K)
    judged = {c: draw(st.integers(0, 3)) for c in pooled if draw(st.booleans())}
    return QuestionPool(unit_lists, {c: page[c] for c in pooled}), judged


@settings(max_examples=150, deadline=None)
@given(pools())
def test_bounds_hold_every_grade_the_open_chunks_may_get(case):
    pool, judged = case
    decision = PoolDecision({"q": pool}, METHODS, K)
    for chunk, grade in judged.items():
        decision.judge("q", chunk, grade)
    open_chunks = [c for c in pool.chunk_unit if c not in judged]
    for a, b in itertools.combinations(METHODS, 2):
        state = decision.pair_state(a, b)
        seen = []
        for grades in itertools.product(range(4), repeat=len(open_chunks)):
            chunk_grades = {**judged, **dict(zip(open_chunks, grades))}
            page_grades: dict[str, int] = {}
            for chunk, g in chunk_grades.items():
                page = pool.chunk_unit[chunk]
                page_grades[page] = max(g, page_grades.get(page, 0))
            diff = _trec_ndcg(pool.lists[a], page_grades, K) - _trec_ndcg(pool.lists[b], page_grades, K)
            seen.append(diff)
            assert state.lower - 1e-12 <= diff <= state.upper + 1e-12
        # the point is the value with every open chunk irrelevant (trec_eval's convention)
        page_lo: dict[str, int] = {}
        for chunk, g in judged.items():
            page_lo[pool.chunk_unit[chunk]] = max(g, page_lo.get(pool.chunk_unit[chunk], 0))
        expected = _trec_ndcg(pool.lists[a], page_lo, K) - _trec_ndcg(pool.lists[b], page_lo, K)
        assert state.point == pytest.approx(expected, abs=1e-12)
        if not open_chunks:
            assert state.lower == pytest.approx(state.upper)


def test_a_chunk_ranked_first_by_one_method_and_not_by_the_other_is_judged_first():
    # a ranks x then y, b ranks y then x, c ranks z; "x" at rank 1 of a only weighs 1 - 1/log2(3) for (a, b)
    pool = QuestionPool({"a": ["x", "y"], "b": ["y", "x"], "c": ["z"]}, {"x": "x", "y": "y", "z": "z"})
    decision = PoolDecision({"q": pool}, ("a", "b", "c"), 2)
    order = JudgingOrder(decision, "mtc", seed=0)
    # leader a (all tied at 0, the first method); against (a, b) and (a, c) the coefficients are
    # x: (1 - 1/log2 3, 1), y: (1/log2 3 - 1, 1/log2 3), z: (0, -1): x moves both pairs most
    assert order.next() == ("q", "x")
    weights = dict(zip(decision.chunk_items, decision.chunk_weights()))
    assert weights[("q", "x")] > max(weights[("q", "y")], weights[("q", "z")]) > 0
    decision.judge("q", "x", 3)
    assert dict(zip(decision.chunk_items, decision.chunk_weights()))[("q", "x")] == 0.0  # judged: weighs nothing


def test_decided_once_the_leader_cannot_be_overtaken():
    pool = QuestionPool({"a": ["x"], "b": ["y"]}, {"x": "x", "y": "y"})
    decision = PoolDecision({"q": pool}, ("a", "b"), 1)
    assert not decision.decision().decided
    decision.judge("q", "x", 3)
    assert not decision.decision().decided  # y may still be 3: a tie
    decision.judge("q", "y", 1)
    result = decision.decision()
    assert result.decided and result.leader == "a"
    assert result.pairs[0].lower == result.pairs[0].upper == pytest.approx(1 - 1 / 3)


def test_identical_lists_are_a_tie_no_grade_can_break():
    pool = QuestionPool({"a": ["x"], "b": ["x"]}, {"x": "x"})
    result = PoolDecision({"q": pool}, ("a", "b"), 1).decision()
    assert result.decided and result.tied_with == ["b"]


def test_cant_tell_is_settled_as_unjudged_not_as_a_grade():
    pool = QuestionPool({"a": ["x"], "b": ["y"]}, {"x": "x", "y": "y"})
    decision = PoolDecision({"q": pool}, ("a", "b"), 1)
    decision.judge("q", "x", 2)
    decision.judge("q", "y", None)
    assert not decision.is_open("q", "y") and "y" not in decision.grades["q"]
    assert decision.decision().decided


def test_depth_order_goes_question_by_question_in_depth_pool_order():
    lists = {"a": ["x", "y"], "b": ["y", "z"]}
    assert depth_pool(lists, 2) == ["x", "y", "z"]
    pools = {"q1": QuestionPool(lists, {"x": "x", "y": "y", "z": "z"}), "q2": QuestionPool({"a": ["w"]}, {"w": "w"})}
    decision = PoolDecision(pools, ("a", "b"), 2)
    order = JudgingOrder(decision, "depth", depth_orders={"q1": depth_pool(lists, 2), "q2": ["w"]})
    seen = []
    while (item := order.next()) is not None:
        seen.append(item)
        decision.judge(*item, 0)
    assert seen == [("q1", "x"), ("q1", "y"), ("q1", "z"), ("q2", "w")]
