"""Top-k selection against a sort oracle: the one tie rule (float32 score desc, then id desc)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rag.retrievers.ranking import ranking_from_pairs, ranking_from_scores, top_k_indices


@given(scores=st.lists(st.integers(-3, 3).map(float), max_size=40), k=st.integers(0, 45))
def test_top_k_equals_full_sort_with_ties_by_index_descending(scores, k):
    expected = sorted(range(len(scores)), key=lambda i: (-scores[i], -i))[:k]
    assert top_k_indices(np.array(scores, dtype=np.float32), k).tolist() == expected


@given(scores=st.lists(st.floats(-1e6, 1e6, allow_nan=False), max_size=30), k=st.integers(1, 30))
def test_scores_tie_in_float32_as_trec_eval_reads_them(scores, k):
    ids = [f"c{i:03d}" for i in range(len(scores))]
    ranking = ranking_from_scores(np.array(scores), ids, k)
    as_float32 = [float(np.float32(s)) for s in scores]
    expected = sorted(range(len(scores)), key=lambda i: (as_float32[i], ids[i]), reverse=True)[:k]
    assert ranking.chunk_ids == [ids[i] for i in expected]
    assert ranking.scores == [as_float32[i] for i in expected]


def test_pairs_sorted_by_score_then_id_descending():
    ranking = ranking_from_pairs([("b", 1.0), ("c", 2.0), ("a", 1.0), ("d", 0.5)], k=3)
    assert ranking.chunk_ids == ["c", "b", "a"] and ranking.scores == [2.0, 1.0, 1.0]


def test_pairs_tie_break_before_id():
    best_rank = {"a": 1, "b": 3, "c": 2, "d": 1}
    ranking = ranking_from_pairs([("b", 1.0), ("c", 1.0), ("a", 1.0), ("d", 1.0)], k=4, tie_break=best_rank.get)
    assert ranking.chunk_ids == ["d", "a", "c", "b"]
