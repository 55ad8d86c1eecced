"""Config validation: every bad value fails with the dotted key and what was expected (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rag.cli import main
from rag.config import apply_override, load_config
from rag.errors import ConfigError

from .conftest import REPO, SMOKE_CONFIG


@pytest.mark.parametrize(
    ("override", "key", "expected"),
    [
        ("bogus=1", "bogus", "unknown key; expected one of: baselines, cache_dir"),
        ("retrievers.1.params.k9=3", "retrievers.bm25.params.k9", "expected one of: b, backend"),
        ("retrievers.bm25.params.tokenizer.nme=x", "retrievers.bm25.params.tokenizer.nme", "expected one of: name, stem"),
        ("top_k=ten", "top_k", "valid integer"),
        ("top_k=0", "top_k", "greater than 0"),
        ("top_k=-3", "top_k", "greater than 0"),
        ("retrievers.dense.type=nope", "retrievers.dense.type", "unknown retriever 'nope'; expected one of: bm25"),
        ("dataset.bogus=2", "dataset.bogus", "expected one of: corpus, format, name, questions"),
        ("generation.generator.max_chunks=0", "generation.generator.max_chunks", "greater than 0"),
        ("evaluation.metrics=[mrr, foo@3]", "evaluation.metrics", "unknown name 'foo'"),
        ("methods=[dense, nope]", "methods", "unknown method(s) ['nope']"),
        ("retrievers.rrf.params.retrievers=[dense, zzz]", "retrievers.rrf.params.retrievers", "needs ['zzz']"),
        ("retrievers.rrf.params.k=-1", "retrievers.rrf.params.k", "greater than or equal to 1"),
        ("retrievers.dense.params.hnsw={M: 1}", "retrievers.dense.params.hnsw.M", "greater than 1"),
        ("evaluation.levels=[page]", "evaluation.levels.0", "'url' or 'chunk'"),
        # issue 14: strict values
        ("top_k=true", "top_k", "expected a number, not a boolean"),
        ("seed=false", "seed", "expected a number, not a boolean"),
        ("retrievers.bm25.params.k1=true", "retrievers.bm25.params.k1", "expected a number, not a boolean"),
        ("retrievers.dense.params.hnsw.M=true", "retrievers.dense.params.hnsw.M", "expected a number, not a boolean"),
        ("generation.generator.max_chunks=true", "generation.generator.max_chunks", "expected a number, not a boolean"),
        ("question_sets=[]", "question_sets", "at least 1 item"),
        ("methods=[]", "methods", "at least 1 item"),
        ("name=..", "name", "should match pattern"),
        ("name=.", "name", "should match pattern"),
        ("retrievers.bm25.name=..", "retrievers.1.name", "should match pattern"),
        ("retrievers.bm25.name=my.bm25", "retrievers.1.name", "should match pattern"),
        ("output_dir=/", "output_dir", "/ is the file-system root"),
        ("cache_dir=/", "cache_dir", "/ is the file-system root"),
        ("generation.generator={type: openai, model: m, base_url: not-a-url}", "generation.generator.base_url",
         "expected an http(s) URL with a host"),
        ("generation.generator={type: openai, model: m, base_url: 'ftp://host/v1'}", "generation.generator.base_url",
         "expected an http(s) URL with a host"),
        ("generation.generator={type: openai, model: m, base_url: 'http://h:port/v1'}", "generation.generator.base_url",
         "not a valid URL"),
        ("generation.generator={type: openai, model: m, api_key_env: lower_case}", "generation.generator.api_key_env",
         "expected the name of the environment variable"),
    ],
)
def test_bad_values_name_the_key(override: str, key: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(SMOKE_CONFIG, [override])
    assert caught.value.key == key
    assert expected in str(caught.value)
    assert str(SMOKE_CONFIG) in str(caught.value)  # names the file too


def test_overrides_parse_yaml_and_address_lists_by_index_or_name() -> None:
    raw = {"retrievers": [{"name": "dense", "params": {}}, {"name": "bm25", "params": {"k1": 1.5}}], "top_k": 10}
    apply_override(raw, "top_k=20")
    apply_override(raw, "retrievers.bm25.params.k1=0.9")
    apply_override(raw, "retrievers.0.params.hnsw={search_ef: 50}")
    apply_override(raw, "generation=null")
    assert raw["top_k"] == 20 and raw["generation"] is None
    assert raw["retrievers"][1]["params"]["k1"] == 0.9
    assert raw["retrievers"][0]["params"]["hnsw"] == {"search_ef": 50}
    with pytest.raises(ConfigError, match="no entry named 'sparse'"):
        apply_override(raw, "retrievers.sparse.params.k1=1")
    with pytest.raises(ConfigError, match="expected dotted.key=value"):
        apply_override(raw, "top_k")


ENDPOINT_SETTINGS = {  # the same endpoint knobs in a generator and in a dense retriever's embedder
    "generation.generator": "{type: openai, model: m, %s}",
    "retrievers.dense.params.embedder": "{type: openai, %s}",
}


@pytest.mark.parametrize(("settings", "field", "expected"), [
    ("concurrency: true, timeout_s: .inf", "concurrency", "expected a number, not a boolean (got True)"),
    ("timeout_s: .inf", "timeout_s", "Input should be a finite number (got inf)"),
    ("timeout_s: .nan", "timeout_s", "Input should be a finite number (got nan)"),
    ("max_retries: false", "max_retries", "expected a number, not a boolean (got False)"),
    ("backoff: {max_s: .inf}", "backoff.max_s", "Input should be a finite number (got inf)"),
])
def test_embedder_refuses_what_the_generator_refuses(settings: str, field: str, expected: str) -> None:
    """Issue 28: one strict config base, so an embedder endpoint's settings are refused exactly as a
    generator's (a boolean is not a number, NaN and infinity are not numbers)."""
    messages = {}
    for section, template in ENDPOINT_SETTINGS.items():
        with pytest.raises(ConfigError) as caught:
            load_config(SMOKE_CONFIG, [f"{section}={template % settings}"])
        assert caught.value.key == f"{section}.{field}"
        messages[section] = str(caught.value).split(f"{section}.{field}: ", 1)[1]
    assert len(set(messages.values())) == 1, messages
    assert messages["generation.generator"].startswith(expected)


