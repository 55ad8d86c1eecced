"""The built-in milvus config end to end on the smoke data: dense vectors in Milvus (milvus-lite), our
BM25 and fusions, Milvus's own BM25 and hybrid search (RRF and weighted) as methods in one comparison,
with their verdicts, the fidelity check of the Milvus-backed dense retriever, and the TREC files
re-scored by pytrec_eval (an independent evaluator)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval

pytest.importorskip("pymilvus")

from evaluation import read_qrels, read_run  # noqa: E402
from rag.cli import main  # noqa: E402

pytestmark = pytest.mark.slow
METHODS = ["dense", "bm25", "milvus_bm25", "rrf", "convex", "milvus_rrf", "milvus_weighted"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("milvus")
    argv = ["--config", "milvus", "--output-dir", str(root / "run"), "--set", f"cache_dir={root / 'cache'}",
            "--set", "evaluation.n_resamples=500", "--quiet"]
    assert main(argv) == 0
    assert (root / "cache" / "index" / "dense" / "milvus.db").exists()  # milvus-lite files in the cache directory
    return root / "run"


def test_every_method_compared_with_verdicts(run_dir: Path) -> None:
    table = pd.read_csv(run_dir / "comparison.csv")
    assert table["method"].tolist() == METHODS
    for metric in ["mrr@10", "recall@10", "ndcg@10", "hit@10"]:
        assert table[metric].between(0, 1).all()
        assert (table[metric] > 0.5).all(), metric  # the smoke questions are easy for every method
    markdown = (run_dir / "comparison.md").read_text()
    assert "## Verdict" in markdown
    report = (run_dir / "report.html").read_text()
    for method in METHODS:
        assert f"| {method} (" in markdown and method in report


def test_fidelity_check_covers_the_milvus_store(run_dir: Path) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    fidelity = manifest["hnsw_vs_exact"]
    assert set(fidelity) == {"dense"} and "hnsw fidelity" in manifest["timings"]
    assert fidelity["dense"]["questions"] == 30 and fidelity["dense"]["recall_vs_exact"] >= 0.99
    assert "HNSW vs exact search (dense" in (run_dir / "report.html").read_text()


def test_engine_methods_rescored_by_pytrec_eval(run_dir: Path) -> None:
    """The engine's rankings, written as TREC files, give pytrec_eval the metrics we report."""
    runs = run_dir / "runs"
    qrels = read_qrels(runs / "qrels.url.txt")
    per_query = pd.read_csv(run_dir / "per_query.csv")
    for method in ("milvus_bm25", "milvus_rrf", "milvus_weighted"):
        measures = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "ndcg_cut_10"}).evaluate(
            read_run(runs / f"{method}.url@10.trec"))
        ours = per_query[per_query["method"] == method].set_index("qid")
        assert len(measures) == 30
        for trec_qid, values in measures.items():
            qid = trec_qid.split("/", 1)[1]
            assert ours.loc[qid, "mrr@10"] == pytest.approx(values["recip_rank"], abs=1e-12)
            assert ours.loc[qid, "ndcg@10"] == pytest.approx(values["ndcg_cut_10"], abs=1e-12)
