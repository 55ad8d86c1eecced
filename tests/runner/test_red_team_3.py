"""Issue 23's red-team, repeatable: each reproduction of the round-3 report, through the CLI in-process
on the tiny BM25-only data set (no model to load) and the stand-in OpenAI server.

Every case: one line, the documented exit code (2 for configuration and data), no traceback, no
planted secret in any byte written or printed, nothing lost.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from rag.cli import EXIT_INTERRUPTED, EXIT_USER_ERROR, main
from rag.secrets import Redactor
from rag.testing.stand_in import StandInServer, StandInSettings

from .conftest import REPO, question_line, tiny_config, write_tiny_dataset
from .test_red_team import one_line_error, openai_generation

pytestmark = pytest.mark.slow
TINY_CHUNKS = 6  # one chunk per document of the tiny data set


def files_under(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


def leaked(secret: str, texts: list[str], root: Path) -> list[str]:
    """Where ``secret`` or a recognisable part of it (its longest line, as is or escaped) appears."""
    longest = max(re.split(r"[\x00-\x1f\x7f]+", secret), key=len)
    needles = {secret, longest, repr(secret)[1:-1], ascii(secret)[1:-1], repr(secret.encode())[2:-1]}
    found = [f"printed: {needle!r}" for needle in needles for text in texts if needle in text]
    for path in files_under(root):
        data = path.read_bytes()
        found += [f"{path}: {needle!r}" for needle in needles if needle.encode("utf-8", "surrogatepass") in data]
    return found


# --------------------------------------------------------------------------------------------------
# 1, 3, 10: keys with a line break, a header-injection suffix or a non-ASCII character


PLANTED = {
    "newline": "sk-live-7f3e9a1c5b2d8046\n",
    "carriage_return": "plain-secret-91c4e7a2d05b\r",  # not sk-shaped: known as the configured variable's value
    "header_injection": "sk-live-0b6d2f8e4a9c1357\r\nX-Evil: 1",
    "non_ascii": "sk-live-4c8e2a6f0d1b\u00e4\u20ac9753",
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_an_unusable_generator_key_is_refused_in_one_line_and_never_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    key = PLANTED[kind]
    monkeypatch.setenv("RAG_TEST_KEY", key)
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    with StandInServer(StandInSettings(echo_auth=True)) as server:
        config = tiny_config(tmp_path, corpus, questions, generation=openai_generation(server))
        assert main(["--config", str(config), "--quiet"]) == EXIT_USER_ERROR
        assert server.stats.completions_requests == 0
    captured = capsys.readouterr()
    one_line_error(captured.err, "generation.generator.api_key_env", "the value of RAG_TEST_KEY holds a",
                   "control character" if kind != "non_ascii" else "non-ASCII character")
    assert not (tmp_path / "runs").exists()
    assert not leaked(key, [captured.out, captured.err], tmp_path)


def test_an_embedder_key_with_a_newline_is_named_not_a_connection_error(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = PLANTED["newline"]
    monkeypatch.setenv("RAG_EMBED_KEY", key)
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    with StandInServer(StandInSettings()) as server:
        embedder = {"type": "openai", "base_url": server.base_url, "api_key_env": "RAG_EMBED_KEY"}
        config = tiny_config(tmp_path, corpus, questions, retrievers=[
            {"name": "bm25", "type": "bm25", "params": {}},
            {"name": "remote", "type": "dense", "params": {"model": "stand-in", "embedder": embedder}}])
        assert main(["--config", str(config), "--quiet"]) == EXIT_USER_ERROR
        assert server.stats.embedding_requests == 0
    captured = capsys.readouterr()
    one_line_error(captured.err, "retrievers.remote.params.embedder.api_key_env", "control character")
    assert "Connection error" not in captured.err and not (tmp_path / "runs").exists()
    assert not leaked(key, [captured.out, captured.err], tmp_path)


def test_the_redactor_knows_the_escaped_stripped_and_header_forms_of_a_secret() -> None:
    for key in PLANTED.values():
        redactor = Redactor([key])
        written = [key, key.strip(), repr(key), ascii(key), repr(f"Bearer {key}".encode()), json.dumps(key),
                   f"Illegal header value b'Bearer {key.strip()}'", key.split("\r")[0].split("\n")[0]]
        for text in written:
            assert not leaked(key, [redactor.text(text)], Path("/nonexistent")), (key, text, redactor.text(text))


# --------------------------------------------------------------------------------------------------
# 2, 12: a fusion that fuses itself, fusion settings that rank nothing, NaN


@pytest.mark.parametrize(("retrievers", "expected"), [
    ([{"name": "bm25", "type": "bm25", "params": {}},
      {"name": "rrf", "type": "rrf", "params": {"retrievers": ["bm25", "rrf"]}}],
     "retrievers.rrf.params.retrievers: the fusion inputs form a cycle (rrf -> rrf)"),
    ([{"name": "bm25", "type": "bm25", "params": {}},
      {"name": "a", "type": "rrf", "params": {"retrievers": ["bm25", "b"]}},
      {"name": "b", "type": "convex", "params": {"retrievers": ["bm25", "a"]}}],
     "retrievers.a.params.retrievers: the fusion inputs form a cycle (a -> b -> a)"),
    ([{"name": "bm25", "type": "bm25", "params": {}}, {"name": "bm25l", "type": "bm25", "params": {"k1": 2.0}},
      {"name": "rrf", "type": "rrf", "params": {"retrievers": ["bm25", "bm25l"], "weights": [-1, 0]}}],
     "retrievers.rrf.params: weights [-1.0, 0.0]: expected weights >= 0"),
    ([{"name": "bm25", "type": "bm25", "params": {}}, {"name": "bm25l", "type": "bm25", "params": {"k1": 2.0}},
      {"name": "rrf", "type": "rrf", "params": {"retrievers": ["bm25", "bm25l"], "k": 0}}],
     "retrievers.rrf.params.k: Input should be greater than or equal to 1"),
    ([{"name": "bm25", "type": "bm25", "params": {}}, {"name": "bm25l", "type": "bm25", "params": {"k1": 2.0}},
      {"name": "rrf", "type": "rrf", "params": {"retrievers": ["bm25", "bm25l"], "k": float("nan")}}],
     "retrievers.rrf.params.k: Input should be a finite number"),
])
def test_bad_fusion_graphs_and_settings_are_one_line_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture, retrievers: list, expected: str
) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    config = tiny_config(tmp_path, corpus, questions, retrievers=retrievers)
    assert main(["--config", str(config), "--quiet"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, f"{config}: {expected}")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()


# --------------------------------------------------------------------------------------------------
# 4: depth beyond the number of chunks


@pytest.mark.parametrize("depth", ["99999999999999999999", "1000000"])
def test_a_depth_beyond_the_chunks_keeps_every_chunk_and_sizes_nothing_by_it(
    tiny: Path, capsys: pytest.CaptureFixture, depth: str
) -> None:
    run = tiny.parent / "run"
    assert main(["--config", str(tiny), "--quiet", "--output-dir", str(run), "--set", f"depth={depth}"]) == 0
    err = capsys.readouterr().err
    assert f"depth {depth} exceeds the {TINY_CHUNKS} chunks" in err and "Traceback" not in err
    curves = pd.read_csv(run / "curves.csv")
    assert curves["k"].max() == TINY_CHUNKS and len(curves) == TINY_CHUNKS
    assert json.loads((run / "manifest.json").read_text())["depth"] == TINY_CHUNKS


@pytest.mark.parametrize(("argv", "expected"), [
    (["--set", "seed=-1"], "seed: Input should be greater than or equal to 0"),
    (["--set", "evaluation.n_resamples=99999999999999999999"], "evaluation.n_resamples: Input should be less than or equal to 1000000"),
    (["--set", "retrievers.0.params={k1: .inf}"], "retrievers.bm25.params.k1: Input should be a finite number"),
])
def test_huge_negative_and_infinite_numbers_are_refused(tiny: Path, capsys: pytest.CaptureFixture, argv, expected) -> None:
    assert main(["--config", str(tiny), "--quiet", *argv]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, expected)
    assert main(["compare", str(tiny.parent), str(tiny.parent), "--n-resamples", "0"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "--n-resamples: 0: expected 1 to 1,000,000")
    assert not (tiny.parent / "runs").exists()


# --------------------------------------------------------------------------------------------------
# 5: a retrieval cache that parses but names an unknown chunk id


def test_a_retrieval_cache_naming_an_unknown_chunk_is_rebuilt(tiny: Path, capsys: pytest.CaptureFixture) -> None:
    runs, cache = tiny.parent / "runs", tiny.parent / "cache"
    assert main(["--config", str(tiny), "--quiet", "--output-dir", str(runs / "first")]) == 0
    (path,) = (cache / "retrieval").iterdir()
    entries = json.loads(path.read_text())
    for entry in entries.values():
        entry["chunk_ids"][0] = "no-such-chunk#0"
    path.write_text(json.dumps(entries))
    capsys.readouterr()
    assert main(["--config", str(tiny), "--quiet", "--output-dir", str(runs / "second")]) == 0
    err = capsys.readouterr().err
    assert "entries are damaged" in err and "Traceback" not in err
    first, second = (pd.read_csv(runs / name / "per_query.csv") for name in ("first", "second"))
    pd.testing.assert_series_equal(first["retrieved_chunks"], second["retrieved_chunks"])
    assert "no-such-chunk" not in path.read_text()


# --------------------------------------------------------------------------------------------------
# 6, 7: the grid's size, and --resume suggested only when there is a run to resume


def test_a_grid_beyond_max_points_is_refused_before_any_work(tiny: Path, capsys: pytest.CaptureFixture) -> None:
    values = ",".join(str(0.01 * i) for i in range(1, 101))
    argv = ["sweep", "--config", str(tiny), "--quiet", "--grid", f"retrievers.bm25.params.b={values}",
            "--grid", "retrievers.bm25.params.k1=" + ",".join(str(0.5 + i) for i in range(20))]
    assert main(argv) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "--grid: the grid has 2,000 points (100 x 20), more than --max-points 1,000")
    assert main([*argv[:4], "--grid", "top_k=1,2,3", "--max-points", "2"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "the grid has 3 points (3), more than --max-points 2")
    assert not (tiny.parent / "runs").exists()


def test_an_interrupt_before_the_run_directory_suggests_no_resume(
    tiny: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rag.runner.pipeline as pipeline

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "load_dataset", interrupted)
    assert main(["--config", str(tiny), "--quiet"]) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "--resume" not in err and "re-run the same command" in err and "Traceback" not in err


def test_an_interrupted_sweep_says_where_it_is_and_resumes(
    tiny: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rag.sweep.run as sweep_run

    out = tiny.parent / "sweep"
    argv = ["sweep", "--config", str(tiny), "--quiet", "--output-dir", str(out), "--grid", "retrievers.bm25.params.b=0.5,0.75"]
    real = sweep_run.evaluate_points
    with monkeypatch.context() as patch:
        patch.setattr(sweep_run, "evaluate_points", lambda *args: (_ for _ in ()).throw(KeyboardInterrupt()))
        assert main(argv) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert f"saved in {out}; re-run with --resume --output-dir {out}" in err
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    assert sweep_run.evaluate_points is real
    assert main([*argv, "--resume"]) == 0
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert main([*argv[:-1], "retrievers.bm25.params.b=0.5,0.9", "--resume"]) == EXIT_USER_ERROR  # another grid
    one_line_error(capsys.readouterr().err, "--resume: the run in", "different configuration")


# --------------------------------------------------------------------------------------------------
# 8: YAML errors in --set, and the merge key


def test_a_bad_yaml_value_in_set_is_one_line_with_line_and_column(tiny: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--config", str(tiny), "--quiet", "--set", "top_k=[3"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "--set top_k:1:3: not valid YAML:", "expected ',' or ']'")
    assert main(["--config", str(tiny), "--quiet", "--set", "evaluation={a: 1, a: 2}"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "--set evaluation:1:8: a: duplicate key")


def test_the_yaml_merge_key_works_and_a_key_beside_it_overrides(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    path = tmp_path / "merge.yaml"
    path.write_text(f"""\
bm25_defaults: &bm25 {{k1: 1.2, b: 0.75}}
name: merged
dataset: {{format: jsonl, corpus: {corpus}, questions: {questions}}}
retrievers:
  - name: bm25
    type: bm25
    params: {{<<: *bm25, b: 0.5}}
top_k: 3
""")
    from rag.config import read_yaml

    raw = read_yaml(path)
    assert raw["retrievers"][0]["params"] == {"k1": 1.2, "b": 0.5}
    path.write_text(path.read_text().replace("top_k: 3\n", "top_k: 3\ntop_k: 4\n"))
    assert main(["--config", str(path), "--quiet"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, f"{path}:9:1: top_k: duplicate key")


# --------------------------------------------------------------------------------------------------
# 9: compare warns about a failed run and names the metrics it leaves out


def test_compare_warns_about_a_failed_run_and_dropped_metrics(tiny: Path, capsys: pytest.CaptureFixture) -> None:
    runs = tiny.parent / "runs"
    assert main(["--config", str(tiny), "--quiet", "--output-dir", str(runs / "a")]) == 0
    assert main(["--config", str(tiny), "--quiet", "--output-dir", str(runs / "b"),
                 "--set", "evaluation.metrics=[mrr, recall@3, hit@3, ndcg@3]"]) == 0
    manifest = runs / "b" / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "status": "failed"}))
    capsys.readouterr()
    assert main(["compare", str(runs / "a"), str(runs / "b"), "--output-dir", str(runs / "cmp"), "--n-resamples", "200"]) == 0
    err = " ".join(capsys.readouterr().err.split())  # warnings are wrapped to 100 columns: read them as one text
    assert f"{runs / 'b'}: the run did not complete (manifest status 'failed')" in err
    assert "metric ndcg@3 is left out: only b of the runs have it" in err
    assert "ndcg@3" not in (runs / "cmp" / "comparison.csv").read_text()


# --------------------------------------------------------------------------------------------------
# 10: messages


def test_messages_name_what_is_wrong(tiny: Path, capsys: pytest.CaptureFixture) -> None:
    empty_file = tiny.parent / "empty"
    empty_file.write_text("")
    assert main(["--config", str(tiny), "--quiet", "--output-dir", str(empty_file)]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, f"--output-dir: {empty_file} is a file; expected a new or empty directory")
    assert main(["--config", str(tiny), "--quiet", "--set", "dataset.corpus=/dev/null"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "dataset.corpus: /dev/null is not a regular file")
    two_methods = "retrievers=[{name: bm25, type: bm25, params: {}}, {name: bm25b, type: bm25, params: {k1: 2.0}}]"
    assert main(["--config", str(tiny), "--quiet", "--verbose", "--limit", "1", "--set", two_methods]) == 0
    out = capsys.readouterr().out
    assert "questions (1 question):" in out and "(1 questions)" not in out


# --------------------------------------------------------------------------------------------------
# 11: CSV injection and a statistics cache that holds no pickle


HOSTILE = [("=cmd|' /C calc'!A0", "=HYPERLINK(\"http://evil.example\", \"click\")?"), ("+1", "+1+1 which planet?"),
           ("-2", "-2+3 which planet is sixth?"), ("@sum", "@SUM(A1:A9) and Saturn?"), ("\ttab", "\t=1+1 Saturn?")]


def test_question_ids_and_texts_are_written_as_text_for_spreadsheets(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus, questions = write_tiny_dataset(
        tmp_path / "data", [], [question_line(qid, text, ["Saturn"], ["Saturn"]) for qid, text in HOSTILE])
    config = tiny_config(tmp_path, corpus, questions)
    run = tmp_path / "run"
    assert main(["--config", str(config), "--quiet", "--output-dir", str(run)]) == 0
    with open(run / "per_query.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    formula = re.compile(r"^[=+\-@\t\r]")
    assert not [cell for row in rows for cell in row if formula.match(cell)]
    from rag.results.csv_files import read_csv

    per_query = read_csv(run / "per_query.csv", keep_default_na=False, dtype={"qid": str})
    assert {qid for qid, _ in HOSTILE} <= set(per_query["qid"]) and {t for _, t in HOSTILE} <= set(per_query["question"])


def test_the_csv_rule_escapes_text_and_round_trips_but_leaves_numbers() -> None:
    from rag.results.csv_files import csv_text, read_csv

    frame = pd.DataFrame({"text": ["=1+1", "'=x", "plain", "-note", "''@y", None], "number": [-0.5, 1.0, -2.0, 0.0, 3.0, -1.0]})
    text = csv_text(frame)
    assert "'=1+1" in text and "''=x" in text and "'-note" in text and "'''@y" in text and "\n-0.5" not in text
    assert ",-0.5\n" in text and ",-2.0\n" in text
    path = Path(__file__).parent / "_csv_roundtrip.csv"
    try:
        path.write_text(text)
        pd.testing.assert_frame_equal(read_csv(path), frame.astype({"text": read_csv(path)["text"].dtype}))
    finally:
        path.unlink(missing_ok=True)


def test_no_cache_is_read_with_pickle() -> None:
    pattern = re.compile(r"pickle|allow_pickle\s*=\s*True|torch\.load|joblib\.load|shelve|marshal\.load")
    offenders = [f"{path.relative_to(REPO)}:{number}" for folder in ("rag", "evaluation")
                 for path in (REPO / folder).rglob("*.py") if path.name != "statistics_cache.py"
                 for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    offenders += [f"rag/runner/statistics_cache.py:{number}" for number, line in
                  enumerate((REPO / "rag/runner/statistics_cache.py").read_text().splitlines(), 1)
                  if pattern.search(line) and "never a pickle" not in line]
    assert not offenders


def test_the_statistics_cache_is_json_reads_back_exactly_and_survives_damage(
    tiny: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from rag.results.comparison import StatisticsSettings, compare
    from rag.results.csv_files import read_csv
    from rag.runner.statistics_cache import cached_comparison

    two_methods = "retrievers=[{name: bm25, type: bm25, params: {}}, {name: bm25b, type: bm25, params: {k1: 2.0, b: 0.3}}]"
    assert main(["--config", str(tiny), "--quiet", "--output-dir", str(tiny.parent / "run"), "--set", two_methods]) == 0
    per_query = read_csv(tiny.parent / "run" / "per_query.csv", keep_default_na=False, na_values=[""])
    metrics, settings, cache = ["mrr", "recall@3", "f1"], StatisticsSettings(n_resamples=300, seed=3), tiny.parent / "stats"
    expected = compare(per_query, metrics, settings)

    def same(comparison) -> None:
        for name in ("table", "pairwise", "differences", "verdicts"):
            pd.testing.assert_frame_equal(getattr(comparison, name), getattr(expected, name), check_exact=True)
        assert (comparison.metrics, comparison.letters, comparison.settings) == (expected.metrics, expected.letters, settings)

    same(cached_comparison(per_query, metrics, settings, cache))  # computed and written
    same(cached_comparison(per_query, metrics, settings, cache))  # read back
    (path,) = (cache / "statistics").iterdir()
    assert path.suffix == ".json" and set(json.loads(path.read_text())) >= {"table", "pairwise", "settings"}
    for damage in ('{"table": {"columns": ["x"], "dtypes": ["category"], "values": [[1]]}}', "\x80\x04garbage", "[]"):
        path.write_text(damage)
        caplog.clear()
        same(cached_comparison(per_query, metrics, settings, cache))
        assert "ignoring unreadable statistics cache" in caplog.text
        same(cached_comparison(per_query, metrics, settings, cache))  # rewritten whole
