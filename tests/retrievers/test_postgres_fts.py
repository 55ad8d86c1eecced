"""postgres_fts against a real PostgreSQL server that the fixture starts (initdb in a temporary
directory, pg_ctl on a free port of 127.0.0.1, as the postgres system user when the tests run as root)
and stops: its rankings equal those of the same SQL run by hand with psql on the same table, for every
query form and rank function; the table has a tsvector column and a GIN index; the password comes
from an environment variable and never reaches a written byte. Skipped only without PostgreSQL."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from rag.errors import BenchError, ConfigError
from rag.retrievers import build_retriever
from rag.retrievers.postgres_fts import search_sql
from rag.secrets import Redactor
from rag.testing.postgres import TemporaryCluster, postgres_binaries

PASSWORD_ENV = "RAG_BENCH_TEST_PG_PASSWORD"


@pytest.fixture(scope="module")
def cluster():
    if postgres_binaries() is None:
        pytest.skip("no PostgreSQL binaries (initdb, pg_ctl): apt-get install postgresql")
    with TemporaryCluster() as running:
        yield running


def test_postgres_password_variable_is_known_to_the_redactor() -> None:
    """A password_env's value is a secret of the run whatever the variable is called (issue 51)."""
    redactor = Redactor.for_config({"retrievers": [{"params": {"password_env": "DB_PASS"}}]},
                                   {"DB_PASS": "correct-horse-battery"})
    assert redactor.text("FATAL: correct-horse-battery refused") == "FATAL: [REDACTED] refused"


@pytest.fixture
def password(cluster, monkeypatch) -> str:
    monkeypatch.setenv(PASSWORD_ENV, cluster.password)
    return cluster.password


def by_hand(cluster, table: str, form: str, rank: str, question: str, k: int) -> list[tuple[str, float]]:
    """The statement as a user runs it in psql, its parameters given as psql variables."""
    statement = search_sql(table, form, rank)
    for name, value in (("config", ":'config'"), ("question", ":'question'"), ("normalization", ":normalization"),
                        ("k", ":k")):
        statement = statement.replace(f"%({name})s", value)
    rows = cluster.psql(statement + ";", {"config": "english", "question": question, "normalization": "0", "k": str(k)})
    return [(chunk_id, float(np.float32(score))) for chunk_id, score in rows]


@pytest.mark.parametrize(("form", "rank"), [("or", "ts_rank_cd"), ("plain", "ts_rank_cd"), ("websearch", "ts_rank_cd"),
                                            ("or", "ts_rank")])
def test_postgres_rankings_equal_the_same_sql_by_hand(cluster, password, smoke_data, form: str, rank: str) -> None:
    chunks, questions = smoke_data
    retriever = build_retriever("pg", "postgres_fts", {"uri": cluster.uri, "password_env": PASSWORD_ENV,
                                                       "query": form, "rank": rank})
    retriever.index(chunks, None)
    found = retriever.search(questions, len(chunks))
    matched = 0
    for question, ranking in zip(questions, found, strict=True):
        assert list(zip(ranking.chunk_ids, ranking.scores)) == by_hand(cluster, retriever.table, form, rank, question,
                                                                        len(chunks)), question
        matched += bool(ranking.chunk_ids)
    assert matched >= (25 if form == "or" else 1)
    assert [r.chunk_ids for r in retriever.search(questions, 3)] == [r.chunk_ids[:3] for r in found]


def test_postgres_table_has_a_tsvector_column_and_a_gin_index(cluster, password, smoke_data) -> None:
    chunks, _ = smoke_data
    retriever = build_retriever("pg", "postgres_fts", {"uri": cluster.uri, "password_env": PASSWORD_ENV,
                                                       "table": "mine"})
    retriever.index(chunks, None)
    retriever.index(chunks, None)  # exists: reused
    assert cluster.psql("SELECT count(*) FROM mine;") == [[str(len(chunks))]]
    assert cluster.psql("SELECT data_type FROM information_schema.columns WHERE table_name = 'mine' "
                        "AND column_name = 'tsv';") == [["tsvector"]]
    indexes = [row[0] for row in cluster.psql("SELECT indexdef FROM pg_indexes WHERE tablename = 'mine';")]
    assert any("USING gin (tsv)" in index for index in indexes), indexes


def test_postgres_password_only_from_the_environment(cluster, monkeypatch, smoke_data) -> None:
    chunks, _ = smoke_data
    with pytest.raises(ConfigError) as caught:
        build_retriever("pg", "postgres_fts", {"uri": cluster.uri.replace("bench@", f"bench:{cluster.password}@")})
    assert cluster.password not in str(caught.value) and "password_env" in str(caught.value)
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"{PASSWORD_ENV} is not set"):
        build_retriever("pg", "postgres_fts", {"uri": cluster.uri, "password_env": PASSWORD_ENV}).index(chunks, None)
    wrong = "wrong-" + cluster.password
    monkeypatch.setenv(PASSWORD_ENV, wrong)
    with pytest.raises(BenchError) as caught:
        build_retriever("pg", "postgres_fts", {"uri": cluster.uri, "password_env": PASSWORD_ENV}).index(chunks, None)
    assert "\n" not in str(caught.value) and wrong not in str(caught.value) and "retrievers.pg.params.uri" in str(caught.value)


def test_postgres_fts_beside_bm25_in_a_run(cluster, password, tmp_path: Path) -> None:
    """The smoke config with bm25 and postgres_fts: both rows in the table, each with its time per
    question, and the password in no file of the run."""
    from rag.cli import main

    from tests.runner.conftest import SMOKE_CONFIG

    config = yaml.safe_load(SMOKE_CONFIG.read_text())
    config["dataset"] = {key: str((SMOKE_CONFIG.resolve().parent / value).resolve()) if key != "format" else value
                         for key, value in config["dataset"].items()}
    config["retrievers"] = [config["retrievers"][1], {"name": "pg", "type": "postgres_fts", "params": {
        "uri": cluster.uri, "password_env": PASSWORD_ENV}}]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", "--config", str(tmp_path / "config.yaml"), "--no-generation", "--quiet", "--output-dir",
                 str(tmp_path / "run"), "--set", f"cache_dir={tmp_path / 'cache'}"]) == 0
    rows = {row["method"]: row for row in json.loads((tmp_path / "run" / "comparison.json").read_text())["rows"]}
    assert set(rows) == {"bm25", "pg"}
    assert all(row["retrieval_ms_per_query"] > 0 and 0 < row["ndcg@10"] <= 1 for row in rows.values())
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert cluster.password.encode() not in path.read_bytes(), path
    assert re.search(r"pg \(b\)", (tmp_path / "run" / "comparison.md").read_text())
