"""Built-in configs (rag/resources): found by name, an existing file wins, and a built-in config's runs
and caches go to the working directory while its data comes from the package."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import load_config
from rag.errors import ConfigError
from rag.resources import builtin_config_names, configs_dir, data_dir

REPO = Path(__file__).resolve().parents[2]


def test_builtin_names_and_checkout_links() -> None:
    assert {"smoke", "wiki"} <= set(builtin_config_names())
    for name in ("smoke", "wiki"):  # the checkout's configs/ and data/ are links to the one copy in the package
        assert (REPO / "configs" / f"{name}.yaml").resolve() == (configs_dir() / f"{name}.yaml").resolve()
        assert (REPO / "data" / name).resolve() == data_dir(name).resolve()


@pytest.mark.parametrize("name", ["smoke", "smoke.yaml"])
def test_builtin_config_by_name_writes_to_the_working_directory(name: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config(name)
    assert config.output_dir == tmp_path / "runs"
    assert config.cache_dir == tmp_path / ".cache"
    assert config.dataset.corpus == (data_dir("smoke") / "corpus.jsonl").resolve()
    assert config.dataset.corpus.is_file()


def test_checkout_path_keeps_the_repository_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--config configs/smoke.yaml`` from the repository root: runs/ and .cache/ at the root, as before."""
    monkeypatch.chdir(REPO)
    config = load_config("configs/smoke.yaml")
    assert (config.output_dir, config.cache_dir) == (REPO / "runs", REPO / ".cache")


def test_existing_file_wins_over_a_builtin_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = (configs_dir() / "smoke.yaml").read_text().replace("name: smoke", "name: mine")
    text = text.replace("../data/smoke/", f"{data_dir('smoke')}/")
    Path("smoke").write_text(text)
    config = load_config("smoke")
    assert config.name == "mine"
    assert config.output_dir == tmp_path / "runs"


def test_unknown_name_lists_the_builtin_configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"file not found: nope; expected .* built-in config name \(.*smoke.*wiki"):
        load_config("nope")


def test_sweep_reads_a_builtin_config_like_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep's raw mapping (its grid points) resolves like load_config: data from the package,
    runs and caches in the working directory."""
    from rag.config import read_config_mapping

    monkeypatch.chdir(tmp_path)
    raw, base_dir, source = read_config_mapping("smoke", ["top_k=5"])
    assert base_dir == configs_dir().resolve() and source == configs_dir() / "smoke.yaml"
    assert (raw["top_k"], raw["output_dir"], raw["cache_dir"]) == (5, str(tmp_path / "runs"), str(tmp_path / ".cache"))
