"""The package outside its checkout: build the wheel, install it into a fresh virtual environment and,
from an empty temporary directory, run ``rag-bench --version`` and the built-in smoke config.

The fresh environment gets no copies of the heavy dependencies (torch, chromadb, ...): a ``.pth`` line
appends this environment's site-packages to its ``sys.path``. A ``.pth`` line only adds a directory;
the editable install's own ``.pth`` finder there is not run, so ``rag`` is imported from the wheel,
which the test checks (``rag.__file__``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # a copy, so the build leaves no build/ or *.egg-info in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for package in ("rag", "evaluation"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(root / "dist"),
         str(source)], cwd=root, env=env, timeout=180)
    (wheel,) = (root / "dist").glob("hybrid_rag_bench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"rag/resources/configs/smoke.yaml", "rag/resources/configs/wiki.yaml", "rag/resources/data/smoke/corpus.jsonl",
            "rag/resources/data/wiki/corpus.jsonl.gz", "rag/resources/data/wiki/questions/reference.jsonl",
            "rag/results/templates/report.html.j2", "rag/resources/reproduce/smoke.yaml",
            "rag/resources/reproduce/wiki.yaml", "rag/results/templates/reproduce.html.j2"} <= names
    return wheel


@pytest.fixture(scope="module")
def installed(wheel: Path, env: dict[str, str]) -> tuple[Path, dict[str, str]]:
    root = wheel.parents[1]
    venv = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root, env=env)
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)], cwd=root, env=env)
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root, env=env).strip())
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv, env


def test_the_license_is_an_spdx_expression(wheel: Path) -> None:
    """Core metadata 2.4 (PEP 639): ``License-Expression: MIT``, not the deprecated ``License:`` field
    that a ``license = {text = ...}`` table writes (issue 44)."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        headers = archive.read(metadata).decode().split("\n\n", 1)[0].splitlines()
    assert "License-Expression: MIT" in headers
    assert not [line for line in headers if line.startswith("License:")]


def test_imports_come_from_the_wheel(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    where = run([str(venv / "bin" / "python"), "-c", "import rag, evaluation; print(rag.__file__); print(evaluation.__file__)"],
                cwd=tmp_path, env=env).split()
    assert all(Path(path).is_relative_to(venv) for path in where), where


def test_version(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    assert run([str(venv / "bin" / "rag-bench"), "--version"], cwd=tmp_path, env=env).strip() == "rag-bench 0.1.0"


def test_reproduction_matrix_ships_in_the_wheel(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """The installed package finds its condition files and reproduces the metric cases from any directory."""
    venv, env = installed
    listed = run([str(venv / "bin" / "rag-bench"), "reproduce", "--list"], cwd=tmp_path, env=env)
    assert "wiki: Main job" in listed and "smoke: Smoke run" in listed
    out = run([str(venv / "bin" / "rag-bench"), "reproduce", "autorag"], cwd=tmp_path, env=env)
    assert "reproduced: all 27 cells of 1 condition within their tolerances" in out
    assert (tmp_path / "runs" / "reproduce" / "index.html").is_file()


def test_smoke_config_runs_from_any_directory(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    package = venv / "lib"
    before = sorted(path for path in package.rglob("*") if "__pycache__" not in path.parts)
    run([str(venv / "bin" / "rag-bench"), "--config", "smoke", "--quiet", "--methods", "dense,bm25,rrf"],
        cwd=tmp_path, env=env, timeout=150)
    (comparison,) = (tmp_path / "runs" / "smoke").glob("*/comparison.csv")
    table = pd.read_csv(comparison)
    assert table["method"].tolist() == ["dense", "bm25", "rrf"]
    assert (table["mrr@10"] > 0.3).all()
    assert (tmp_path / ".cache" / "embeddings").is_dir()  # caches in the working directory ...
    after = sorted(path for path in package.rglob("*") if "__pycache__" not in path.parts)
    assert after == before  # ... and nothing written into the installed package
