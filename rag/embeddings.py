"""Sentence embeddings with an on-disk cache keyed by model identity and text hash.

:class:`Embedder` turns texts into L2-normalized float32 vectors (so a dot product is the cosine
similarity). Each text's vector is cached under ``<cache_dir>/<sha256(model id)>/`` by the sha256 of
the text, so a second run encodes nothing and changing one document re-encodes only its chunks.
Vectors are stored in shard files (``.npz``: keys + vectors), each written atomically as soon as its
batch is encoded, so an interrupted run keeps what it finished; shards written meanwhile by another
embedder on the same directory are picked up before encoding; many small shards (e.g. from query
batches) are merged into one when the cache is opened.

The encoder is injected (anything with sentence-transformers' ``encode``), so tests can share one
loaded model; :func:`load_sentence_transformer` loads one offline.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from rag.errors import BenchError
from rag.io_utils import atomic_write_bytes, sha256_text
from rag.models import resolve_embedding_model

MERGE_SHARDS_ABOVE = 32


class Encoder(Protocol):
    """The part of ``sentence_transformers.SentenceTransformer`` we use."""

    def encode(self, sentences: list[str], **kwargs: Any) -> np.ndarray: ...


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a CUDA GPU is available, else ``cpu``; anything else as given."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_sentence_transformer(model: str, device: str = "auto"):
    """A SentenceTransformer loaded offline (packaged MiniLM, a local path, or the local HF cache)."""
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(resolve_embedding_model(model), device=resolve_device(device))
    except OSError as error:
        raise BenchError(f"cannot load embedding model {model!r} offline: {error}") from error


class EmbeddingCache:
    """Vectors by text key (sha256 hex) in ``.npz`` shards under one directory (one model)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self._rows: dict[str, int] = {}
        self._vectors = np.empty((0, 0), dtype=np.float32)
        self._seen_shards: set[str] = set()
        self.refresh()
        shards = sorted(self.directory.glob("shard-*.npz"))
        if len(shards) > MERGE_SHARDS_ABOVE:
            merged = self._write_shard(list(self._rows), self._vectors[list(self._rows.values())])
            self._seen_shards.add(merged.name)
            for shard in shards:
                if shard != merged:
                    shard.unlink(missing_ok=True)

    def refresh(self) -> None:
        """Load the shards not loaded yet (written since, e.g. by another Embedder on this directory)."""
        for shard in sorted(self.directory.glob("shard-*.npz")):
            if shard.name in self._seen_shards:
                continue
            try:
                with np.load(shard) as data:
                    keys = [key.decode("ascii") for key in data["keys"]]
                    vectors = data["vectors"]
            except FileNotFoundError:  # merged away by another process meanwhile
                continue
            self._seen_shards.add(shard.name)
            new = [i for i, key in enumerate(keys) if key not in self._rows]
            self._append([keys[i] for i in new], vectors[new])

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: str) -> bool:
        return key in self._rows

    def get(self, keys: Sequence[str]) -> np.ndarray:
        """The cached vectors of ``keys`` (all must be present), one row per key."""
        return self._vectors[[self._rows[key] for key in keys]]

    def add(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store new vectors: one shard file, then the in-memory table."""
        if not keys:
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        self._seen_shards.add(self._write_shard(keys, vectors).name)
        self._append(keys, vectors)

    def _append(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        if len(self._rows) and vectors.shape[1] != self._vectors.shape[1]:
            raise BenchError(
                f"{self.directory}: cached embeddings have dimension {self._vectors.shape[1]}, "
                f"the model produced {vectors.shape[1]}; delete the directory"
            )
        start = len(self._rows)
        self._vectors = vectors.copy() if start == 0 else np.concatenate([self._vectors, vectors])
        self._rows.update({key: start + i for i, key in enumerate(keys)})

    def _write_shard(self, keys: Sequence[str], vectors: np.ndarray) -> Path:
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.array(keys, dtype="S64"), vectors=vectors)
        return atomic_write_bytes(self.directory / f"shard-{sha256_text(''.join(keys))[:24]}.npz", buffer.getvalue())


class Embedder:
    """Normalized embeddings of texts through an encoder, cached on disk when ``cache_dir`` is set.

    ``model_id`` names the model for the cache key (e.g. its name and max sequence length): two
    encoders with the same ``model_id`` must produce the same vectors.
    """

    def __init__(
        self,
        encoder: Encoder,
        model_id: str,
        batch_size: int = 64,
        cache_dir: str | Path | None = None,
        texts_per_call: int = 1024,
    ):
        self.encoder = encoder
        self.model_id = model_id
        self.batch_size = batch_size
        self.texts_per_call = texts_per_call
        self.cache = EmbeddingCache(Path(cache_dir) / sha256_text(model_id)[:24]) if cache_dir else None

    def embed(self, texts: Sequence[str], desc: str = "embedding") -> np.ndarray:
        """(len(texts), dim) float32 array of unit vectors; only texts not in the cache are encoded.

        Texts to encode are sorted by length (longest first, as sentence-transformers sorts inside
        one ``encode`` call) and sent in calls of ``texts_per_call``, so padding stays minimal and
        each call's vectors are cached as soon as they exist.
        """
        keys = [sha256_text(text) for text in texts]
        if self.cache is not None and any(key not in self.cache for key in keys):
            self.cache.refresh()
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if (self.cache is None or key not in self.cache) and key not in missing:
                missing[key] = text
        encoded = self._encode(missing, desc)
        if self.cache is not None:
            return self.cache.get(keys)
        row = {key: i for i, key in enumerate(missing)}
        return encoded[[row[key] for key in keys]]

    def _encode(self, texts_by_key: dict[str, str], desc: str) -> np.ndarray:
        order = sorted(texts_by_key, key=lambda key: -len(texts_by_key[key]))
        blocks: list[np.ndarray] = []
        with tqdm(total=len(order), desc=desc, unit="text", disable=not order) as progress:
            for start in range(0, len(order), self.texts_per_call):
                batch_keys = order[start : start + self.texts_per_call]
                vectors = self.encoder.encode(
                    [texts_by_key[key] for key in batch_keys],
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ).astype(np.float32, copy=False)
                if self.cache is not None:
                    self.cache.add(batch_keys, vectors)
                blocks.append(vectors)
                progress.update(len(batch_keys))
        if not blocks:
            return np.empty((0, 0), dtype=np.float32)
        stacked = np.concatenate(blocks)
        position = {key: i for i, key in enumerate(order)}
        return stacked[[position[key] for key in texts_by_key]]