def test_relative_paths_resolve_against_the_config_directory(tmp_path: Path) -> None:
    config_dir = tmp_path / "configs"
    config_dir.mkdir()
    raw = yaml.safe_load(SMOKE_CONFIG.read_text())
    (config_dir / "c.yaml").write_text(yaml.safe_dump(raw))
    config = load_config(config_dir / "c.yaml")
    assert config.dataset.corpus == (tmp_path / "data" / "smoke" / "corpus.jsonl").resolve()
    assert config.output_dir == (config_dir / "runs").resolve()  # a copy is no built-in config: its own directory
    assert config.cache_dir == (config_dir / ".cache").resolve()


def test_shipped_configs_validate() -> None:
    for path in sorted((REPO / "configs").glob("*.yaml")):
        load_config(path)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--config", "missing.yaml"], "file not found: missing.yaml"),
        (["--config", str(SMOKE_CONFIG), "--set", "top_k=0"], "top_k: Input should be greater than 0"),
        (["--config", str(SMOKE_CONFIG), "--methods", "dense,nope"], "methods: unknown method(s) ['nope']"),
        (["--config", str(SMOKE_CONFIG), "--limit", "many"], "argument --limit: invalid int value"),
    ],
)
def test_cli_exit_code_2_with_one_line(argv: list[str], expected: str, capsys: pytest.CaptureFixture) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_missing_data_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    raw = yaml.safe_load(SMOKE_CONFIG.read_text())
    raw["dataset"]["corpus"] = str(tmp_path / "nowhere.jsonl")
    raw.update(output_dir=str(tmp_path / "runs"), cache_dir=str(tmp_path / "cache"))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    assert main(["--config", str(tmp_path / "c.yaml"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "nowhere.jsonl" in err and "Traceback" not in err


def test_subprocess_unknown_key_no_traceback(tmp_path: Path) -> None:
    raw = yaml.safe_load(SMOKE_CONFIG.read_text())
    raw["retrievers"][1]["params"]["k_one"] = 1.2
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "run_benchmark.py"), "--config", str(tmp_path / "c.yaml")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "retrievers.bm25.params.k_one: unknown key; expected one of: b, backend" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_retriever_params_are_validated_once_and_each_retriever_built_once(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One validation pass at load, one instance per retriever per run (issue 14: it was five and three)."""
    from rag.retrievers.bm25 import BM25Params, BM25Retriever

    validations, builds = [], []
    validate, init = BM25Params.model_validate.__func__, BM25Retriever.__init__
    monkeypatch.setattr(BM25Params, "model_validate",
                        classmethod(lambda cls, *args, **kwargs: validations.append(1) or validate(cls, *args, **kwargs)))
    monkeypatch.setattr(BM25Retriever, "__init__", lambda self, *args, **kwargs: builds.append(1) or init(self, *args, **kwargs))
    assert main(["--config", str(tiny), "--quiet", "--set", "retrievers=[{name: a, type: bm25}, {name: b, type: bm25, "
                 "params: {k1: 0.9}}, {name: f, type: rrf, params: {retrievers: [a, b]}}]"]) == 0
    assert (len(validations), len(builds)) == (2, 2)
