"""Retrieval depth and cut-offs, graded relevance end to end, and the HNSW fidelity record.

Oracles: pytrec_eval on the original graded qrels (not on files we wrote), hand-built data whose
graded and binary nDCG differ, and the config rule "cut-off <= depth"."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval
import yaml

from evaluation import read_run
from rag.cli import main
from rag.config import config_from_mapping
from rag.errors import ConfigError

from .conftest import SMOKE_CONFIG, question_line, tiny_config, write_tiny_dataset

# Six documents; q1 has three relevant documents of grades 3, 1, 2 worded so that BM25 ranks the
# grade-1 document first (graded nDCG < binary nDCG); q2 one document with grade 2.
BEIR_CORPUS = [
    {"_id": "d1", "title": "Comets", "text": "Comets are icy bodies that release gas near the Sun."},
    {"_id": "d2", "title": "Comet tails", "text": "Comet comet tails of icy comet dust point away from the Sun comet."},
    {"_id": "d3", "title": "Halley", "text": "Halley is a short period comet visible every 76 years."},
    {"_id": "d4", "title": "Asteroids", "text": "Asteroids are rocky bodies orbiting the Sun."},
    {"_id": "d5", "title": "Meteors", "text": "Meteors are streaks of light from space dust burning up."},
    {"_id": "d6", "title": "Moons", "text": "Moons orbit planets; some are icy and some rocky."},
]
BEIR_QUERIES = [{"_id": "q1", "text": "comet icy tails"}, {"_id": "q2", "text": "rocky asteroids orbiting"}]
BEIR_QRELS = {"q1": {"d1": 3, "d2": 1, "d3": 2, "d5": 0}, "q2": {"d4": 2}}


def write_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in BEIR_CORPUS))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in BEIR_QUERIES))
    rows = [f"{q}\t{d}\t{g}" for q, grades in BEIR_QRELS.items() for d, g in grades.items()]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    return root


def beir_config(tmp_path: Path, **overrides) -> Path:
    config = {
        "name": "graded",
        "dataset": {"format": "beir", "path": str(write_beir(tmp_path / "beir"))},
        "retrievers": [{"name": "bm25", "type": "bm25", "params": {"tokenizer": {"stopwords": False}}}],
        "top_k": 3,
        "depth": 6,
        "evaluation": {"metrics": ["ndcg@3", "ndcg@6", "recall@3"], "levels": ["url", "chunk"], "n_resamples": 200},
        "output_dir": str(tmp_path / "runs"),
        "cache_dir": str(tmp_path / "cache"),
        **overrides,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_graded_beir_qrels_reach_ndcg_as_gains(tmp_path: Path) -> None:
    assert main(["--config", str(beir_config(tmp_path)), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    per_query = pd.read_csv(tmp_path / "run" / "per_query.csv").set_index("qid")
    qrels = {f"test/{q}": grades for q, grades in BEIR_QRELS.items()}  # the original graded judgements
    binary = {q: {d: int(g > 0) for d, g in grades.items()} for q, grades in qrels.items()}
    for k in (3, 6):
        run = read_run(tmp_path / "run" / "runs" / f"bm25.url@{k}.trec")
        graded = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut_{k}"}).evaluate(run)
        flat = pytrec_eval.RelevanceEvaluator(binary, {f"ndcg_cut_{k}"}).evaluate(run)
        for trec_qid, values in graded.items():
            assert per_query.loc[trec_qid.split("/")[1], f"ndcg@{k}"] == pytest.approx(values[f"ndcg_cut_{k}"], abs=1e-12)
        # the data is built so that grades matter: binary nDCG would be a different number
        assert graded["test/q1"][f"ndcg_cut_{k}"] != pytest.approx(flat["test/q1"][f"ndcg_cut_{k}"])
    # recall uses grade > 0 only: d5 (grade 0) is judged but not relevant
    pages = read_run(tmp_path / "run" / "runs" / "bm25.url@3.trec")["test/q1"]
    assert per_query.loc["q1", "recall@3"] == pytest.approx(len(set(pages) & {"d1", "d2", "d3"}) / 3)


def test_graded_gold_in_our_jsonl(tmp_path: Path) -> None:
    """A graded ``gold_urls`` object in our JSONL format gives the same graded nDCG as BEIR's qrels."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": r["_id"], "title": r["title"], "text": f"{r['title']} {r['text']}"}) + "\n"
                              for r in BEIR_CORPUS))
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps({"id": q["_id"], "question": q["text"], "gold_urls": BEIR_QRELS[q["_id"]]}) + "\n"
                                 for q in BEIR_QUERIES))
    config = beir_config(tmp_path, dataset={"format": "jsonl", "corpus": str(corpus), "questions": str(questions)},
                         name="graded-jsonl")
    assert main(["--config", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    per_query = pd.read_csv(tmp_path / "run" / "per_query.csv").set_index("qid")
    run = read_run(tmp_path / "run" / "runs" / "bm25.url@3.trec")
    qrels = {f"questions/{q}": grades for q, grades in BEIR_QRELS.items()}
    graded = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_3"}).evaluate(run)
    for trec_qid, values in graded.items():
        assert per_query.loc[trec_qid.split("/")[1], "ndcg@3"] == pytest.approx(values["ndcg_cut_3"], abs=1e-12)


@pytest.mark.parametrize(("changes", "key"), [
    ({"depth": 5, "top_k": 5, "evaluation": {"metrics": ["recall@20"]}}, "evaluation.metrics"),
    ({"depth": 5, "top_k": 10}, "top_k"),
])
def test_cutoff_beyond_depth_is_a_config_error(changes: dict, key: str, tmp_path: Path, capsys) -> None:
    raw = yaml.safe_load(SMOKE_CONFIG.read_text())
    raw.update(changes)
    with pytest.raises(ConfigError) as caught:
        config_from_mapping(raw, base_dir=SMOKE_CONFIG.parent)
    assert caught.value.key == key and "exceeds depth 5" in str(caught.value)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["--config", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0] and "Traceback" not in err[0]


def test_default_depth_keeps_100_and_cutoff_at_depth_is_fine() -> None:
    raw = yaml.safe_load(SMOKE_CONFIG.read_text())
    assert config_from_mapping(raw, base_dir=SMOKE_CONFIG.parent).depth == 100
    raw.update(depth=20, evaluation={"metrics": ["recall@20", "mrr"]})
    assert config_from_mapping(raw, base_dir=SMOKE_CONFIG.parent).evaluation.metrics == ["recall@20", "mrr"]


FUSION_TYPES = ["rrf", "convex", "combsum", "combmnz", "dbsf"]
TINY_METRICS = ["mrr@3", "recall@3", "ndcg@3", "map@3", "p@3", "hit@3", "complete@3"]


@pytest.mark.parametrize("ties", ["id", "expected"])
def test_a_question_sharing_no_term_with_the_corpus_gets_empty_lists_end_to_end(tmp_path: Path, ties: str) -> None:
    """Issue 28: BM25 returns only matching chunks, so a question sharing no term with any chunk gets
    an empty list, and so does every fusion of such lists. Every stage takes it: its metrics are 0 at
    both levels (trec_eval -c), it has no line in any TREC run, the extractive generator answers from
    no context, and curves, tie counts and reports are written; the other questions are unaffected."""
    corpus, questions = write_tiny_dataset(
        tmp_path / "data", extra_questions=[question_line("q5", "Zyxx quorbl frobnitz?", ["Saturn"], ["Saturn"])])
    bm25 = [{"name": "bm25", "type": "bm25", "params": {"k1": 1.2}}, {"name": "bm25b", "type": "bm25", "params": {"k1": 2.0}}]
    fusions = [{"name": kind, "type": kind, "params": {"retrievers": ["bm25", "bm25b"]}} for kind in FUSION_TYPES]
    config = tiny_config(tmp_path, corpus, questions, retrievers=bm25 + fusions,
                         evaluation={"metrics": TINY_METRICS, "levels": ["url", "chunk"], "ties": ties, "n_resamples": 200})
    assert main(["--config", str(config), "--quiet", "--output-dir", str(tmp_path / "run")]) == 0
    run = tmp_path / "run"
    per_query = pd.read_csv(run / "per_query.csv", keep_default_na=False, na_values=[""])
    empty = per_query[per_query["qid"] == "q5"].set_index("method")
    assert sorted(empty.index) == sorted(["bm25", "bm25b", *FUSION_TYPES])
    columns = TINY_METRICS + [f"chunk:{metric}" for metric in TINY_METRICS]
    assert (empty[columns] == 0).all().all()
    assert (empty["retrieved_urls"] == "[]").all() and (empty["generation_status"] == "answered").all()
    assert (per_query[per_query["qid"] != "q5"]["hit@3"] == 1).all()  # each tiny question's page is found
    for method in empty.index:
        qids = set(read_run(run / "runs" / f"{method}.trec"))
        assert qids == {f"questions/q{i}" for i in range(1, 5)}, method
    assert (run / "curves.csv").is_file() and (run / "report.html").is_file()
