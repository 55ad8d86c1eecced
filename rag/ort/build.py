"""Building the ONNX model of the local sentence-transformers model, once per cache, offline.

The model (its whole sentence-transformers pipeline up to the pooled ``sentence_embedding``: the
transformer, with its plain additive attention mask, and its pooling) is exported to ONNX with
``torch.onnx.export``: that is the float32 model (``runtime: onnxruntime``: the same function as the
PyTorch model; measured: docs/measurements.md#onnx-export-and-int8-products). For ``precision: int8`` it also runs once on the
calibration texts (:mod:`rag.ort.calibration`), and every linear layer is rewritten into an int8
product (:mod:`rag.ort.graph`: SmoothQuant, GPTQ weights, one activation scale per token). Why this
recipe: docs/retrievers.md ("int8"), measured with ``scripts/bench_dense.py``.

**Exact products on every CPU.** The integer sums of the rewritten model are exact, so its vectors are
the same math wherever it runs. ONNX Runtime multiplies uint8 activations by *int8* weights with
``VPMADDUBSW`` on x86 CPUs without VNNI (AVX2, AVX-512 before Cascade Lake), which saturates pairs of
products at 16 bits (ONNX Runtime's quantization docs; measured:
docs/measurements.md#onnx-export-and-int8-products). So the weights are int8 only where the CPU has
VNNI or AMX (``vpdpbusd``: 32-bit sums) and uint8 around 128 (the same values, uint8 x uint8 products
with 16-bit inputs: exact) elsewhere (:func:`signed_products_are_exact`); the choice keys the cached
model, not the vectors.

The build runs in a temporary directory renamed into place (atomic: a model directory is whole or
absent) under a lock, so concurrent runs build it once; a temporary directory that a killed build
left behind is removed by the next build (:func:`remove_stale_builds`); its directory under ``<cache_dir>/models/``
is keyed by the sha256 of the model's files, the precision (for int8: :data:`RECIPE` and the weight
format) and the torch/onnx/onnxruntime versions (:func:`onnx_model`). Since the key names everything
the model is built from, any number of caches may share one model directory: the environment
variable :data:`MODEL_CACHE_ENV` names one for every run (:func:`model_cache`), so a second project,
or a fresh ``cache_dir``, reuses the models built before instead of exporting them again.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import platform
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Literal

from rag.errors import BenchError
from rag.io_utils import atomic_write_json, sha256_file, sha256_text
from rag.models import load_tokenizer, resolve_embedding_model

log = logging.getLogger(__name__)

#: What the quantization does (keys the cached model and, through :func:`rag.ort.identity`, the
#: vectors): a change to the export, the calibration or the quantization must change it.
RECIPE = "smoothquant0.5-per-layer-gptq-int8-per-token-uint8"
#: The two models: the export as it is, and its int8 rewrite.
Precision = Literal["float32", "int8"]
ONNX_OPSET = 17  # of the export; the rewrite converts it to rag.ort.graph.OPSET
MODEL_FILE, SETTINGS_FILE = "model.onnx", "encoder.json"
#: x86 CPU flags whose int8 products sum in 32 bits (VNNI, AMX): int8 weights are exact there.
EXACT_SIGNED_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
#: Environment variable naming a model directory that every cache shares (:func:`model_cache`).
MODEL_CACHE_ENV = "RAG_BENCH_MODEL_CACHE"


def model_cache(own: Path, environ: dict[str, str] | None = None) -> Path:
    """Where the ONNX models are built and read: the directory :data:`MODEL_CACHE_ENV` names when it
    is set and not empty (``~`` expanded), else ``own`` (the run's ``<cache_dir>/models``)."""
    shared = (os.environ if environ is None else environ).get(MODEL_CACHE_ENV, "").strip()
    return Path(shared).expanduser() if shared else own


def signed_products_are_exact(cpuinfo: str | None = None) -> bool:
    """Whether ONNX Runtime's uint8 x int8 products are exact on this CPU: x86 with one of
    :data:`EXACT_SIGNED_FLAGS` in ``/proc/cpuinfo`` (``cpuinfo``: its text, for tests). Anywhere else
    (x86 without them, other architectures, no ``/proc/cpuinfo``) the weights go as uint8, exact everywhere."""
    if cpuinfo is None:
        if platform.machine().lower() not in ("x86_64", "amd64"):
            return False
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines() if line.startswith("flags")), [])
    return any(flag in flags for flag in EXACT_SIGNED_FLAGS)


def quantization(precision: Precision, signed_weights: bool) -> dict:
    """What the model's quantization is, for its cache key and its settings file: for int8 the
    :data:`RECIPE` and the weight format, for float32 nothing."""
    return {"recipe": RECIPE, "signed_weights": signed_weights} if precision == "int8" else {}


def model_files_hash(directory: Path) -> str:
    """sha256 over the model directory's files (relative path and content hash, sorted by path)."""
    files = sorted(path for path in directory.rglob("*") if path.is_file())
    return sha256_text(json.dumps([[str(path.relative_to(directory)), sha256_file(path)] for path in files]))


