"""Settings for the whole test session."""

import hashlib
import os
import shutil
from importlib.metadata import version
from pathlib import Path

import pytest

import rag.code_version as code_version_module
from rag.models import DEFAULT_EMBEDDING_MODEL, usable_cpus
from rag.ort.build import MODEL_CACHE_ENV, MODEL_FILE

# milvus-lite's gRPC client logs a harmless keepalive notice ("too_many_pings") when the interpreter
# exits, after pytest's summary line; keep the gRPC C core quiet so the summary stays the last line.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (pyproject's addopts): one pytest-xdist worker per usable CPU, at most
    ``MAX_WORKERS`` (each may hold a real model: SmolLM2 on PyTorch is ~1.7 GB with its buffers)."""
    return max(1, min(MAX_WORKERS, usable_cpus()))


def pin_this_worker(environ=os.environ) -> list[int] | None:
    """Give each xdist worker its own share of the CPUs (worker ``gwK`` of ``N`` gets every N-th
    CPU from the K-th), before anything loads PyTorch, ONNX Runtime or starts llama.cpp: their
    thread pools size themselves from this process's CPU affinity (:func:`rag.models.usable_cpus`,
    libgomp), so two workers on 2 cores run one thread each instead of two threads each fighting
    over both cores (a model test then took 4.5x its time alone). Returns the CPUs, or None when
    this is no worker or there are fewer CPUs than workers (then nothing is pinned)."""
    worker, count = environ.get("PYTEST_XDIST_WORKER", ""), int(environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count < 2 or not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < count:
        return None
    share = cpus[int(worker[2:]) % count::count]
    os.sched_setaffinity(0, share)
    return share


pin_this_worker()


def onnx_models_dir() -> Path:
    """The test sessions' ONNX model directory: ``RAG_BENCH_TEST_MODEL_CACHE`` (default
    ``~/.cache/rag-bench-tests/onnx-models``) under a key of everything that builds a model besides
    what :func:`rag.ort.build.onnx_model` keys itself (model files, precision, recipe, opset): the
    source of ``rag/ort`` and ``rag/encoders.py`` and the versions of torch, onnx and onnxruntime.
    Other keys' directories are removed (one build kept per machine)."""
    root = Path(__file__).resolve().parents[1] / "rag"
    digest = hashlib.sha256()
    for path in sorted([*(root / "ort").glob("*.py"), root / "encoders.py"]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for package in ("torch", "onnx", "onnxruntime"):
        digest.update(f"{package}={version(package)}".encode())
    base = Path(os.environ.get("RAG_BENCH_TEST_MODEL_CACHE") or Path.home() / ".cache" / "rag-bench-tests" / "onnx-models")
    directory = base / digest.hexdigest()[:24]
    if base.is_dir():
        for old in base.iterdir():
            if old != directory and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session) -> None:
    """With xdist workers, the main process builds the two ONNX models of :func:`onnx_models_dir`
    before the workers start, on every CPU, when either is missing (a new machine, or new build
    code): otherwise the first worker to ask builds it on its one pinned core while the other waits
    on the build's lock (in a fresh clone's run the int8 build took 99 s that way, 33 s alone on
    one core). Nothing is built when both are there, so a warm run pays only this check."""
    if "PYTEST_XDIST_WORKER" in os.environ or not getattr(session.config.option, "numprocesses", None):
        return
    directory = onnx_models_dir()
    if all(any(directory.glob(f"{precision}-*/{MODEL_FILE}")) for precision in ("float32", "int8")):
        return
    from rag.ort.build import onnx_model

    for precision in ("float32", "int8"):
        onnx_model(DEFAULT_EMBEDDING_MODEL, precision, directory)


@pytest.fixture(scope="session", autouse=True)
def shared_onnx_models():
    """Every test's runs build and read the ONNX models in one directory (``RAG_BENCH_MODEL_CACHE``,
    :func:`rag.ort.build.model_cache`), never the user's own shared directory: a model is built once
    per machine and build code (:func:`onnx_models_dir`), not once per fresh ``cache_dir`` or session
    (the int8 build, calibration and GPTQ, takes about 70 s on 2 cores). Tests of the build itself
    set their own directory."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(MODEL_CACHE_ENV, str(onnx_models_dir()))
        yield


@pytest.fixture
def edit_module(tmp_path, monkeypatch):
    """``edit_module("rag.x")``: :func:`rag.code_version.code_version` reads ``rag.x`` as if one
    comment line were added to its source, until the test ends (a code change, without one)."""

    def edit(name: str) -> None:
        edited = tmp_path / f"{name}.py"
        edited.write_text(code_version_module._source(name).read_text(encoding="utf-8") + "\n# edited\n",
                          encoding="utf-8")
        real_source = code_version_module._source
        monkeypatch.setattr(code_version_module, "_source", lambda module: edited if module == name else real_source(module))
        code_version_module.code_version.cache_clear()

    yield edit
    code_version_module.code_version.cache_clear()
