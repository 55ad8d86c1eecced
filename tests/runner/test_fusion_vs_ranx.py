"""Every fusion type over a real smoke run (MiniLM + Chroma and BM25, depth 48 = the whole corpus),
checked against independent oracles on the exported TREC files: ranx.fuse where ranx has the
method (CombSUM / CombMNZ under min-max, z-score and no normalization, weighted sums, RRF), and for
Qdrant's DBSF, which ranx lacks, qdrant-client's formula written out with :mod:`statistics`.

Score fusions read scores, so ranx is given the files as they are. RRF reads ranks, and ranx orders
equally scored items its own way: over the files as they are it gives our RRF as long as an input
has no tie (BM25 lists hold only matching chunks, so no run of zero scores), and its inputs are the
files' rank order for the weighted check (docs/evaluation.md). The fused lists are then ordered by
the documented rule (float32 score, best input rank, id descending).
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
    "rrf": ("rrf", {"k": 60}),  # configs/smoke.yaml's
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


def test_bm25_lists_hold_only_matching_chunks_and_ranx_rrf_over_the_files_is_ours(runs: Path) -> None:
    """Issue 28: bm25.trec has no 0.0-score line (a chunk sharing no query term is not a result), so
    ranx's RRF over our dense.trec and bm25.trec *as they are* — ranx ranking each input by its
    scores, its own way — gives our rrf top-10 on every question (on the old lists, which ended in
    zero-score chunks in an order ranx does not share, on none). No file or question is left out."""
    lines = (runs / "bm25.trec").read_text(encoding="utf-8").splitlines()
    assert lines and all(float(line.split()[4]) > 0 for line in lines)
    inputs = [read_run(runs / f"{retriever}.trec") for retriever in INPUTS]
    assert set(inputs[1]) == set(inputs[0]) and len(inputs[0]) == 30  # every smoke question matches some chunk
    assert any(len(scores) < DEPTH for scores in inputs[1].values())  # short lists are exercised
    theirs = ranx_fused(inputs, None, "rrf", {"k": 60})
    ours = read_run(runs / "rrf.trec")
    assert set(ours) == set(theirs)
    for qid, scores in ours.items():
        fused = {doc: float(np.float32(score)) for doc, score in theirs[qid].items()}
        best = best_input_rank([run[qid] for run in inputs])
        top_10 = sorted(sorted(fused, reverse=True), key=lambda doc: (-fused[doc], best[doc]))[:10]
        assert list(scores)[:10] == top_10, qid
        assert [scores[doc] for doc in top_10] == [fused[doc] for doc in top_10], qid


def qdrant_dbsf(inputs: list[dict[str, float]], weights: list[float]) -> dict[str, float]:
    """qdrant-client's ``distribution_based_score_fusion`` (hybrid/fusion.py), with Qdrant's weights:
    mean and sample variance (n - 1), limits mean -+ 3 std, (s - low) / (high - low), summed. A list
    of one entry (a BM25 query matching one chunk), where the client divides by n - 1 = 0, scores 0.5
    as in Qdrant's server (``score_fusion.rs``, ``distr_norm``)."""
    fused: dict[str, float] = {}
    for scores, weight in zip(inputs, weights):
        if len(scores) == 1:
            normalized = dict.fromkeys(scores, 0.5)
        else:
            mean, std = statistics.fmean(scores.values()), statistics.stdev(scores.values())
            low, high = mean - 3 * std, mean + 3 * std
            normalized = {doc: (score - low) / (high - low) for doc, score in scores.items()}
        for doc, value in normalized.items():
            fused[doc] = fused.get(doc, 0.0) + weight * value
    return fused


@pytest.mark.parametrize(("name", "weights"), [("dbsf", [1.0, 1.0]), ("dbsf_weighted", [2.0, 0.5])])
def test_dbsf_equals_qdrants_formula(runs: Path, name: str, weights: list[float]) -> None:
    inputs = [read_run(runs / f"{retriever}.trec") for retriever in INPUTS]
    theirs = {qid: qdrant_dbsf([run[qid] for run in inputs], weights) for qid in inputs[0]}
    ours = read_run(runs / f"{name}.trec")
    assert max(max(s.values()) for s in ours.values()) > 0  # scores are real, not all 0.5
    assert_same_lists(ours, theirs, inputs, exact=False)
