"""Issue 28's red-team, item 4, on configs and secrets: URL passwords holding ``@`` or ``#``, ``--set``
paths, local files named like a built-in config, and a message typo. Each case: one clear line (or it
works), no traceback, no secret written.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rag.cli import EXIT_USER_ERROR, main
from rag.config import config_record, load_config
from rag.secrets import REPLACEMENT, Redactor, redact_url_credentials

from .conftest import tiny_config, write_tiny_dataset
from .test_red_team import one_line_error

# --------------------------------------------------------------------------------------------------
# A URL's whole user-info is removed, whatever its password holds

# A password as people write it in a URI, unencoded: any printable ASCII but the characters that end
# a URL in text (white space, '"', '<', '>'; RFC 3986 has no place for them), so '@', '#', '?', '/', ':'.
PASSWORDS = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters='"<>'), min_size=1, max_size=24)
USERS = st.text(string.ascii_letters + string.digits + "._-", min_size=1, max_size=10)
HOSTS = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z]{2,5}){0,2}", fullmatch=True)
AFTER_HOST = ":19530/db?x=1#f"


@settings(max_examples=100, deadline=None)
@given(user=USERS, password=PASSWORDS, host=HOSTS)
def test_the_whole_userinfo_of_a_url_is_removed_by_the_text_rule(user: str, password: str, host: str) -> None:
    url = f"http://{user}:{password}@{host}{AFTER_HOST}"
    assert redact_url_credentials(f"cannot connect to {url}: refused") == \
        f"cannot connect to http://{REPLACEMENT}@{host}{AFTER_HOST}: refused"


@settings(max_examples=100, deadline=None)
@given(user=USERS, password=PASSWORDS, host=HOSTS)
def test_a_url_password_in_the_config_is_never_written(user: str, password: str, host: str) -> None:
    """What plan.json and manifest.json hold (the config, through the run's redactor) and an error line."""
    url = f"http://{user}:{password}@{host}{AFTER_HOST}"
    assume(password not in f"{host}{AFTER_HOST}")
    redactor = Redactor.for_config({"store": {"uri": url}}, environ={})
    assert redactor.deep({"store": {"uri": url}}) == {"store": {"uri": f"http://{REPLACEMENT}@{host}{AFTER_HOST}"}}
    line = redactor.text(f"error: {url!r} refused; {json.dumps({'uri': url})}")
    assert f"{user}:{password}" not in line and (len(password) < 8 or password not in line), line


@pytest.mark.parametrize("password", ["Mil@Secret99", "pw#Hash77xx", "a/b?c#d@Secret99"])
def test_a_milvus_uri_password_is_not_in_the_plan(password: str) -> None:
    """It was written partly (``http://[REDACTED]@Secret99@127.0.0.1:19530``) or wholly (with ``#``)."""
    uri = f"http://root:{password}@127.0.0.1:19530"
    config = load_config("milvus", [f"retrievers.dense.params.store={{type: milvus, uri: '{uri}'}}"])
    redactor = Redactor.for_config(config, environ={})
    written = json.dumps(redactor.deep({"config": config_record(config)})) + redactor.text(f"cannot reach {uri}")
    assert f"http://{REPLACEMENT}@127.0.0.1:19530" in written
    assert password not in written and "Secret99" not in written and "Hash77" not in written


# --------------------------------------------------------------------------------------------------
# A relative path given with --set is relative to the working directory, for every config


def small_folder(root: Path) -> None:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# Espresso\n\nEspresso is brewed with hot water under pressure.\n")
    (root / "docs" / "b.md").write_text("# Cold brew\n\nCold brew steeps for twelve hours.\n")
    (root / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "How long does cold brew steep?",
                                              "answers": ["twelve hours"], "gold_urls": ["b.md"]}) + "\n")


def test_set_dataset_path_of_the_builtin_documents_config_is_the_working_directorys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """It was looked for inside the installed package (``.../rag/resources/configs/docs: not a folder``)."""
    small_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--config", "documents", "--set", "dataset.path=docs", "--set", "dataset.questions=q.jsonl",
                 "--methods", "bm25", "--no-generation", "--quiet", "--output-dir", "run", "--set", "cache_dir=cache"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["data"]["files"] == {"read": 2, "skipped": 0}
    assert manifest["config"]["dataset"]["path"] == "docs"


def test_set_paths_are_relative_to_the_working_directory_for_a_config_file_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "cfg" / "data")
    config = tiny_config(tmp_path / "cfg", Path("data/corpus.jsonl"), Path("data/questions.jsonl"))
    monkeypatch.chdir(tmp_path)
    loaded = load_config(config, ["dataset.corpus=other/corpus.jsonl", "dataset.questions={dev: dev.jsonl}"])
    assert loaded.dataset.corpus == tmp_path / "other" / "corpus.jsonl"
    assert loaded.dataset.questions == {"dev": tmp_path / "dev.jsonl"}
    assert load_config(config).dataset.corpus == corpus  # in the file: relative to the file
    assert load_config(config, ["top_k=2"]).dataset.questions == questions
    # `dataset.path=..` read the package's own files
    assert load_config("documents", ["dataset.path=.."]).dataset.path == tmp_path.parent


# --------------------------------------------------------------------------------------------------
# A local file named like a built-in config


def test_a_local_file_that_shadows_a_builtin_config_is_said_on_the_first_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    (tmp_path / "smoke").write_text(tiny_config(tmp_path, corpus, questions).read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["--config", "smoke", "--quiet", "--no-generation", "--output-dir", "run"]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("WARNING rag.config: --config smoke: the file smoke here is read, not the built-in "
                            "config 'smoke'"), first
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["config"]["name"] == "tiny"


def test_run_docs_uses_the_builtin_documents_config_whatever_file_is_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A stray file ``documents`` made ``run --docs`` fail with a pydantic discriminator message."""
    small_folder(tmp_path)
    (tmp_path / "documents").write_text(yaml.safe_dump({"notes": "a stray file, not a config"}))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--docs", "docs", "--questions", "q.jsonl", "--methods", "bm25", "--no-generation", "--quiet",
                 "--output-dir", "run", "--set", "cache_dir=cache"]) == 0
    assert capsys.readouterr().err == ""
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["config"]["name"] == "documents"


# --------------------------------------------------------------------------------------------------
# The message typo


def test_a_control_character_in_a_question_is_one_line_without_a_doubled_word(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus, questions = write_tiny_dataset(tmp_path / "data", extra_questions=['{"id": "x1", "question": "a\tb?"}'])
    assert main(["--config", str(tiny_config(tmp_path, corpus, questions)), "--quiet"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    one_line_error(err, f"{questions}:5: invalid JSON: Invalid control character at column 28")  # the tab: 28th character
    assert " at at " not in err
