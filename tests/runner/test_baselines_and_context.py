"""Answer-only baselines, answer_in_context, chunks_used, dedup and the preflight through the real
pipeline: the tiny BM25 data set with the stand-in server (which answers "stand-in answer" + the
sha256 of the user message it received, so the exact prompt can be checked), and the smoke data with
the extractive generator."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from pathlib import Path

import pandas as pd
import pytest

from evaluation.answers import containment_form
from rag.baselines import BASELINES
from rag.cli import main
from rag.generation.config import DEFAULT_CLOSED_BOOK_USER_PROMPT
from rag.testing import StandInServer, StandInSettings
from rag.types import Chunk, Question

from .conftest import SMOKE_CONFIG, TINY_DOCUMENTS, TINY_QUESTIONS, tiny_config, write_tiny_dataset

RETRIEVAL_COLUMNS = ["mrr", "recall@3", "hit@3"]


def chunk(url: str, position: int) -> Chunk:
    return Chunk(f"{url}#{position}", url, url, f"text {url} {position}", position, 3)


def test_oracle_order_is_position_first_then_gold_order():
    chunks_of_url = {"A": [chunk("A", 0), chunk("A", 1)], "B": [chunk("B", 0), chunk("B", 1), chunk("B", 2)],
                     "C": [chunk("C", 0)]}
    question = Question("q", "?", [["B"], ["A", "C"]], ["x"], "t")
    assert BASELINES.get("oracle")().context(question, chunks_of_url) == ["B#0", "A#0", "C#0", "B#1", "A#1", "B#2"]
    assert BASELINES.get("closed_book")().context(question, chunks_of_url) == []


def stand_in_run(tmp_path: Path, server: StandInServer, model: str = "stand-in", **overrides) -> tuple[int, Path]:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    retrievers = [{"name": "bm25", "type": "bm25", "params": {"k1": 1.2}},
                  {"name": "bm25_twin", "type": "bm25", "params": {"k1": 1.2}}]  # the same top-k: shared prompts
    generator = {"type": "openai", "model": model, "base_url": server.base_url, "api_key_env": "RAG_TEST_NO_SUCH_VAR",
                 "concurrency": 1, **overrides.pop("generator", {})}
    config = tiny_config(tmp_path, corpus, questions, retrievers=retrievers, baselines=["closed_book", "oracle"],
                         generation={"generator": generator}, **overrides)
    run = tmp_path / "run"
    return main(["--config", str(config), "--quiet", "--output-dir", str(run)]), run


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: Chunks sharing a (non-stop-word) term with each tiny question, i.e. BM25's whole list (top_k 3):
#: q1 "hot" is in Espresso too, q3 "planet" in Volcano too; q2 and q4 match their gold page only.
BM25_MATCHES = {"q1": 2, "q2": 1, "q3": 2, "q4": 1}


def test_baselines_dedup_and_answer_in_context_with_the_stand_in(tmp_path):
    with StandInServer() as server:
        code, run = stand_in_run(tmp_path, server)
        sent = server.stats.completions_requests
    assert code == 0
    per_query = pd.read_csv(run / "per_query.csv", keep_default_na=False, na_values=[""])
    assert per_query["method"].unique().tolist() == ["bm25", "bm25_twin", "closed_book", "oracle"]
    # one request per distinct prompt: the twins share theirs -> 4 questions x 3 distinct contexts, less
    # the two where BM25's only match is the gold chunk, the oracle's context (q2, q4: see BM25_MATCHES)
    assert sent == 10
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["generation_counts"] == {"needed": 16, "distinct": 10, "cached": 0, "sent": 10, "attempts": 10,
                                             "cut": 0}
    twins = per_query[per_query["method"].isin(["bm25", "bm25_twin"])].pivot(index="qid", columns="method", values="answer")
    assert (twins["bm25"] == twins["bm25_twin"]).all()

    rows = {method: frame.set_index("qid") for method, frame in per_query.groupby("method")}
    texts = {q[0]: q[1] for q in TINY_QUESTIONS}
    for qid, text in texts.items():
        # the closed-book prompt is exactly the closed-book template: no context at all
        expected = DEFAULT_CLOSED_BOOK_USER_PROMPT.format(question=text)
        assert rows["closed_book"].at[qid, "answer"] == f"stand-in answer {sha(expected)}"
        assert rows["closed_book"].at[qid, "chunks_used"] == 0
        assert rows["oracle"].at[qid, "chunks_used"] == 1 and rows["bm25"].at[qid, "chunks_used"] == BM25_MATCHES[qid]
    for method in ("closed_book", "oracle"):
        assert rows[method][RETRIEVAL_COLUMNS].isna().all().all()
        assert rows[method]["retrieval_ms"].isna().all()
        assert rows[method]["match"].notna().all()
    assert rows["closed_book"]["answer_in_context@3"].isna().all()
    # every tiny reference ("a volcano", "penguins", ...) is in its one-chunk gold page
    documents = {title: text for title, text in TINY_DOCUMENTS}
    for qid, _, gold, answers in TINY_QUESTIONS:
        assert containment_form(answers[0]) in containment_form(documents[gold[0]])
        assert rows["oracle"].at[qid, "answer_in_context@3"] == 1.0

    table = pd.read_csv(run / "comparison.csv")
    for column in ["answer_in_context@3", "answer_in_context@3_undefined", "match", "match_ci_low", "chunks_used"]:
        assert column in table
    chunks_used = table.set_index("method")["chunks_used"]
    assert chunks_used.to_dict() == {"bm25": 1.5, "bm25_twin": 1.5, "closed_book": 0.0, "oracle": 1.0}
    assert table.set_index("method").at["closed_book", "answer_in_context@3_undefined"] == 4
    markdown = (run / "comparison.md").read_text()
    assert "| closed_book (c)" in markdown and "| oracle (d)" in markdown and "answer-only baselines" in markdown
    assert "answer-only baselines closed_book, oracle" in (run / "report.html").read_text()


def test_a_budget_that_cuts_chunks_says_so(tmp_path, caplog, capsys):
    caplog.set_level(logging.WARNING)
    with StandInServer() as server:
        code, run = stand_in_run(tmp_path, server, generator={"context_token_budget": 12})
    assert code == 0
    per_query = pd.read_csv(run / "per_query.csv")
    bm25 = per_query[per_query["method"] == "bm25"]
    assert (bm25["chunks_used"] < 3).all()
    assert "the context budget (12 tokens) cut the context of" in caplog.text
    assert "the context budget (12 tokens) cut the context of" in (run / "report.html").read_text()
    assert json.loads((run / "manifest.json").read_text())["generation_counts"]["cut"] > 0


def test_the_full_top_k_enters_the_prompt_by_default(tmp_path):
    with StandInServer() as server:
        code, run = stand_in_run(tmp_path, server)
    manifest = json.loads((run / "manifest.json").read_text())
    assert code == 0 and manifest["generator_resolved"]["context_token_budget"] == 3 * (64 + 3)  # top_k x (max_tokens + 3)
    assert manifest["generation_counts"]["cut"] == 0


def test_the_cli_exits_2_with_one_line_and_sends_nothing_when_the_model_is_not_served(tmp_path, capsys):
    with StandInServer(StandInSettings(model="another-model")) as server:
        code, run = stand_in_run(tmp_path, server)
        sent = server.stats.completions_requests
    err = capsys.readouterr().err.strip()
    assert code == 2 and sent == 0 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]  # progress bars aside
    assert errors == [err.splitlines()[-1]] and errors[0].startswith("error: generation.generator.model: 'stand-in' is not served")


@pytest.mark.slow
def test_oracle_on_the_smoke_data_has_the_answer_wherever_its_gold_page_does(tmp_path):
    """configs/smoke.yaml (extractive generator), BM25 + both baselines. Oracle answer_in_context@10
    is 1 exactly where a reference occurs in the full text of a gold document (an independent check:
    documents, not chunks), and the gold pages' chunks fit in top_k."""
    run = tmp_path / "run"
    argv = ["--config", str(SMOKE_CONFIG), "--output-dir", str(run), "--quiet", "--methods", "bm25",
            "--set", "baselines=[closed_book, oracle]", "--set", f"cache_dir={tmp_path / 'cache'}",
            "--set", f"output_dir={tmp_path / 'runs'}"]
    assert main(argv) == 0
    documents = {json.loads(line)["url"]: json.loads(line)["text"]
                 for line in (SMOKE_CONFIG.parent / "../data/smoke/corpus.jsonl").resolve().read_text().splitlines()}
    questions = [json.loads(line) for line in (SMOKE_CONFIG.parent / "../data/smoke/questions.jsonl").resolve().read_text().splitlines()]
    per_query = pd.read_csv(run / "per_query.csv", keep_default_na=False, na_values=[""])
    oracle = per_query[per_query["method"] == "oracle"].set_index("qid")
    occurring = 0
    for q in questions:
        gold_forms = [containment_form(documents[url]) for group in q["gold_urls"] for url in group]
        found = any(f" {containment_form(a)} " in f" {form} " for a in q["answers"] for form in gold_forms)
        occurring += found
        assert oracle.at[q["id"], "answer_in_context@10"] == float(found), q["id"]
        assert len(json.loads(oracle.at[q["id"], "retrieved_chunks"])) <= 10
    assert occurring >= 15  # not vacuous: 19 of 30 (multi-page references concatenate one sentence per page)
    closed = per_query[per_query["method"] == "closed_book"]
    assert (closed["answer"].fillna("") == "").all() and closed["answer_in_context@10"].isna().all()  # extractive: no context
    table = pd.read_csv(run / "comparison.csv").set_index("method")
    assert table.at["oracle", "answer_in_context@10"] >= table.at["bm25", "answer_in_context@10"]
    assert math.isnan(table.at["oracle", "mrr@10"]) and table.at["oracle", "f1"] >= table.at["closed_book", "f1"]


@pytest.mark.parametrize("override, key, expected", [
    ("baselines=[closed_book, psychic]", "baselines.1", "unknown baseline 'psychic'; expected one of: closed_book, oracle"),
    ("baselines=[bm25]", "baselines.0", "unknown baseline 'bm25'"),
    ("evaluation.answer_in_context=[10, 101]", "evaluation.answer_in_context", "cut-off 101 exceeds depth 100"),
    ("evaluation.answer_in_context=[0]", "evaluation.answer_in_context.0", "greater than 0"),
    ("generation.generator.closed_book_user_prompt='{context} {question}'", "generation.generator.closed_book_user_prompt",
     "must contain {question} and no other placeholder"),
])
def test_bad_baseline_and_answer_in_context_settings_name_the_key(override, key, expected):
    from rag.config import load_config
    from rag.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        load_config(SMOKE_CONFIG, ["generation.generator={type: local}", override])
    assert caught.value.key == key and expected in str(caught.value)
