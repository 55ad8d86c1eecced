"""Your retriever in the comparison (issue 51), end to end on the smoke config: every run writes
questions.tsv; a run's own bm25.trec given back as a run file (its tag changed) is a method whose every
per-question metric equals bm25's, a fusion over it is a config line and equals the same fusion over
bm25, and a run file's metrics equal pytrec_eval's on that file and the qrels (chunk and page level).
A bad file is one line and exit 2; on a folder of files the run file's passages are pooled."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval
import yaml

from evaluation import read_qrels, read_run
from rag.cli import main

from .conftest import SMOKE_CONFIG

pytestmark = pytest.mark.slow
PYTREC = {"mrr@10": "recip_rank", "recall@10": "recall_10", "ndcg@10": "ndcg_cut_10", "map@10": "map_cut_10",
          "p@10": "P_10", "hit@10": "success_10"}


def retagged(source: Path, target: Path, tag: str) -> Path:
    target.write_text("".join(" ".join([*line.split()[:5], tag]) + "\n" for line in source.read_text().splitlines()))
    return target


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("run_file")
    common = ["--no-generation", "--quiet", "--set", f"cache_dir={root / 'cache'}", "--set", f"output_dir={root / 'runs'}"]
    assert main(["run", "--config", str(SMOKE_CONFIG), *common, "--methods", "dense,bm25,rrf",
                 "--output-dir", str(root / "base")]) == 0
    retagged(root / "base" / "runs" / "bm25.trec", root / "prod.trec", "prod")
    retagged(root / "base" / "runs" / "bm25.url.trec", root / "pages.trec", "pages")
    config = yaml.safe_load(SMOKE_CONFIG.read_text())
    config["dataset"] = {key: str((SMOKE_CONFIG.resolve().parent / value).resolve()) if key != "format" else value
                         for key, value in config["dataset"].items()}
    config["retrievers"] += [{"name": "prod", "type": "run_file", "params": {"path": "prod.trec"}},  # beside the config
                             {"name": "prod_rrf", "type": "rrf", "params": {"retrievers": ["prod", "dense"], "k": 60}}]
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", "--config", str(root / "config.yaml"), *common, "--methods", "dense,bm25,rrf,prod,prod_rrf",
                 "--run", f"pages={root / 'pages.trec'}", "--output-dir", str(root / "with")]) == 0
    return root


def per_method(run: Path) -> dict[str, pd.DataFrame]:
    table = pd.read_csv(run / "per_query.csv")
    return {method: rows.set_index(["question_set", "qid"]).sort_index() for method, rows in table.groupby("method")}


def test_every_run_writes_its_questions(runs: Path) -> None:
    lines = (runs / "base" / "questions.tsv").read_text(encoding="utf-8").splitlines()
    ids = [line.split("\t")[0] for line in lines]
    assert len(lines) == 30 and all(len(line.split("\t")) == 2 for line in lines)
    assert set(read_run(runs / "base" / "runs" / "dense.trec")) == set(ids)
    questions = [json.loads(line) for line in (SMOKE_CONFIG.resolve().parent / "../data/smoke/questions.jsonl")
                 .resolve().read_text().splitlines()]
    assert {line.split("\t")[1] for line in lines} == {" ".join(q["question"].split()) for q in questions}


def test_bm25_given_back_as_a_run_file_scores_as_bm25(runs: Path) -> None:
    methods = per_method(runs / "with")
    metrics = [c for c in methods["bm25"].columns if "@" in c and not c.startswith("answer")]
    assert len(metrics) == 14
    pd.testing.assert_frame_equal(methods["prod"][metrics], methods["bm25"][metrics])
    assert methods["prod"]["retrieved_chunks"].tolist() == methods["bm25"]["retrieved_chunks"].tolist()
    pd.testing.assert_frame_equal(methods["prod_rrf"][metrics], methods["rrf"][metrics])  # rrf over it: one config line
    for method in ("prod", "prod_rrf", "pages"):  # made elsewhere: no measured cost, and none for a fusion over it
        assert methods[method]["retrieval_ms"].isna().all() and methods[method]["retrieval_ms_noise"].isna().all()
    assert methods["dense"]["retrieval_ms"].notna().all()


def test_a_run_files_metrics_are_pytrec_evals_on_that_file(runs: Path) -> None:
    methods, written = per_method(runs / "with"), runs / "with" / "runs"
    url_qrels, chunk_qrels = read_qrels(written / "qrels.url.txt"), read_qrels(written / "qrels.chunk.txt")
    cases = [("prod", "chunk:", chunk_qrels, read_run(runs / "prod.trec")),  # the user's file as given
             ("prod", "", url_qrels, read_run(written / "prod.url@10.trec")),  # pages of its first 10 chunks
             ("pages", "", url_qrels, read_run(runs / "pages.trec")),  # a page-level file as given
             ("pages", "chunk:", chunk_qrels, read_run(written / "pages.trec"))]  # each page's first passage
    for method, prefix, qrels, run in cases:
        measures = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC.values())).evaluate(run)
        ours = methods[method]
        for trec_qid, values in measures.items():
            row = ours.loc[tuple(trec_qid.split("/", 1))]
            for name, trec_name in PYTREC.items():
                assert row[prefix + name] == pytest.approx(values[trec_name], abs=1e-12), (method, trec_qid, name)
        assert len(measures) >= 25


def test_the_run_files_are_in_every_table(runs: Path) -> None:
    run = runs / "with"
    comparison = json.loads((run / "comparison.json").read_text())
    assert {"prod", "pages", "prod_rrf"} <= {row["method"] for row in comparison["rows"]}
    assert '"prod"' in json.dumps(comparison["recommendation"])  # its cost: null (none measured)
    assert any("prod" in (pair["method_a"], pair["method_b"]) for pair in comparison["pairwise"])
    assert {"prod", "pages"} <= set(pd.read_csv(run / "comparison.csv")["method"])
    html = (run / "report.html").read_text()
    assert "prod_rrf" in html and "pages" in html
    assert (run / "runs" / "pages.trec").is_file()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert not manifest["retrievers_resolved"]["pages"]["path"].startswith("/")  # no absolute path of this machine


@pytest.mark.parametrize(("lines", "said"), [
    (["questions/nope Q0 x 1 1.0 t"], "a run for another question file"),
    (["{q} Q0 {c} 1 1.0 t", "{q} Q0 {d} 1 0.5 t"], "rank 1 of question"),
    (["{q} Q0 {c} 1 1.0 t", "{q} Q0 not-a-chunk 2 0.5 t"], "1 of its 2 document ids are no chunk or page"),
])
def test_a_bad_run_file_is_one_line_and_exit_2(runs: Path, tmp_path: Path, capsys, lines: list[str], said: str) -> None:
    first = (runs / "prod.trec").read_text().splitlines()[:2]
    q, c, d = first[0].split()[0], first[0].split()[2], first[1].split()[2]
    bad = tmp_path / "bad.trec"
    bad.write_text("\n".join(line.format(q=q, c=c, d=d) for line in lines) + "\n")
    capsys.readouterr()
    code = main(["run", "--config", str(SMOKE_CONFIG), "--no-generation", "--quiet", "--methods", "bm25",
                 "--set", f"cache_dir={runs / 'cache'}", "--set", f"output_dir={tmp_path / 'runs'}", "--run", f"bad={bad}"])
    err = capsys.readouterr().err
    assert code == 2
    line = next(line for line in err.splitlines() if said in line)
    assert f"{bad}:" in line and "Traceback" not in err


def test_a_run_files_passages_are_pooled(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in (("lava", "Volcanoes let hot lava and ash escape from the crust of a planet."),
                       ("birds", "Penguins are flightless birds of the Southern Hemisphere."),
                       ("ice", "A glacier is a body of dense ice that moves under its own weight.")):
        (folder / f"{name}.md").write_text(f"# {name.title()}\n\n{text}\n")
    questions = tmp_path / "q.txt"
    questions.write_text("Which birds cannot fly?\nWhat escapes from a volcano?\n")
    common = ["run", "--docs", str(folder), "--questions", str(questions), "--methods", "bm25", "--no-generation",
              "--quiet", "--set", f"cache_dir={tmp_path / 'cache'}", "--set", f"output_dir={tmp_path / 'runs'}"]
    assert main([*common, "--output-dir", str(tmp_path / "base")]) == 0
    topics = [line.split("\t") for line in (tmp_path / "base" / "questions.tsv").read_text().splitlines()]
    page_run = tmp_path / "pages.trec"  # a system answering by page: the reverse of bm25's order of pages
    page_run.write_text(f"{topics[0][0]} Q0 ice.md 1 2.0 mine\n{topics[0][0]} Q0 birds.md 2 1.0 mine\n")
    assert main([*common, "--output-dir", str(tmp_path / "with"), "--run", f"mine={page_run}"]) == 0
    pool = json.loads((tmp_path / "with" / "pool.json").read_text())
    assert "mine" in json.dumps(pool)
    pooled = json.dumps(pool)
    assert "ice.md" in pooled and "Glacier" in pooled or "glacier" in pooled
