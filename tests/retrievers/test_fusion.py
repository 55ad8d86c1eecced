"""Fusion (RRF, convex) checked by hand on small ranked lists."""

from __future__ import annotations

import math

import pytest

from rag.errors import BenchError, ConfigError
from rag.retrievers import build_retriever
from rag.retrievers.base import Retriever, RetrieverParams
from rag.types import Ranking


class FixedLists(Retriever):
    """Input retriever with a fixed ranked list (the fusion inputs under test); records the depth asked."""

    def __init__(self, name: str, pairs: list[tuple[str, float]]):
        super().__init__(name, RetrieverParams())
        self.pairs = pairs
        self.asked_k: list[int] = []

    def index(self, chunks, cache_dir):
        pass

    def search(self, queries, k):
        self.asked_k.append(k)
        top = self.pairs[:k]
        return [Ranking([chunk_id for chunk_id, _ in top], [score for _, score in top]) for _ in queries]


A = [("x", 3.0), ("y", 2.0), ("z", 1.0)]
B = [("y", 0.9), ("w", 0.5)]


def fused(type_: str, params: dict, inputs: dict[str, list[tuple[str, float]]], k: int = 10) -> Ranking:
    retriever = build_retriever("hybrid", type_, {"retrievers": list(inputs), **params})
    retriever.bind({name: FixedLists(name, pairs) for name, pairs in inputs.items()})
    (ranking,) = retriever.search(["q"], k)
    return ranking


def test_rrf_default_k60_by_hand():
    ranking = fused("rrf", {}, {"a": A, "b": B})
    assert ranking.chunk_ids == ["y", "x", "w", "z"]
    assert ranking.scores == pytest.approx([1 / 62 + 1 / 61, 1 / 61, 1 / 62, 1 / 63])


def test_rrf_weights_k_and_cut_off():
    ranking = fused("rrf", {"weights": [2.0, 1.0], "k": 1}, {"a": A, "b": B}, k=3)
    # x: 2/(1+1); y: 2/(1+2) + 1/(1+1); z: 2/(1+3); w: 1/(1+2)
    assert ranking.chunk_ids == ["y", "x", "z"]
    assert ranking.scores == pytest.approx([2 / 3 + 1 / 2, 1.0, 2 / 4])


def test_rrf_depth_limits_each_input_and_ties_break_by_id():
    inputs = {"b": [("y", 1.0)] + B[1:], "a": A}
    retriever = build_retriever("hybrid", "rrf", {"retrievers": ["b", "a"], "depth": 1})
    lists = {name: FixedLists(name, pairs) for name, pairs in inputs.items()}
    retriever.bind(lists)
    (ranking,) = retriever.search(["q"], 10)
    # x and y tie (1/61, both at rank 1 of their input): the chunk id rule, descending, decides.
    assert ranking.chunk_ids == ["y", "x"] and ranking.scores == pytest.approx([1 / 61, 1 / 61], rel=1e-7)
    assert lists["a"].asked_k == [1] and lists["b"].asked_k == [1]


def test_rrf_of_three_inputs():
    ranking = fused("rrf", {}, {"a": A, "b": B, "c": [("z", 7.0)]})
    assert ranking.chunk_ids == ["y", "z", "x", "w"]
    assert ranking.scores == pytest.approx([1 / 62 + 1 / 61, 1 / 63 + 1 / 61, 1 / 61, 1 / 62])


def test_convex_minmax_alpha_by_hand():
    # A -> x 1, y 0.5, z 0; B -> y 1, w 0; a chunk missing from a list gets that list's minimum (0).
    # w and z tie at 0: w was rank 2 of B, z rank 3 of A, so w goes first although "z" > "w".
    half = fused("convex", {"alpha": 0.5}, {"a": A, "b": B})
    assert half.chunk_ids == ["y", "x", "w", "z"]
    assert half.scores == pytest.approx([0.75, 0.5, 0.0, 0.0])
    mostly_a = fused("convex", {"alpha": 0.8}, {"a": A, "b": B})
    assert mostly_a.chunk_ids == ["x", "y", "w", "z"]
    assert mostly_a.scores == pytest.approx([0.8, 0.6, 0.0, 0.0])


def test_convex_zscore_by_hand():
    ranking = fused("convex", {"normalization": "zscore"}, {"a": A, "b": B})
    z = math.sqrt(3 / 2)  # (3 - 2) / population std sqrt(2/3); B: (0.9 - 0.7) / 0.2 = 1
    assert ranking.chunk_ids == ["y", "x", "w", "z"]
    assert ranking.scores == pytest.approx([0.5 * 0 + 0.5 * 1, 0.5 * z - 0.5, -0.5 * z - 0.5, -0.5 * z - 0.5])


@pytest.mark.parametrize("normalization", ["minmax", "zscore"])
def test_convex_constant_list_contributes_nothing(normalization):
    ranking = fused("convex", {"normalization": normalization, "weights": [0.5, 0.5]},
                    {"a": [("x", 5.0), ("y", 5.0)], "b": [("y", 1.0), ("z", 0.0)]})
    assert ranking.chunk_ids == ["y", "x", "z"]
    assert ranking.scores[1] == ranking.scores[2]


def test_convex_empty_input_list():
    ranking = fused("convex", {"alpha": 0.3}, {"a": [], "b": B})
    assert ranking.chunk_ids == ["y", "w"] and ranking.scores == pytest.approx([0.7, 0.0])


@pytest.mark.parametrize(
    ("type_", "params", "key"),
    [
        ("rrf", {"retrievers": []}, "retrievers.hybrid.params.retrievers"),
        ("rrf", {"retrievers": ["a"], "k": -1}, "retrievers.hybrid.params.k"),
        ("rrf", {"retrievers": ["a", "b"], "weights": [1.0]}, "retrievers.hybrid.params"),
        ("rrf", {"retrievers": ["a", "a"]}, "retrievers.hybrid.params"),
        ("rrf", {"retrievers": ["a"], "depth": 0}, "retrievers.hybrid.params.depth"),
        ("convex", {"retrievers": ["a", "b", "c"], "alpha": 0.5}, "retrievers.hybrid.params"),
        ("convex", {"retrievers": ["a", "b"], "alpha": 0.5, "weights": [1, 1]}, "retrievers.hybrid.params"),
        ("convex", {"retrievers": ["a", "b"], "alpha": 1.5}, "retrievers.hybrid.params.alpha"),
        ("convex", {"retrievers": ["a", "b"], "normalization": "l2"}, "retrievers.hybrid.params.normalization"),
    ],
)
def test_bad_fusion_params_name_their_key(type_, params, key):
    with pytest.raises(ConfigError) as error:
        build_retriever("hybrid", type_, params)
    assert error.value.key == key


def test_requires_bind_and_search_order():
    retriever = build_retriever("hybrid", "rrf", {"retrievers": ["dense", "bm25"]})
    assert retriever.requires() == ["dense", "bm25"]
    with pytest.raises(BenchError, match="before bind"):
        retriever.search(["q"], 3)
    with pytest.raises(ConfigError, match=r"retrievers.hybrid.params.retrievers.*\['bm25'\]"):
        retriever.bind({"dense": FixedLists("dense", A)})
