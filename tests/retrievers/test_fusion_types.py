"""CombSUM, CombMNZ and DBSF checked by hand on small ranked lists (ranx and a real run:
tests/runner/test_fusion_vs_ranx.py)."""

from __future__ import annotations

import math

import pytest

from rag.errors import ConfigError
from rag.retrievers import build_retriever

from .test_fusion import A, B, fused

Z = math.sqrt(3 / 2)  # z of 3 in (3, 2, 1): (3 - 2) / population std sqrt(2/3)


def test_combsum_minmax_by_hand():
    # A -> x 1, y 0.5, z 0; B -> y 1, w 0; nothing for a list a chunk is absent from
    ranking = fused("combsum", {}, {"a": A, "b": B})
    assert ranking.chunk_ids == ["y", "x", "w", "z"]  # w and z tie at 0: w had the better input rank (2 < 3)
    assert ranking.scores == pytest.approx([1.5, 1.0, 0.0, 0.0])


def test_combsum_raw_scores_weighted_by_hand():
    ranking = fused("combsum", {"normalization": "none", "weights": [2.0, 1.0]}, {"a": A, "b": B})
    assert ranking.chunk_ids == ["x", "y", "z", "w"]
    assert ranking.scores == pytest.approx([6.0, 4.9, 2.0, 0.5])


def test_combsum_zscore_absent_chunks_get_zero_not_the_floor():
    ranking = fused("combsum", {"normalization": "zscore"}, {"a": A, "b": B})
    # A -> x Z, y 0, z -Z; B -> y 1, w -1 (population std 0.2)
    assert ranking.chunk_ids == ["x", "y", "w", "z"]
    assert ranking.scores == pytest.approx([Z, 1.0, -1.0, -Z])


def test_combmnz_by_hand():
    ranking = fused("combmnz", {}, {"a": A, "b": B})
    assert ranking.chunk_ids == ["y", "x", "w", "z"]
    assert ranking.scores == pytest.approx([2 * (0.5 + 1.0), 1.0, 0.0, 0.0])
    raw = fused("combmnz", {"normalization": "none"}, {"a": A, "b": B, "c": [("z", 7.0)]})
    # x 3 (1 list); y 2 * (2 + 0.9); z 2 * (1 + 7); w 0.5
    assert raw.chunk_ids == ["z", "y", "x", "w"]
    assert raw.scores == pytest.approx([16.0, 5.8, 3.0, 0.5])


def test_dbsf_by_hand():
    # A: mean 2, sample std 1 -> (s - (2 - 3)) / 6: x 4/6, y 3/6, z 2/6.
    # B: two scores are mean -+ std / sqrt(2) -> 0.5 -+ 1 / (6 sqrt 2).
    half_gap = 1 / (6 * math.sqrt(2))
    ranking = fused("dbsf", {}, {"a": A, "b": B})
    assert ranking.chunk_ids == ["y", "x", "w", "z"]
    assert ranking.scores == pytest.approx([3 / 6 + 0.5 + half_gap, 4 / 6, 0.5 - half_gap, 2 / 6])
    weighted = fused("dbsf", {"weights": [3.0, 1.0]}, {"a": A, "b": B})
    assert weighted.chunk_ids == ["y", "x", "z", "w"]  # weights multiply the normalized scores
    assert weighted.scores == pytest.approx([1.5 + 0.5 + half_gap, 2.0, 1.0, 0.5 - half_gap])


def test_dbsf_is_not_clipped_and_degenerate_lists_score_one_half():
    outlier = [("o", 10.0)] + [(f"n{i:02d}", 0.0) for i in range(19)]  # mean 0.5, sample std sqrt(5)
    ranking = fused("dbsf", {"depth": 20}, {"a": outlier, "b": [("n00", 4.0)], "c": [("n01", 2.0), ("n02", 2.0)]}, k=3)
    assert ranking.chunk_ids[0] == "o"
    assert ranking.scores[0] == pytest.approx(0.5 + 9.5 / (6 * math.sqrt(5)))  # 1.208 > 1: beyond 3 sigma
    low = 0.5 - 0.5 / (6 * math.sqrt(5))
    assert ranking.scores[1:] == pytest.approx([low + 0.5, low + 0.5])  # a single entry, a constant list: 0.5
    # n00, n01 and n02 tie; n00 (rank 1 of b) and n01 (rank 1 of c) beat n02 (rank 2 of c), then id desc
    assert ranking.chunk_ids[1:] == ["n01", "n00"]


@pytest.mark.parametrize(
    ("type_", "params", "key"),
    [
        ("combsum", {"retrievers": ["a", "b"], "normalization": "l2"}, "retrievers.hybrid.params.normalization"),
        ("combmnz", {"retrievers": ["a", "b"], "weights": [1.0, 2.0]}, "retrievers.hybrid.params"),
        ("dbsf", {"retrievers": ["a", "b"], "normalization": "minmax"}, "retrievers.hybrid.params.normalization"),
        ("dbsf", {"retrievers": ["a", "b"], "alpha": 0.5}, "retrievers.hybrid.params.alpha"),
    ],
)
def test_bad_params_name_their_key(type_, params, key):
    with pytest.raises(ConfigError) as error:
        build_retriever("hybrid", type_, params)
    assert error.value.key == key
