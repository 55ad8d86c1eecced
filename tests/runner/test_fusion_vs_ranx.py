"""Every fusion type over a real smoke run (MiniLM + Chroma and BM25, depth 48 = the whole corpus),
checked against independent oracles on the exported TREC files: ranx.fuse where ranx has the
method (CombSUM / CombMNZ under min-max, z-score and no normalization, weighted sums, RRF), and for
Qdrant's DBSF, which ranx lacks, qdrant-client's formula written out with :mod:`statistics`.

Score fusions read scores, so ranx is given the files as they are; RRF reads ranks, and ranx orders
equally scored items its own way, so its inputs are the files' rank order (docs/evaluation.md). The
fused lists are then ordered by the documented rule (float32 score, best input rank, id descending).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import pytest
import yaml

from evaluation import ranked_lists_to_run, read_run
from rag.cli import main

from .conftest import REPO, SMOKE_CONFIG
from .test_smoke_e2e import DEPTH, best_input_rank

pytestmark = pytest.mark.slow
INPUTS = ["dense", "bm25"]
FUSIONS = {  # name -> (type, params beyond the inputs)
    "sum_minmax": ("combsum", {}),
    "sum_zscore": ("combsum", {"normalization": "zscore"}),
    "sum_none": ("combsum", {"normalization": "none"}),
    "wsum_none": ("combsum", {"normalization": "none", "weights": [0.3, 0.7]}),
    "wsum_minmax": ("combsum", {"weights": [0.8, 0.2]}),
    "mnz_minmax": ("combmnz", {}),
    "mnz_zscore": ("combmnz", {"normalization": "zscore"}),
    "mnz_none": ("combmnz", {"normalization": "none"}),
    "rrf_weighted": ("rrf", {"k": 20, "weights": [0.7, 0.3]}),
    "dbsf": ("dbsf", {}),
    "dbsf_weighted": ("dbsf", {"weights": [2.0, 0.5]}),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fusions")
    config = yaml.safe_load(SMOKE_CONFIG.read_text())
    config["dataset"] = {"format": "jsonl", "corpus": str(REPO / "data/smoke/corpus.jsonl"),
                         "questions": str(REPO / "data/smoke/questions.jsonl")}
    config["retrievers"] = [spec for spec in config["retrievers"] if spec["name"] in INPUTS] + [
        {"name": name, "type": type_, "params": {"retrievers": INPUTS, **params}} for name, (type_, params) in FUSIONS.items()
    ]
    config.update(cache_dir=str(root / "cache"), output_dir=str(root / "runs"))
    path = root / "fusions.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["--config", str(path), "--output-dir", str(root / "run"), "--no-generation", "--quiet"]) == 0
    return root / "run" / "runs"


def ranx_fused(inputs: list[dict], norm: str | None, method: str, params: dict) -> dict[str, dict[str, float]]:
    from ranx import Run, fuse

    return fuse([Run(run) for run in inputs], norm=norm, method=method, params=params).to_dict()


def assert_same_lists(ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]], inputs: list[dict],
                      exact: bool = True) -> None:
    """Our file = the oracle's fused scores (float32), ordered by the tie rule and cut to depth."""
    assert set(ours) == set(theirs)
    for qid, scores in ours.items():
        expected_scores = {doc: float(np.float32(score)) for doc, score in theirs[qid].items()}
        best = best_input_rank([run[qid] for run in inputs])
        expected = sorted(sorted(expected_scores, reverse=True), key=lambda doc: (-expected_scores[doc], best[doc]))[:DEPTH]
        assert list(scores) == expected, qid  # read_run keeps file order = our rank order
        got = [scores[doc] for doc in expected]
        want = [expected_scores[doc] for doc in expected]
        assert got == want if exact else got == pytest.approx(want, rel=1e-6), qid


@pytest.mark.parametrize(("name", "norm", "method", "params"), [
    ("sum_minmax", "min-max", "sum", {}),
    ("sum_zscore", "zmuv", "sum", {}),
    ("sum_none", None, "sum", {}),
    ("wsum_none", None, "wsum", {"weights": [0.3, 0.7]}),
    ("wsum_minmax", "min-max", "wsum", {"weights": [0.8, 0.2]}),
    ("mnz_minmax", "min-max", "mnz", {}),
    ("mnz_zscore", "zmuv", "mnz", {}),
    ("mnz_none", None, "mnz", {}),
])
def test_score_fusions_equal_ranx(runs: Path, name: str, norm: str | None, method: str, params: dict) -> None:
    inputs = [read_run(runs / f"{retriever}.trec") for retriever in INPUTS]
    assert {len(scores) for scores in inputs[0].values()} == {DEPTH}
    assert_same_lists(read_run(runs / f"{name}.trec"), ranx_fused(inputs, norm, method, params), inputs)


def test_weighted_rrf_equals_ranx_weighted_sum_of_reciprocal_ranks(runs: Path) -> None:
    """ranx's ``rrf`` has no weights: its ``wsum`` over 1 / (k + rank) per input (rank = file order)."""
    inputs = [read_run(runs / f"{retriever}.trec") for retriever in INPUTS]
    reciprocal = [{qid: {doc: 1.0 / (20 + rank) for rank, doc in enumerate(scores, start=1)} for qid, scores in run.items()}
                  for run in inputs]
    theirs = ranx_fused(reciprocal, None, "wsum", {"weights": [0.7, 0.3]})
    assert_same_lists(read_run(runs / "rrf_weighted.trec"), theirs, inputs)
    unweighted = ranx_fused([ranked_lists_to_run({q: list(s) for q, s in run.items()}) for run in inputs], None, "rrf", {"k": 20})
    some_qid = next(iter(unweighted))
    assert any(abs(theirs[some_qid][doc] - unweighted[some_qid][doc]) > 1e-6 for doc in unweighted[some_qid])  # weights matter


def qdrant_dbsf(inputs: list[dict[str, float]], weights: list[float]) -> dict[str, float]:
    """qdrant-client's ``distribution_based_score_fusion`` (hybrid/fusion.py), with Qdrant's weights:
    mean and sample variance (n - 1), limits mean -+ 3 std, (s - low) / (high - low), summed."""
    fused: dict[str, float] = {}
    for scores, weight in zip(inputs, weights):
        mean, std = statistics.fmean(scores.values()), statistics.stdev(scores.values())
        low, high = mean - 3 * std, mean + 3 * std
        for doc, score in scores.items():
            fused[doc] = fused.get(doc, 0.0) + weight * (score - low) / (high - low)
    return fused


@pytest.mark.parametrize(("name", "weights"), [("dbsf", [1.0, 1.0]), ("dbsf_weighted", [2.0, 0.5])])
def test_dbsf_equals_qdrants_formula(runs: Path, name: str, weights: list[float]) -> None:
    inputs = [read_run(runs / f"{retriever}.trec") for retriever in INPUTS]
    theirs = {qid: qdrant_dbsf([run[qid] for run in inputs], weights) for qid in inputs[0]}
    ours = read_run(runs / f"{name}.trec")
    assert max(max(s.values()) for s in ours.values()) > 0  # scores are real, not all 0.5
    assert_same_lists(ours, theirs, inputs, exact=False)
