"""Encoders for the dense retriever: texts -> vectors, locally or from an embeddings endpoint.

A dense retriever's ``embedder`` (its params) selects one, through :data:`ENCODERS`:

``type: sentence_transformers`` (default)
    the sentence-transformers model ``model`` loaded offline on ``device``, on the first text that
    has to be encoded (a fully cached run never loads it).
``type: openai``
    any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (Hugging Face text-embeddings-
    inference, vLLM, Infinity, Ollama, OpenAI) serving ``model``. Texts go in requests of
    ``batch_size``, ``concurrency`` at a time, by the rules every endpoint shares (:mod:`rag.endpoints`): the ``openai``
    client (its own retries off), a hard per-attempt deadline ``timeout_s``, retries of retryable
    failures with ``Retry-After`` or seeded backoff (:func:`rag.endpoints.retry.retrying`), and
    the key read from the environment variable named by ``api_key_env`` — never from the config,
    never written anywhere; error messages are redacted. A batch still failing after
    ``max_retries`` retries stops the run with one line; the batches already stored are kept.

Every encoder returns L2-normalized float32 rows (an endpoint's vectors are normalized here, in
float64). :meth:`identity` names the vectors in the embedding store (:mod:`rag.embeddings`): the
model name for the local model, ``openai:<model>`` for an endpoint (so endpoint vectors never mix
with locally computed ones; endpoints serving the same model name share them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

import numpy as np
import openai
from pydantic import Discriminator, Tag, model_serializer, model_validator

from rag.endpoints.clients import NO_KEY_PLACEHOLDER, ClientFactory, default_client_factory
from rag.endpoints.keys import endpoint_api_key
from rag.endpoints.pool import all_or_nothing
from rag.endpoints.retry import Backoff, RequestFailure, classify, retry_logger, retrying
from rag.endpoints.settings import EndpointSettings
from rag.errors import BenchError
from rag.models import load_sentence_transformer, resolve_device, resolve_embedding_model
from rag.ort import OnnxEncoder
from rag.ort import identity as onnx_identity
from rag.registry import Registry
from rag.secrets import Redactor
from rag.validation import ConfigModel

log = logging.getLogger(__name__)




class SentenceTransformersEmbedderConfig(ConfigModel):
    """The local sentence-transformers model (the dense retriever's ``model`` and ``device``).

    ``precision``: ``float32`` runs the model as it is; ``int8`` runs its ONNX Runtime int8
    quantization on the CPU (:mod:`rag.ort`), with vectors kept apart in the embedding store
    (their own identity).

    ``runtime``: what runs a float32 model: ``pytorch`` (on ``device``), ``onnxruntime`` (its ONNX
    export on the CPU, :mod:`rag.ort`: the same function, so the same store identity;
    docs/retrievers.md, "ONNX Runtime"), or unset: :func:`runs_on_onnxruntime` chooses (ONNX Runtime
    on the CPU, PyTorch on a GPU). int8 always runs on ``onnxruntime``."""

    type: Literal["sentence_transformers"] = "sentence_transformers"
    precision: Literal["float32", "int8"] = "float32"
    runtime: Literal["pytorch", "onnxruntime"] | None = None

    @model_validator(mode="after")
    def _int8_runs_on_onnxruntime(self) -> "SentenceTransformersEmbedderConfig":
        if self.precision == "int8" and self.runtime == "pytorch":
            raise ValueError("precision int8 runs on runtime onnxruntime only (leave runtime out or set it to onnxruntime)")
        return self

    @property
    def on_onnxruntime(self) -> bool:
        """Whether the config asks for ONNX Runtime (int8, or float32 with ``runtime: onnxruntime``);
        with ``runtime`` unset, :func:`runs_on_onnxruntime` decides by device and model."""
        return self.precision == "int8" or self.runtime == "onnxruntime"

    @model_serializer(mode="wrap")
    def _defaults_unsaid(self, handler) -> dict:
        """float32 and an unset runtime are left out of dumps, so run plans and cache keys written
        before ``precision`` and ``runtime`` existed stay valid."""
        data = handler(self)
        if self.precision == "float32":
            data.pop("precision", None)
        if self.runtime is None:
            data.pop("runtime", None)
        return data

    def identity(self, model: str) -> str:
        return onnx_identity(model, self.precision)


class OpenAIEmbedderConfig(EndpointSettings):
    """An OpenAI-compatible embeddings endpoint serving the dense retriever's ``model``."""

    type: Literal["openai"] = "openai"

    def identity(self, model: str) -> str:
        return f"openai:{model}"


def _embedder_type(value: Any) -> str | None:
    """The ``type`` of an embedder setting; omitted, the local model (``embedder: {precision: int8}``)."""
    if isinstance(value, Mapping):
        return value.get("type", "sentence_transformers")
    return getattr(value, "type", None)


EmbedderConfig = Annotated[
    Union[Annotated[SentenceTransformersEmbedderConfig, Tag("sentence_transformers")],
          Annotated[OpenAIEmbedderConfig, Tag("openai")]],
    Discriminator(_embedder_type),
]

ENCODERS: Registry[Any] = Registry("embedder")


#: Texts per forward pass of a local model when the config names none: on CPU a small batch keeps a
#: layer's activations in cache; a GPU wants large batches. measured: docs/measurements.md#cpu-batch-size
CPU_BATCH_SIZE, GPU_BATCH_SIZE = 8, 64
#: Texts per request to an embeddings endpoint when the config names none.
ENDPOINT_BATCH_SIZE = 64


def runs_on_onnxruntime(config: SentenceTransformersEmbedderConfig, model: str, device: str) -> bool:
    """Whether ``model`` runs on ONNX Runtime: where the config asks for it (int8, ``runtime:
    onnxruntime``), and with ``runtime`` unset where the model is a local directory (the packaged
    MiniLM, a path: what the export reads) and ``device`` resolves to the CPU. There ONNX Runtime
    computes the same vectors as PyTorch, faster (measured: docs/retrievers.md#onnx-runtime-float32);
    a GPU, or a model known only by its hub name, runs on PyTorch."""
    if config.on_onnxruntime:
        return True
    if config.runtime == "pytorch":
        return False
    return Path(resolve_embedding_model(model)).is_dir() and resolve_device(device) == "cpu"


@ENCODERS.register("sentence_transformers")
class SentenceTransformersEncoder:
    """Loads the sentence-transformers model, or builds and loads its ONNX model, on the first
    ``encode`` call (cached runs never do); which runs it: :func:`runs_on_onnxruntime`, decided then."""

    def __init__(self, config: SentenceTransformersEmbedderConfig, model: str, device: str):
        self.config, self.model, self.device = config, model, device
        self._model_cache: Path | None = None

    @cached_property
    def onnx(self) -> OnnxEncoder | None:
        """The ONNX Runtime encoder, or None where PyTorch runs the model."""
        if not runs_on_onnxruntime(self.config, self.model, self.device):
            return None
        return OnnxEncoder(self.model, self.config.precision, self._model_cache)

    def use_model_cache(self, directory: Path) -> None:
        """Where the ONNX model is built and kept (``<cache_dir>/models``); PyTorch needs none."""
        self._model_cache = directory
        if "onnx" in self.__dict__ and self.onnx is not None:
            self.onnx.cache = directory

    @cached_property
    def loaded(self):
        """The SentenceTransformer itself, loaded on first use."""
        return load_sentence_transformer(self.model, self.device)

    @property
    def default_batch_size(self) -> int:
        """:data:`CPU_BATCH_SIZE` when the model runs on CPU (ONNX Runtime always does), :data:`GPU_BATCH_SIZE` elsewhere."""
        return CPU_BATCH_SIZE if self.onnx is not None or self.loaded.device.type == "cpu" else GPU_BATCH_SIZE

    def encode(self, sentences: list[str], batch_size: int | None = None, **kwargs: Any) -> np.ndarray:
        """``batch_size`` None: :attr:`default_batch_size`."""
        if self.onnx is not None:
            return self.onnx.encode(sentences, batch_size=batch_size or self.default_batch_size, **kwargs)
        return self.loaded.encode(sentences, batch_size=batch_size or self.default_batch_size, **kwargs)


@ENCODERS.register("openai")
class EndpointEncoder:
    """Vectors from ``POST {base_url}/embeddings``; see the module docstring. Constructing one does
    no I/O (the config is instantiated several times per run); the client exists during ``encode``."""

    backoff_seed: ClassVar[int] = 0

    def __init__(
        self,
        config: OpenAIEmbedderConfig,
        model: str,
        device: str = "auto",
        client_factory: ClientFactory = default_client_factory,
    ):
        self.config = config
        self.model = model
        self._api_key = endpoint_api_key(config.api_key_env, config.base_url, "embedder.api_key_env")
        self._redactor = Redactor([self._api_key] if self._api_key else [])
        self._client_factory = client_factory
        self._backoff = Backoff(config.backoff, self.backoff_seed)
        self.requests = 0  # attempts sent, for tests and logs

    def encode(self, sentences: list[str], batch_size: int | None = None, **_ignored: Any) -> np.ndarray:
        """Unit vectors of ``sentences``, one row each, in order, ``batch_size`` texts per request
        (None: :data:`ENDPOINT_BATCH_SIZE`); ``normalize_embeddings`` and the other
        sentence-transformers options are accepted and ignored: rows are always normalized."""
        if not sentences:
            return np.empty((0, 0), dtype=np.float32)
        batch_size = batch_size or ENDPOINT_BATCH_SIZE
        batches = [list(sentences[start : start + batch_size]) for start in range(0, len(sentences), batch_size)]
        vectors = np.concatenate(asyncio.run(self._encode_all(batches))).astype(np.float64)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise BenchError(f"embeddings endpoint {self.config.base_url}: returned a zero or non-finite vector")
        return (vectors / norms).astype(np.float32)

    async def _encode_all(self, batches: list[list[str]]) -> list[np.ndarray]:
        client = self._client_factory(self.config.base_url, self._api_key or NO_KEY_PLACEHOLDER)
        try:
            return await all_or_nothing(len(batches), self.config.concurrency,
                                        lambda index: self._request(client, batches[index]))
        finally:
            await client.close()

    async def _request(self, client: openai.AsyncOpenAI, texts: list[str]) -> np.ndarray:
        try:
            async for attempt in retrying(self.config.max_retries, self._backoff, retry_logger(log, "embeddings request")):
                with attempt:
                    vectors = await self._attempt(client, texts)
        except RequestFailure as failure:
            raise BenchError(
                f"embeddings endpoint {self.config.base_url} (model {self.model!r}): {failure} "
                f"(gave up after {attempt.retry_state.attempt_number} attempt(s))"
            ) from None
        return vectors

    async def _attempt(self, client: openai.AsyncOpenAI, texts: list[str]) -> np.ndarray:
        """One request; every failure leaves as a :class:`RequestFailure`."""
        self.requests += 1
        try:
            async with asyncio.timeout(self.config.timeout_s):
                response = await client.embeddings.create(model=self.model, input=texts, timeout=self.config.timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified into retryable / final failures
            raise classify(exc, self._redactor) from None
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != len(texts):
            got = len(data) if isinstance(data, list) else type(data).__name__
            raise RequestFailure("malformed_response", f"expected {len(texts)} embeddings, got {got}", True)
        ordered = sorted(data, key=lambda item: getattr(item, "index", -1))
        if [getattr(item, "index", None) for item in ordered] != list(range(len(texts))):
            raise RequestFailure("malformed_response", "the embeddings' indexes are not 0..n-1", True)
        try:
            vectors = np.array([item.embedding for item in ordered], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise RequestFailure("malformed_response", f"embeddings are not equal-length number lists ({exc})", True) from None
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise RequestFailure("malformed_response", f"embeddings of shape {vectors.shape}", True)
        return vectors

def build_encoder(config: SentenceTransformersEmbedderConfig | OpenAIEmbedderConfig, model: str, device: str, **injected):
    """The encoder ``config.type`` names, for ``model`` (``injected``: e.g. a test's client factory)."""
    return ENCODERS.get(config.type, key="embedder.type")(config, model, device, **injected)
