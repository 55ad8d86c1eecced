"""int8 inference of the local sentence-transformers model: ONNX Runtime dynamic quantization, CPU.

The model (its whole sentence-transformers pipeline up to the pooled ``sentence_embedding``: the
transformer and its pooling) is exported to ONNX with ``torch.onnx.export``, then every MatMul's
weights are quantized to signed 8-bit integers, one scale per output channel, and its activations
to unsigned 8-bit integers per call (``onnxruntime.quantization.quantize_dynamic``, weight type
``QInt8``, ``per_channel``: :data:`RECIPE`). ONNX Runtime then runs the products as int8
(``MatMulInteger``, VNNI where the CPU has it). Why this recipe and not another: docs/retrievers.md
("int8"), measured with ``scripts/bench_dense.py``.

The quantized model is built once, locally and offline, and kept under ``<cache_dir>/models/``, in a
directory keyed by the sha256 of the model's files, the recipe and the torch/onnxruntime versions
(:func:`quantized_model`); the build runs in a temporary directory renamed into place (atomic: a
model directory is whole or absent) under a lock, so concurrent runs build it once.

Vectors: the pooled embedding, L2-normalized (float32), as the float32 model's; :class:`Int8Encoder`
has the sentence-transformers ``encode`` signature the :class:`rag.embeddings.Embedder` uses.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import tempfile
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import BenchError
from rag.io_utils import atomic_write_json, sha256_file, sha256_text
from rag.models import load_tokenizer, quiet_thread_pools, resolve_embedding_model

log = logging.getLogger(__name__)

#: What the quantization does (keys the cached model and, through :func:`identity`, the vectors):
#: a change to the export or the quantization must change it.
RECIPE = "onnxruntime-dynamic-qint8-per-channel"
ONNX_OPSET = 17
MODEL_FILE, SETTINGS_FILE = "model.onnx", "encoder.json"


def identity(model: str) -> str:
    """The embedding store identity of ``model``'s int8 vectors: never the float32 one's."""
    return f"{model}+int8:{RECIPE}"


def model_files_hash(directory: Path) -> str:
    """sha256 over the model directory's files (relative path and content hash, sorted by path)."""
    files = sorted(path for path in directory.rglob("*") if path.is_file())
    return sha256_text(json.dumps([[str(path.relative_to(directory)), sha256_file(path)] for path in files]))


def intra_op_threads() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity``): one compute thread each."""
    return max(1, len(os.sched_getaffinity(0)))


def quantized_model(model: str, cache: Path) -> Path:
    """The directory of ``model``'s int8 ONNX model under ``cache`` (built first when absent)."""
    import onnxruntime
    import torch

    source = Path(resolve_embedding_model(model))
    if not source.is_dir():
        raise BenchError(f"precision int8 needs the embedding model {model!r} as a local directory "
                         f"(a packaged model or a path); {str(source)!r} is not one")
    key = sha256_text(json.dumps({"files": model_files_hash(source), "recipe": RECIPE, "opset": ONNX_OPSET,
                                  "torch": torch.__version__, "onnxruntime": onnxruntime.__version__}))[:24]
    target = cache / f"int8-{key}"
    if (target / MODEL_FILE).is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"int8-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / MODEL_FILE).is_file():  # another process may have built it meanwhile
            log.info("building the int8 model of %s in %s (once)", model, target)
            with tempfile.TemporaryDirectory(dir=cache, prefix=".building-") as building:
                _build(model, Path(building) / "model")
                os.replace(Path(building) / "model", target)
    return target


def _build(model: str, directory: Path) -> None:
    """Export the pooled sentence-transformers model to ONNX, quantize it, write its settings."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from rag.models import load_sentence_transformer

    directory.mkdir()
    st = load_sentence_transformer(model, "cpu").eval()
    example = load_tokenizer(resolve_embedding_model(model))(["an example text", "another"], padding=True, return_tensors="pt")
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in example]

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.modules_ = st

        def forward(self, *inputs):
            return self.modules_(dict(zip(names, inputs)))["sentence_embedding"]

    float32 = directory / "float32.onnx"
    with torch.no_grad():
        torch.onnx.export(Pooled(), tuple(example[name] for name in names), str(float32), input_names=names,
                          output_names=["embedding"], opset_version=ONNX_OPSET, dynamo=False,
                          dynamic_axes={**{name: {0: "batch", 1: "tokens"} for name in names}, "embedding": {0: "batch"}})
    quantize_dynamic(str(float32), str(directory / MODEL_FILE), weight_type=QuantType.QInt8, per_channel=True)
    float32.unlink()
    atomic_write_json(directory / SETTINGS_FILE, {"inputs": names, "max_seq_length": st.max_seq_length,
                                                  "dimension": st.get_sentence_embedding_dimension(), "recipe": RECIPE})


class Int8Encoder:
    """``model``'s int8 ONNX model on ONNX Runtime's CPU provider, built in ``cache`` (a directory, set
    by the dense retriever before the first ``encode``: ``<cache_dir>/models``), loaded on first use.

    Threads: one intra-op thread per CPU of the process, one inter-op thread, and idle threads sleep
    instead of spinning (``session.intra_op.allow_spinning`` 0), so they leave the cores to the other
    work of a shared machine (:func:`rag.models.quiet_thread_pools` is the same rule for OpenMP)."""

    def __init__(self, model: str, cache: Path | None = None):
        self.model, self.cache = model, cache

    @cached_property
    def _session(self):
        if self.cache is None:
            raise BenchError(f"int8 model of {self.model!r}: no cache directory to build it in")
        quiet_thread_pools()
        import onnxruntime

        directory = quantized_model(self.model, self.cache)
        settings = json.loads((directory / SETTINGS_FILE).read_text(encoding="utf-8"))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = intra_op_threads(), 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = onnxruntime.InferenceSession(str(directory / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        return session, load_tokenizer(resolve_embedding_model(self.model)), settings

    def encode(self, sentences: list[str], batch_size: int, normalize_embeddings: bool = True,
               **_ignored: Any) -> np.ndarray:
        """One float32 row per text, in order; texts go longest first in batches of ``batch_size``,
        as sentence-transformers batches them; rows are L2-normalized unless ``normalize_embeddings``
        is False (the other sentence-transformers options are accepted and ignored)."""
        session, tokenizer, settings = self._session
        order = np.argsort([-len(text) for text in sentences], kind="stable")
        vectors = np.empty((len(sentences), settings["dimension"]), dtype=np.float32)
        for start in range(0, len(sentences), batch_size):
            batch = order[start : start + batch_size]
            inputs = tokenizer([sentences[i] for i in batch], padding=True, truncation=True,
                               max_length=settings["max_seq_length"], return_tensors="np")
            vectors[batch] = session.run(None, {name: inputs[name].astype(np.int64) for name in settings["inputs"]})[0]
        if normalize_embeddings:
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors

