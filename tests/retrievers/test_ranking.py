"""Top-k selection against a sort oracle, ties included."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rag.retrievers.ranking import ranking_from_pairs, top_k_indices


@given(scores=st.lists(st.integers(-3, 3).map(float), max_size=40), k=st.integers(0, 45))
def test_top_k_equals_full_sort_with_ties_by_index(scores, k):
    expected = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
    assert top_k_indices(np.array(scores), k).tolist() == expected


def test_pairs_sorted_by_score_then_id():
    ranking = ranking_from_pairs([("b", 1.0), ("c", 2.0), ("a", 1.0), ("d", 0.5)], k=3)
    assert ranking.chunk_ids == ["c", "a", "b"] and ranking.scores == [2.0, 1.0, 1.0]