def onnx_model(model: str, precision: Precision, cache: Path) -> Path:
    """The directory of ``model``'s ONNX model in ``precision`` under ``cache`` (built first when absent)."""
    import onnx
    import onnxruntime
    import torch

    source = Path(resolve_embedding_model(model))
    if not source.is_dir():
        raise BenchError(f"the {precision} ONNX model needs the embedding model {model!r} as a local directory "
                         f"(a packaged model or a path); {str(source)!r} is not one")
    signed = precision == "int8" and signed_products_are_exact()
    key = sha256_text(json.dumps({"files": model_files_hash(source), **quantization(precision, signed), "opset": ONNX_OPSET,
                                  "torch": torch.__version__, "onnx": onnx.__version__,
                                  "onnxruntime": onnxruntime.__version__}))[:24]
    target = cache / f"{precision}-{key}"
    if (target / MODEL_FILE).is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{precision}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / MODEL_FILE).is_file():  # another process may have built it meanwhile
            remove_stale_builds(cache, own=target.name)
            log.info("building the %s ONNX model of %s in %s (once, %s)", precision, model, target,
                     "about a minute" if precision == "int8" else "seconds")
            with tempfile.TemporaryDirectory(dir=cache, prefix=f"{BUILDING}{target.name}-") as building:
                build(model, Path(building) / "model", precision, signed)
                os.replace(Path(building) / "model", target)
    return target


#: The prefix of a build's temporary directory: ``.building-<precision>-<key>-<random>`` (the model
#: directory it becomes, then a random part).
BUILDING = ".building-"
#: A temporary directory of the form before builds named their model (``.building-<random>``) is
#: stale once it is this old: no build takes a day.
STALE_UNNAMED_S = 24 * 3600.0


def remove_stale_builds(cache: Path, own: str = "") -> list[Path]:
    """Remove the temporary directories of builds that died without cleaning up (a SIGKILL or a power
    cut skips ``TemporaryDirectory``'s removal: 87 MB each for int8); return what was removed. A
    build's directory names its model directory, whose lock a live build holds: a directory whose lock
    can be taken at once is stale, and so is every one of ``own``, the model whose lock the caller
    holds. One of the older unnamed form is stale after :data:`STALE_UNNAMED_S`."""
    removed = []
    for directory in sorted(cache.glob(f"{BUILDING}*")):
        if not directory.is_dir():
            continue
        name = directory.name[len(BUILDING):]
        model, _, _ = name.rpartition("-")
        if model == own:
            stale = True
        elif model.startswith(("float32-", "int8-")):
            with open(cache / f"{model}.lock", "a") as other:
                try:
                    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its build is running
                stale = True
        else:
            stale = time.time() - directory.stat().st_mtime > STALE_UNNAMED_S
        if stale:
            shutil.rmtree(directory, ignore_errors=True)
            log.info("removed %s, left by a build that did not finish", directory)
            removed.append(directory)
    return removed


def build(model: str, directory: Path, precision: Precision, signed_weights: bool = False) -> None:
    """Export the pooled sentence-transformers model to ONNX (for int8: calibrate and quantize it),
    write its settings."""
    import onnx
    import torch

    from rag.models import load_sentence_transformer
    from rag.ort.calibration import calibration_texts, layer_inputs
    from rag.ort.gptq import gptq
    from rag.ort.graph import quantize_linear_layers

    directory.mkdir()
    st = load_sentence_transformer(model, "cpu").eval()
    st[0].auto_model.set_attn_implementation("eager")  # a plain additive mask, not the sdpa export's Where/IsNaN
    tokenizer = load_tokenizer(resolve_embedding_model(model))
    example = tokenizer(["an example text", "another"], padding=True, return_tensors="pt")
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in example]

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.modules_ = st

        def forward(self, *inputs):
            return self.modules_(dict(zip(names, inputs)))["sentence_embedding"]

    float32, pooled, inputs = directory / "float32.onnx", Pooled(), tuple(example[name] for name in names)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python-side shape checks: not the user's concern
        dimension = pooled(*inputs).shape[-1]
        torch.onnx.export(pooled, inputs, str(float32), input_names=names,
                          output_names=["embedding"], opset_version=ONNX_OPSET, dynamo=False,
                          dynamic_axes={**{name: {0: "batch", 1: "tokens"} for name in names}, "embedding": {0: "batch"}})
    if precision == "int8":
        summaries = layer_inputs(st, tokenizer, calibration_texts())
        layers = {name: (module.weight.detach().numpy().copy(), summaries[name])
                  for name, module in st.named_modules() if name in summaries}
        onnx.save(quantize_linear_layers(onnx.load(str(float32)), layers, gptq, signed_weights), str(directory / MODEL_FILE))
        float32.unlink()
    else:
        float32.rename(directory / MODEL_FILE)
    atomic_write_json(directory / SETTINGS_FILE, {"inputs": names, "max_seq_length": st.max_seq_length,
                                                  "dimension": dimension, "precision": precision,
                                                  **quantization(precision, signed_weights)})
