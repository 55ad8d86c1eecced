"""``rag-bench sweep`` on BM25-only configs over the bundled smoke data (41 documents, 30 questions;
no model to load): the cartesian product, the seeded dev/test split, the dev argmax and its test
numbers against plain runs of the same settings (the pipeline's per_query.csv), cache reuse counted
at the index builds and the encoder, and bad grid keys."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest

from evaluation.stats import paired_randomization_test
from rag.chunking import chunk_documents
from rag.cli import main
from rag.config import load_config
from rag.data import load_dataset
from rag.embeddings import Embedder
from rag.retrievers.bm25 import BM25Retriever
from rag.retrievers.index_cache import IndexDir
from rag.sweep import load_sweep_summary
from rag.sweep.split import dev_test_split
from rag.types import Question

from .conftest import REPO, tiny_config

CORPUS, QUESTIONS = REPO / "data" / "smoke" / "corpus.jsonl", REPO / "data" / "smoke" / "questions.jsonl"
RETRIEVERS = [
    {"name": "bm25", "type": "bm25", "params": {"k1": 1.2, "b": 0.75}},
    {"name": "bm25l", "type": "bm25", "params": {"variant": "bm25l"}},
    {"name": "rrf", "type": "rrf", "params": {"retrievers": ["bm25", "bm25l"], "k": 60}},
]
GRID = ["--grid", "retrievers.bm25.params.b=0,0.5,1", "--grid", "retrievers.rrf.params.k=1,60"]


def smoke_bm25_config(directory: Path, **overrides) -> Path:
    return tiny_config(directory, CORPUS, QUESTIONS, retrievers=RETRIEVERS,
                       evaluation={"metrics": ["mrr@3", "recall@3", "hit@3"], "n_resamples": 500}, **overrides)


def sweep(config: Path, out: Path, *args: str) -> Path:
    assert main(["sweep", "--config", str(config), "--output-dir", str(out), "--quiet", *args]) == 0
    return out


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("sweep")
    config = smoke_bm25_config(root)
    return config, sweep(config, root / "sweep", *GRID)


def test_cartesian_product_and_outputs(swept: tuple[Path, Path]) -> None:
    _, out = swept
    table = pd.read_csv(out / "sweep.csv")
    grid = table[table["point"] != "config"]
    assert sorted(grid["point"].unique()) == [f"p{i:03d}" for i in range(6)]
    combos = grid.drop_duplicates("point")[["retrievers.bm25.params.b", "retrievers.rrf.params.k"]]
    assert sorted(map(tuple, combos.to_numpy().tolist())) == sorted(itertools.product([0, 0.5, 1], [1, 60]))
    assert len(table) == 7 * 3 * 1 * 2  # (6 points + the config's own) x methods x sets x splits
    assert set(table["split"]) == {"dev", "test"}
    assert {"mrr@3", "recall@3", "hit@3", "mrr@3_ci_low", "mrr@3_ci_high", "questions"} <= set(table.columns)
    config_rows = table[table["point"] == "config"]
    assert set(config_rows["retrievers.bm25.params.b"]) == {0.75} and set(config_rows["retrievers.rrf.params.k"]) == {60}
    summary = load_sweep_summary(out)
    assert [p.name for p in summary.plots] == ["sweep_retrievers.bm25.params.b.png", "sweep_retrievers.rrf.params.k.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in summary.plots)
    # bm25l is touched by no key; bm25 by b; rrf by both (b through its input)
    record = json.loads((out / "sweep.json").read_text())
    assert record["methods_touched_by"] == {"bm25": ["retrievers.bm25.params.b"], "bm25l": [],
                                            "rrf": ["retrievers.bm25.params.b", "retrievers.rrf.params.k"]}
    assert list(summary.selection["method"]) == ["bm25", "rrf"] and len(summary.verdicts) == 2
    assert "optimistic" in (out / "sweep.md").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["dev_fraction"] == 0.3


def test_split_is_disjoint_seeded_and_recorded(swept: tuple[Path, Path]) -> None:
    questions = [Question(qid=f"q{i}", text=f"t{i}", gold_urls=[["u"]], answers=[], qtype="factual") for i in range(30)]
    split = dev_test_split(questions, 0.3, seed=0, question_set="questions")
    dev = {q for q, s in split.items() if s == "dev"}
    assert len(dev) == 9 and set(split) == {q.qid for q in questions}
    assert split == dev_test_split(list(reversed(questions)), 0.3, seed=0, question_set="questions")  # order-free
    assert split != dev_test_split(questions, 0.3, seed=1, question_set="questions")
    assert split != dev_test_split(questions, 0.3, seed=0, question_set="other")
    _, out = swept
    record = json.loads((out / "sweep.json").read_text())
    assert record["split"]["dev_fraction"] == 0.3 and record["split"]["seed"] == 0
    recorded = set(record["split"]["sets"]["questions"]["dev"])
    qids = {q.qid for q in load_dataset(load_config(swept[0]).dataset).question_sets["questions"]}
    assert len(recorded) == 9 and recorded < qids
    table = pd.read_csv(out / "sweep.csv").drop_duplicates(["split"]).set_index("split")["questions"]
    assert table["dev"] == 9 and table["test"] == 21


def plain_run(config: Path, out: Path, *overrides: str) -> pd.DataFrame:
    argv = ["--config", str(config), "--output-dir", str(out), "--no-generation", "--quiet"]
    assert main([*argv, *itertools.chain.from_iterable(("--set", o) for o in overrides)]) == 0
    return pd.read_csv(out / "per_query.csv", dtype={"qid": str})


def test_chosen_point_is_the_dev_argmax_and_matches_plain_runs(swept: tuple[Path, Path], tmp_path: Path) -> None:
    config, out = swept
    table = pd.read_csv(out / "sweep.csv")
    record = json.loads((out / "sweep.json").read_text())
    dev_ids = set(record["split"]["sets"]["questions"]["dev"])
    points = {p["id"]: p["values"] for p in record["points"]}
    for row in load_sweep_summary(out).selection.to_dict("records"):
        method = row["method"]
        dev = table[(table["method"] == method) & (table["split"] == "dev") & (table["point"] != "config")]
        assert row["dev_chosen_optimistic"] == dev["mrr@3"].max()
        assert dev.set_index("point").loc[row["chosen_point"], "mrr@3"] == dev["mrr@3"].max()
        # the same settings as plain runs: the pipeline's per-query scores give the sweep's numbers
        chosen = plain_run(config, tmp_path / f"{method}-chosen", *(f"{k}={v}" for k, v in points[row["chosen_point"]].items()))
        own = plain_run(config, tmp_path / f"{method}-config")
        chosen, own = (frame[frame["method"] == method].set_index("qid")["mrr@3"] for frame in (chosen, own))
        test_ids = sorted(set(chosen.index) - dev_ids)
        assert chosen[sorted(dev_ids)].mean() == pytest.approx(row["dev_chosen_optimistic"], abs=1e-12)
        assert chosen[test_ids].mean() == pytest.approx(row["test_chosen"], abs=1e-12)
        assert own[test_ids].mean() == pytest.approx(row["test_config"], abs=1e-12)
        if not row["chosen_is_config"]:
            assert row["p_value"] == paired_randomization_test(chosen[test_ids], own[test_ids], 500, 0)


def count_index_builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    builds: list[Path] = []
    start = IndexDir.start

    def counting_start(self: IndexDir) -> Path:
        builds.append(self.path)
        return start(self)

    monkeypatch.setattr(IndexDir, "start", counting_start)
    return builds


def test_a_fusion_key_reindexes_nothing_a_chunk_size_reindexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = count_index_builds(monkeypatch)
    searched: list[str] = []
    search = BM25Retriever.search
    monkeypatch.setattr(BM25Retriever, "search", lambda self, queries, k: searched.append(self.name) or search(self, queries, k))
    config = smoke_bm25_config(tmp_path)
    sweep(config, tmp_path / "first", "--grid", "retrievers.rrf.params.k=1,10,60")
    assert len(builds) == 2  # bm25 and bm25l, once, for the whole sweep
    # each input searched once, as a method: every RRF setting is served its rankings (rag.runner.retrieval)
    assert sorted(searched) == ["bm25", "bm25l"]
    record = json.loads((tmp_path / "first" / "sweep.json").read_text())
    assert record["distinct_evaluations"] == 2 + 3  # the inputs once; rrf per k (60 is the config's own)
    sweep(config, tmp_path / "second", "--grid", "retrievers.rrf.params.k=5,7")
    assert len(builds) == 2  # warm cache: nothing rebuilt
    retrieval = sorted(p.name.split("-")[0] for p in (tmp_path / "cache" / "retrieval").glob("*.json"))
    assert retrieval == ["bm25", "bm25l", "rrf", "rrf", "rrf", "rrf", "rrf"]  # inputs retrieved once in all
    sweep(config, tmp_path / "chunks", "--grid", "chunking.max_tokens=32,48")
    assert len(builds) == 2 + 2 * 2  # new chunk sets do need new BM25 indexes (the test can fail)


@pytest.mark.parametrize(("grid", "named"), [
    ("retrievers.rrf.params.kk=1,2", "retrievers.rrf.params.kk"),
    ("retrievers.nope.params.k=1", "retrievers.nope"),
    ("retrievers.rrf.params.k=-1,60", "retrievers.rrf.params.k"),
    ("evaluation.metrics=[mrr]", "evaluation.metrics"),
    ("retrievers.rrf.params.k", "retrievers.rrf.params.k"),
    ("retrievers.rrf.params.k=1,1", "retrievers.rrf.params.k"),
])
def test_bad_grid_key_exits_2_with_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture, grid: str,
                                                      named: str) -> None:
    config = smoke_bm25_config(tmp_path)
    assert main(["sweep", "--config", str(config), "--grid", grid, "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and named in err, err
    assert not (tmp_path / "out").exists()


def test_bad_select_and_dev_fraction_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    config = smoke_bm25_config(tmp_path)
    for extra, named in ((["--select", "ndcg@10"], "--select"), (["--dev-fraction", "1.5"], "--dev-fraction")):
        assert main(["sweep", "--config", str(config), *GRID, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and named in err, err


@pytest.mark.slow
def test_a_chunk_size_embeds_only_new_chunk_texts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real MiniLM: across two chunk sizes every text is encoded once, and only the new chunks of the
    second size are (the embedding cache is keyed by text)."""
    encoded: list[str] = []
    encode = Embedder._encode

    def recording_encode(self: Embedder, texts_by_key: dict[str, str], desc: str):
        encoded.extend(texts_by_key.values())
        return encode(self, texts_by_key, desc)

    monkeypatch.setattr(Embedder, "_encode", recording_encode)
    config = tiny_config(tmp_path, CORPUS, QUESTIONS, retrievers=[{"name": "dense", "type": "dense",
                                                                    "params": {"search": "exact"}}],
                         chunking={"max_tokens": 128, "overlap_tokens": 16}, evaluation={"n_resamples": 200})
    sweep(config, tmp_path / "out", "--grid", "chunking.max_tokens=128,64")
    base = load_config(config)
    documents = load_dataset(base.dataset).documents
    texts = [{c.text for c in chunk_documents(documents, base.chunking.model_copy(update={"max_tokens": size}))}
             for size in (128, 64)]
    questions = {q.text for qs in load_dataset(base.dataset).question_sets.values() for q in qs}
    assert texts[1] - texts[0] and texts[0] & texts[1]  # the second size has new texts and shared ones
    assert len(encoded) == len(set(encoded))  # nothing encoded twice
    assert set(encoded) == texts[0] | texts[1] | questions


def test_a_sweep_refuses_a_method_that_calls_a_model_per_question(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A sweep retrieves every question at every grid point: an LLM-backed method (here an endpoint
    rerank, one request per question) would send them all, so it is refused before any work."""
    reranked = {"name": "bm25_rerank", "type": "rerank", "params": {
        "input": "bm25", "depth": 5, "reranker": {"type": "endpoint", "model": "m", "base_url": "http://127.0.0.1:9/v1"}}}
    config = tiny_config(tmp_path, CORPUS, QUESTIONS, retrievers=[*RETRIEVERS, reranked],
                         evaluation={"metrics": ["mrr@3"], "n_resamples": 500})
    assert main(["sweep", "--config", str(config), *GRID, "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "methods" in err and "bm25_rerank" in err, err
    assert not (tmp_path / "out").exists()
