"""configs/smoke.yaml end to end with the real parts: MiniLM + Chroma, BM25, RRF, the extractive
generator. One run is shared by the assertions; results are checked against independent oracles
(pytrec_eval on the written TREC files, and a hand-written MRR / recall over the per-query lists)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval

from evaluation import read_qrels, read_run
from rag.cli import main

from .conftest import REPO, SMOKE_CONFIG

pytestmark = pytest.mark.slow
METHODS = ["dense", "bm25", "rrf"]
METRICS = ["mrr", "recall@10", "ndcg@10", "map@10", "p@10", "hit@10", "em", "f1"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("smoke")
    argv = ["--config", str(SMOKE_CONFIG), "--output-dir", str(root / "run"), "--set", f"cache_dir={root / 'cache'}",
            "--set", f"output_dir={root / 'runs'}", "--quiet"]
    assert main(argv) == 0
    return root


def digest_tree(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_output_files(smoke: Path) -> None:
    run = smoke / "run"
    expected = {"comparison.csv", "comparison.md", "comparison.json", "per_query.csv", "report.html", "manifest.json",
                "plan.json", "runs/qrels.url.txt", "runs/qrels.chunk.txt"}
    expected |= {f"runs/{m}.trec" for m in METHODS} | {f"runs/{m}.url.trec" for m in METHODS}
    assert expected <= set(digest_tree(run))
    assert not list(run.rglob("*.tmp"))  # atomic writes leave no temporaries


def test_comparison_columns_and_sane_values(smoke: Path) -> None:
    table = pd.read_csv(smoke / "run" / "comparison.csv")
    assert table["method"].tolist() == METHODS
    for column in ["failures", "answered", "retrieval_ms_per_query", "generation_s_per_question", "prompt_tokens",
                   "completion_tokens", "mrr_beats"]:
        assert column in table
    for metric in METRICS:
        assert table[metric].between(0, 1).all(), metric
        assert (table[f"{metric}_ci_low"] <= table[metric] + 1e-12).all(), metric
        assert (table[metric] <= table[f"{metric}_ci_high"] + 1e-12).all(), metric
    assert (table["failures"] == 0).all() and (table["answered"] == 30).all()
    markdown = (smoke / "run" / "comparison.md").read_text()
    assert "| rrf (c)" in markdown and "Holm" in markdown


def hand_mrr_recall(gold_groups: list[list[str]], urls: list[str], k: int = 10) -> tuple[float, float]:
    relevant = {u for group in gold_groups for u in group}
    ranks = [i + 1 for i, u in enumerate(urls[:k]) if u in relevant]
    return (1.0 / ranks[0] if ranks else 0.0), len(ranks) / len(relevant)


def test_per_query_rows_match_hand_computed_metrics(smoke: Path) -> None:
    per_query = pd.read_csv(smoke / "run" / "per_query.csv", keep_default_na=False, na_values=[""])
    assert len(per_query) == 30 * len(METHODS)
    for column in ["question", "qtype", "gold_urls", "retrieved_urls", "gold_url_ranks", "answer", "reference",
                   "error", "retrieval_ms", "generation_status", *METRICS]:
        assert column in per_query
    for row in per_query.to_dict("records"):
        mrr, recall = hand_mrr_recall(json.loads(row["gold_urls"]), json.loads(row["retrieved_urls"]))
        assert row["mrr"] == pytest.approx(mrr) and row["recall@10"] == pytest.approx(recall)
    table = pd.read_csv(smoke / "run" / "comparison.csv").set_index("method")
    means = per_query.groupby("method")["mrr"].mean()
    for method in METHODS:
        assert table.loc[method, "mrr"] == pytest.approx(means[method])


def test_trec_files_agree_with_pytrec_eval(smoke: Path) -> None:
    qrels = read_qrels(smoke / "run" / "runs" / "qrels.url.txt")
    per_query = pd.read_csv(smoke / "run" / "per_query.csv")
    for method in METHODS:
        run = read_run(smoke / "run" / "runs" / f"{method}.url.trec")
        measures = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "recall_10", "ndcg_cut_10"}).evaluate(run)
        ours = per_query[per_query["method"] == method].set_index("qid")
        for trec_qid, values in measures.items():
            qid = trec_qid.split("/", 1)[1]
            assert ours.loc[qid, "mrr"] == pytest.approx(values["recip_rank"])
            assert ours.loc[qid, "recall@10"] == pytest.approx(values["recall_10"])
            assert ours.loc[qid, "ndcg@10"] == pytest.approx(values["ndcg_cut_10"])


def test_manifest_records_the_run(smoke: Path) -> None:
    manifest = json.loads((smoke / "run" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["seed"] == 0
    corpus = REPO / "data" / "smoke" / "corpus.jsonl"
    assert manifest["data"]["source_files"][str(corpus)] == hashlib.sha256(corpus.read_bytes()).hexdigest()
    assert manifest["data"]["question_sets"]["questions"]["questions"] == 30
    assert manifest["data"]["skipped_invalid"] == {}
    assert {"load", "chunk", "index:dense", "retrieve:dense", "generate", "evaluate", "report"} <= set(manifest["timings"])
    assert manifest["packages"]["chromadb"]


def test_warm_second_run_reuses_caches_and_leaves_the_first_run_alone(smoke: Path) -> None:
    before = digest_tree(smoke / "run")
    argv = ["--config", str(SMOKE_CONFIG), "--set", f"cache_dir={smoke / 'cache'}",
            "--set", f"output_dir={smoke / 'runs'}", "--quiet"]
    assert main(argv) == 0
    assert digest_tree(smoke / "run") == before
    (second,) = (smoke / "runs" / "smoke").iterdir()  # a new timestamped directory
    manifest = json.loads((second / "manifest.json").read_text())
    assert not any(stage.startswith(("index:", "retrieve:")) for stage in manifest["timings"])  # all cached
    # the extractive generator is not cached (cheaper than a lookup), so its timing differs
    first, again = (pd.read_csv(d / "comparison.csv").drop(columns="generation_s_per_question")
                    for d in (smoke / "run", second))
    pd.testing.assert_frame_equal(first, again)
    # the same output dir again is refused: exit 2, first run untouched
    assert main(["--config", str(SMOKE_CONFIG), "--output-dir", str(smoke / "run"), "--quiet"]) == 2
    assert digest_tree(smoke / "run") == before
