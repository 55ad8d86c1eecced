"""The ONNX model (:mod:`rag.ort.build`: float32, or its int8 rewrite) on ONNX Runtime's CPU
provider, behind the sentence-transformers ``encode`` signature the :class:`rag.embeddings.Embedder` uses.

Vectors: the pooled embedding, L2-normalized (float32), as the PyTorch model's. In the int8 model
every token's activations are quantized alone (:mod:`rag.ort.graph`), so a text's vector does not
depend on the texts that share its batch.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import BenchError
from rag.models import load_tokenizer, quiet_thread_pools, resolve_embedding_model, usable_cpus
from rag.ort.build import MODEL_FILE, RECIPE, SETTINGS_FILE, Precision, model_cache, onnx_model


def identity(model: str, precision: Precision) -> str:
    """The embedding store identity of ``model``'s vectors in ``precision``: the model's own for
    float32 (the same function as the PyTorch model), never the float32 one's for int8."""
    return model if precision == "float32" else f"{model}+int8:{RECIPE}"


class OnnxEncoder:
    """``model``'s ONNX model in ``precision`` on ONNX Runtime's CPU provider, built in ``cache`` (a
    directory, set by the dense retriever before the first ``encode``: ``<cache_dir>/models``), or in
    the shared directory ``RAG_BENCH_MODEL_CACHE`` names (:func:`rag.ort.build.model_cache`), loaded
    on first use.

    Threads: one intra-op thread per CPU of the process, one inter-op thread; they spin between the
    operators of one ``run`` (``session.intra_op.allow_spinning`` 1) and stop spinning when it ends
    (``session.force_spinning_stop`` 1), so between runs they leave the cores to the other work of a
    shared machine (:func:`rag.models.quiet_thread_pools` is the same rule for OpenMP).
    measured: docs/measurements.md#onnx-runtime-spinning"""

    def __init__(self, model: str, precision: Precision, cache: Path | None = None):
        self.model, self.precision, self.cache = model, precision, cache

    @cached_property
    def _session(self):
        if self.cache is None:
            raise BenchError(f"{self.precision} ONNX model of {self.model!r}: no cache directory to build it in")
        quiet_thread_pools()
        import onnxruntime

        directory = onnx_model(self.model, self.precision, model_cache(self.cache))
        settings = json.loads((directory / SETTINGS_FILE).read_text(encoding="utf-8"))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = usable_cpus(), 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "1")
        options.add_session_config_entry("session.force_spinning_stop", "1")
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

