"""Issue 14's red-team, repeatable: every failure is one line with a documented exit code, nothing is
lost or sent twice, and no planted secret reaches any byte written or printed.

Most cases run the CLI in-process on the tiny BM25-only data set (no model to load); SIGTERM and two
concurrent runs use real subprocesses; the secrets and corrupted-cache cases run configs/smoke.yaml
end to end (MiniLM + Chroma + BM25 + RRF) against the stand-in OpenAI server.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rag.cli import EXIT_IO_ERROR, EXIT_TERMINATED, EXIT_USER_ERROR, main
from rag.testing.stand_in import StandInServer, StandInSettings

from .conftest import REPO, SMOKE_CONFIG, question_line, signal_when_held, tiny_config, write_tiny_dataset

pytestmark = pytest.mark.slow
RUN_BENCHMARK = str(REPO / "scripts" / "run_benchmark.py")


def one_line_error(err: str, *expected: str) -> None:
    """A single line on stderr (besides progress bars of runs without --quiet), naming everything in
    ``expected``, and no traceback."""
    lines = [line for line in err.split("\n") if line and not line.startswith("\r")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for text in expected:
        assert text in lines[0], (text, err)


def openai_generation(server: StandInServer, **overrides) -> dict:
    return {"generator": {"type": "openai", "base_url": server.base_url, "model": "stand-in",
                          "api_key_env": "RAG_TEST_KEY", "concurrency": 2, "max_retries": 1,
                          "backoff": {"initial_s": 0.01, "max_s": 0.02}, "timeout_s": 10, **overrides}}


def many_questions(directory: Path, n: int = 40) -> tuple[Path, Path]:
    return write_tiny_dataset(
        directory, [],
        [question_line(f"x{i}", f"Extra question number {i} about planets and coffee?", ["Saturn"], ["Saturn"])
         for i in range(n)],
    )


# --------------------------------------------------------------------------------------------------
# Empty question sets: exit 2 naming the set or file, no run directory


def test_an_empty_questions_file_names_the_set_and_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    questions.write_text("")
    config = tiny_config(tmp_path, corpus, questions)
    assert main(["--config", str(config), "--quiet"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "questions.jsonl", "question set 'questions' holds no valid question")
    assert not (tmp_path / "runs").exists()


def test_every_question_invalid_under_skip_invalid(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    questions.write_text(question_line("q1", "Where is Atlantis?", ["Atlantis"], ["nowhere"]) + "\n{broken\n")
    config = tiny_config(tmp_path, corpus, questions)
    assert main(["--config", str(config), "--quiet", "--skip-invalid"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "questions.jsonl", "'questions' holds no valid question after skipping")


def test_an_empty_list_of_question_sets(tiny: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--config", str(tiny), "--quiet", "--set", "question_sets=[]"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "question_sets: List should have at least 1 item")


# --------------------------------------------------------------------------------------------------
# Strict config through the CLI: one line with file (line, column) or key


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: tiny\ntop_k: [3\nseed: 1\n", ":3:5: not valid YAML"),
        ("name: tiny\n  seed: 1\n", ":2:7: not valid YAML: mapping values are not allowed here"),
        ("name: tiny\nseed: 1\nseed: 2\n", ":3:1: seed: duplicate key (first defined on line 2)"),
        ("name: tiny\nretrievers:\n  - {name: b, type: bm25, name: c}\n", ":3:27: name: duplicate key"),
    ],
)
def test_yaml_problems_name_file_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture, text, expected) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["--config", str(path)]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, f"{path}{expected}")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--methods", ","], "--methods: ',' has an empty name"),
        (["--methods", "bm25,"], "--methods: 'bm25,' has an empty name"),
        (["--methods", ""], "--methods: '' has an empty name"),
        (["--set", "top_k=true"], "top_k: expected a number, not a boolean"),
        (["--set", "name=.."], "name: String should match pattern"),
        (["--set", "output_dir=/"], "output_dir: / is the file-system root"),
        (["--set", "generation.generator={type: openai, model: m, base_url: not-a-url}"],
         "generation.generator.base_url: expected an http(s) URL"),
    ],
)
def test_loose_values_are_refused(tiny: Path, capsys: pytest.CaptureFixture, argv, expected) -> None:
    assert main(["--config", str(tiny), "--quiet", *argv]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, expected)
    assert not (tiny.parent / "runs").exists()


def test_a_directory_as_corpus_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    config = tiny_config(tmp_path, tmp_path / "data", questions)
    assert main(["--config", str(config), "--quiet"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "dataset.corpus:", "is a directory; expected a JSONL file")
    assert main(["--config", str(tmp_path), "--quiet"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "--config: is a directory")


# --------------------------------------------------------------------------------------------------
# API keys in the config and in the environment


def test_a_key_pasted_as_api_key_env_is_refused_and_not_echoed(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pasted = "sk-proj-Zt81qP0xJm4vW2yR9c"
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    generation = {"generator": {"type": "openai", "model": "m", "api_key_env": pasted}}
    config = tiny_config(tmp_path, corpus, questions, generation=generation)
    assert main(["--config", str(config), "--quiet"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    one_line_error(err, "generation.generator.api_key_env: expected the name of the environment variable")
    assert pasted not in err and not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()


def test_an_unset_key_for_a_remote_endpoint_fails_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_TEST_UNSET", raising=False)
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    generation = {"generator": {"type": "openai", "model": "m", "base_url": "https://llm.example.com/v1",
                                "api_key_env": "RAG_TEST_UNSET"}}
    config = tiny_config(tmp_path, corpus, questions, generation=generation)
    assert main(["--config", str(config), "--quiet"]) == EXIT_USER_ERROR
    one_line_error(capsys.readouterr().err, "generation.generator.api_key_env", "RAG_TEST_UNSET is not set",
                   "llm.example.com")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()


# --------------------------------------------------------------------------------------------------
# File-system errors: one line naming the path, exit 74, and --resume completes once fixed


class FakeFileSystemError:
    """Makes every write under ``root`` fail with ``code`` (EROFS: read-only, ENOSPC: full), by
    wrapping ``os.open`` (temporary files, append-only caches) and ``os.mkdir``. Running as root
    ignores chmod, hence an injected error rather than a read-only directory."""

    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path, code: int):
        self.root, self.code = str(root), code
        real_open, real_mkdir = os.open, os.mkdir

        def fake_open(path, flags, *args, **kwargs):
            if flags & self.WRITE_FLAGS and self._under(path):
                raise OSError(self.code, os.strerror(self.code), os.fspath(path))
            return real_open(path, flags, *args, **kwargs)

        def fake_mkdir(path, *args, **kwargs):
            if self._under(path) and not os.path.isdir(path):
                raise OSError(self.code, os.strerror(self.code), os.fspath(path))
            return real_mkdir(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", fake_open)
        monkeypatch.setattr(os, "mkdir", fake_mkdir)

    def _under(self, path) -> bool:
        return os.path.abspath(os.fspath(path)).startswith(self.root)


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
@pytest.mark.parametrize("where", ["runs", "cache"])
def test_a_read_only_or_full_directory_is_one_line_naming_the_path(
    tiny: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, where: str, code: int
) -> None:
    with monkeypatch.context() as patch:
        FakeFileSystemError(patch, tiny.parent / where, code)
        assert main(["--config", str(tiny), "--quiet"]) == EXIT_IO_ERROR
    err = capsys.readouterr().err
    one_line_error(err, f"error: cannot write or read {tiny.parent / where}", os.strerror(code),
                   "--resume" if where == "cache" else "no run directory was started yet; re-run the same command")
    if where == "cache":  # the run directory exists: fixing the disk and resuming completes it
        assert main(["--config", str(tiny), "--quiet", "--resume"]) == 0
        (run,) = (tiny.parent / "runs" / "tiny").iterdir()
        assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
        assert not [p for p in tiny.parent.rglob("*.tmp")]


def test_a_disk_full_during_generation_then_resume_loses_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, questions = many_questions(tmp_path / "data", 12)
    with StandInServer(StandInSettings()) as server:
        config = tiny_config(tmp_path, corpus, questions, generation=openai_generation(server))
        cache_file = tmp_path / "cache" / "generation" / "generations.jsonl"
        real_write, appended = os.write, []

        def write_until_full(fd: int, data: bytes) -> int:
            if os.fstat(fd).st_ino == os.stat(cache_file).st_ino:
                if len(appended) == 5:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # no file name: os.write names none
                appended.append(data)
            return real_write(fd, data)

        with monkeypatch.context() as patch:
            patch.setattr(os, "write", write_until_full)
            assert main(["--config", str(config), "--quiet", "--output-dir", str(tmp_path / "run")]) == EXIT_IO_ERROR
        one_line_error(capsys.readouterr().err, f"cannot write or read {cache_file}", "No space left on device")
        assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "failed"
        sent_before = server.stats.completions_requests
        assert main(["--config", str(config), "--quiet", "--output-dir", str(tmp_path / "run"), "--resume"]) == 0
        assert server.stats.completions_requests - sent_before == 16 - 5  # only the unanswered ones
    assert cache_file.read_text().count("\n") == 16


# --------------------------------------------------------------------------------------------------
# A truncated BM25 cache file: warned about, rebuilt, and the run goes on with the same results


def test_a_truncated_bm25_cache_is_rebuilt_in_the_same_run(tiny: Path, capsys: pytest.CaptureFixture) -> None:
    runs, cache = tiny.parent / "runs", tiny.parent / "cache"
    assert main(["--config", str(tiny), "--quiet", "--output-dir", str(runs / "first")]) == 0
    (postings,) = (cache / "index").rglob("postings.npz")
    postings.write_bytes(postings.read_bytes()[:100])
    for path in (cache / "retrieval").iterdir():  # so that the index is needed again
        path.unlink()
    capsys.readouterr()
    assert main(["--config", str(tiny), "--quiet", "--output-dir", str(runs / "second")]) == 0
    err = capsys.readouterr().err
    assert "BM25 index cache" in err and "unreadable" in err and "Traceback" not in err
    first, second = (pd.read_csv(runs / name / "per_query.csv") for name in ("first", "second"))
    pd.testing.assert_series_equal(first["retrieved_chunks"], second["retrieved_chunks"])


# --------------------------------------------------------------------------------------------------
# SIGTERM like Ctrl-C, and two runs at once on one cache


def start_run(config: Path, run_dir: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, RUN_BENCHMARK, "--config", str(config), "--quiet", "--output-dir",
                             str(run_dir), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigterm_mid_generation_is_handled_like_ctrl_c(tmp_path: Path) -> None:
    """The SIGTERM lands mid-generation on an event, not after a polled count of answers: the stand-in
    answers 8 requests, then holds the ninth (concurrency 1: the run waits on it) until the signal
    was sent."""
    corpus, questions = many_questions(tmp_path / "data")
    with StandInServer(StandInSettings()) as server:
        config = tiny_config(tmp_path, corpus, questions, generation=openai_generation(server, concurrency=1))
        run_dir, cache_file = tmp_path / "run", tmp_path / "cache" / "generation" / "generations.jsonl"
        server.hold_completions(after=8)
        process = start_run(config, run_dir)
        held, err = signal_when_held(server, process, signal.SIGTERM, timeout_s=60)
        assert held, f"the run never sent its answer request number 9: {err}"
        assert process.returncode == EXIT_TERMINATED, err
        assert "terminated (SIGTERM)" in err and "--resume" in err and "Traceback" not in err
        assert json.loads((run_dir / "manifest.json").read_text())["status"] == "interrupted"
        answered = cache_file.read_text().count("\n")
        assert 8 <= answered < 44
        sent = server.stats.completions_requests
        assert main(["--config", str(config), "--quiet", "--output-dir", str(run_dir), "--resume"]) == 0
        assert server.stats.completions_requests - sent == 44 - answered
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"


def test_two_runs_at_once_on_one_cache_send_each_prompt_once(tmp_path: Path) -> None:
    corpus, questions = many_questions(tmp_path / "data")
    with StandInServer(StandInSettings(latency_s=0.1)) as server:
        config = tiny_config(tmp_path, corpus, questions, generation=openai_generation(server, concurrency=4))
        processes = [start_run(config, tmp_path / name) for name in ("a", "b")]
        outcomes = [process.communicate(timeout=300) for process in processes]
        assert [process.returncode for process in processes] == [0, 0], outcomes
        assert server.stats.completions_requests == 44  # 44 distinct prompts, not 88
    a, b = (pd.read_csv(tmp_path / name / "per_query.csv", keep_default_na=False) for name in ("a", "b"))
    assert (a["generation_status"] == "answered").all()
    pd.testing.assert_series_equal(a["answer"], b["answer"])


# --------------------------------------------------------------------------------------------------
# The smoke config end to end: planted secrets nowhere, then a damaged Chroma and BM25 cache


KEY = "llm-auth-9f2c41d7be03a6e58c17"  # in LLM_AUTH: neither the name nor the shape says "key"
URL_PASSWORD = "url-pw-3be81c0f9a"
ENV_TOKEN = "env-token-55d0e2a7c3b1"  # a credential-like variable nobody configured


def test_smoke_run_leaks_no_planted_secret_then_survives_damaged_caches(tmp_path: Path) -> None:
    """Run 1: the key in LLM_AUTH goes out as ``Bearer`` and comes back in every answer. Run 2, on
    the same cache after damaging chroma.sqlite3 and postings.npz: the base URL carries
    ``user:password@``, which the HTTP client sends as ``Basic`` authorization, echoed back too.
    Ten of the 30 questions (``--limit 10``): 40 answers carry each secret through every output
    file; the 120 of all 30 went through the same code and took a third of the two runs."""
    env = {**os.environ, "LLM_AUTH": KEY, "MY_SERVICE_TOKEN": ENV_TOKEN}
    secrets = [KEY, URL_PASSWORD, ENV_TOKEN, base64.b64encode(f"bench-user:{URL_PASSWORD}".encode()).decode()]
    with StandInServer(StandInSettings(echo_auth=True)) as server:

        def smoke_run(name: str, base_url: str) -> subprocess.CompletedProcess:
            generation = json.dumps(openai_generation(server, base_url=base_url, api_key_env="LLM_AUTH"))
            argv = [sys.executable, RUN_BENCHMARK, "--config", str(SMOKE_CONFIG), "--output-dir", str(tmp_path / name),
                    "--limit", "10",
                    "--set", f"cache_dir={tmp_path / 'cache'}", "--set", f"output_dir={tmp_path / 'runs'}",
                    "--set", f"generation={generation}",
                    "--set", "retrievers.dense.params.search=hnsw"]  # a Chroma store to damage (dense is exact by default)
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr
            return done

        first = smoke_run("first", server.base_url)
        sent = server.stats.completions_requests  # one per distinct prompt

        database = next((tmp_path / "cache").rglob("chroma.sqlite3"))
        database.write_bytes(database.read_bytes()[: database.stat().st_size // 2])
        postings = next((tmp_path / "cache").rglob("postings.npz"))
        postings.write_bytes(postings.read_bytes()[:100])
        for path in (tmp_path / "cache" / "retrieval").iterdir():  # so that both indexes are needed again
            path.unlink()
        second = smoke_run("second", server.base_url.replace("http://", f"http://bench-user:{URL_PASSWORD}@"))
        assert server.stats.completions_requests == 2 * sent  # another endpoint identity: answered anew

    assert "Chroma store" in second.stderr and "BM25 index cache" in second.stderr and "Traceback" not in second.stderr
    one, two = (pd.read_csv(tmp_path / name / "per_query.csv", keep_default_na=False) for name in ("first", "second"))
    pd.testing.assert_series_equal(one["retrieved_chunks"], two["retrieved_chunks"])  # same results after repair
    answered = one["generation_status"] == "answered"
    assert answered.sum() >= sent > 0 and (one["generation_status"] != "failed").all()
    assert one["answer"][answered].str.endswith("(you sent Bearer [REDACTED])").all()  # the server echoed the key
    assert two["answer"][answered].str.endswith("(you sent Basic [REDACTED])").all()  # ... and the URL credentials
    assert "http://[REDACTED]@127.0.0.1" in (tmp_path / "second" / "plan.json").read_text()

    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert {"generations.jsonl", "chroma.sqlite3", "manifest.json", "report.html"} <= {path.name for path in written}
    for path in written:
        data = path.read_bytes()
        assert not [secret for secret in secrets if secret.encode() in data], path
    printed = first.stdout + first.stderr + second.stdout + second.stderr
    assert not [secret for secret in secrets if secret in printed]
