"""Sentence embeddings with a shared, content-addressed on-disk store.

:class:`Embedder` turns texts into L2-normalized float32 vectors (so a dot product is the cosine
similarity) through an encoder (:mod:`rag.encoders`: the local sentence-transformers model or an
OpenAI-compatible endpoint). Vectors are kept in an :class:`EmbeddingStore`:
``<cache_dir>/embeddings/<sha256(model identity)[:24]>/``, one directory per model identity
(``MODEL`` names it), shared by every dense retriever and every run that uses that model. Inside,
each text's vector is found by the sha256 of the text, so a second run encodes nothing, changing
one document re-encodes only its chunks, and two retrievers with the same model encode each text
once.

Durability: texts are encoded in calls of ``texts_per_call`` and each call's vectors are written at
once as one shard file (``shard-<hash>.npz``: keys + vectors) through an atomic rename, so a shard
is either whole or absent. An interruption of any kind (Ctrl-C, kill -9, a crash, a failed request)
loses at most the call in flight; the next run encodes only the texts no shard holds. Shards
written meanwhile by another process are picked up before encoding. A shard that cannot be read
(damaged on disk) is reported, deleted and its texts encoded again. When more than
:data:`MERGE_SHARDS_ABOVE` small shards (fewer than :data:`SMALL_SHARD_ROWS` rows, e.g. from query
batches) accumulate they are merged, a group at a time, when the store is opened.

Memory: the store keeps only the key -> (shard, row) table; vectors are read from their shards
when asked for.
"""

from __future__ import annotations

import io
import logging
import zipfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from rag.progress import progress as progress_bar

from rag.errors import BenchError
from rag.io_utils import atomic_write_bytes, atomic_write_text, sha256_text

log = logging.getLogger(__name__)

MERGE_SHARDS_ABOVE = 32
SMALL_SHARD_ROWS = 256
MERGED_SHARD_ROWS = 4096
MODEL_FILE = "MODEL"
_UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)


class Encoder(Protocol):
    """What :class:`Embedder` needs (sentence-transformers' ``encode`` signature)."""

    def encode(self, sentences: list[str], **kwargs: Any) -> np.ndarray: ...


class EmbeddingStore:
    """Vectors of one model by text key (sha256 hex), in ``.npz`` shards under one directory."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._shards: list[Path] = []
        self._rows: list[int] = []  # rows per shard
        self._where: dict[str, tuple[int, int]] = {}  # key -> (shard number, row)
        self.dimension: int | None = None
        self.refresh()
        self._merge_small_shards()

    @classmethod
    def for_model(cls, root: str | Path, identity: str) -> "EmbeddingStore":
        """The store of model ``identity`` under ``root`` (``<root>/<sha256(identity)[:24]>``)."""
        directory = Path(root) / sha256_text(identity)[:24]
        if not (directory / MODEL_FILE).is_file():
            atomic_write_text(directory / MODEL_FILE, identity + "\n")
        return cls(directory)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, key: str) -> bool:
        return key in self._where

    def refresh(self) -> None:
        """Index the shards not indexed yet (written since, e.g. by another process)."""
        known = set(self._shards)
        for shard in sorted(self.directory.glob("shard-*.npz")):
            if shard in known:
                continue
            try:
                with np.load(shard) as data:
                    keys = [key.decode("ascii") for key in data["keys"]]
            except FileNotFoundError:  # merged away by another process meanwhile
                continue
            except _UNREADABLE as error:
                self._discard(shard, error)
                continue
            number = len(self._shards)
            self._shards.append(shard)
            self._rows.append(len(keys))
            for row, key in enumerate(keys):
                self._where.setdefault(key, (number, row))

    def get(self, keys: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``keys`` (all must be present), one row per key, float32."""
        try:
            return self._gather(keys)
        except FileNotFoundError:  # another process merged a shard away: index the directory again
            self._reindex()
            return self._gather(keys)

    def _gather(self, keys: Sequence[str]) -> np.ndarray:
        by_shard: dict[int, list[int]] = defaultdict(list)
        for position, key in enumerate(keys):
            by_shard[self._where[key][0]].append(position)
        out = np.empty((len(keys), self.dimension or 0), dtype=np.float32)
        for number, positions in by_shard.items():
            vectors = self._vectors(number)
            if out.shape[1] != vectors.shape[1]:
                out = np.empty((len(keys), vectors.shape[1]), dtype=np.float32)
            out[positions] = vectors[[self._where[keys[p]][1] for p in positions]]
        return out

    def add(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store new vectors as one shard (written atomically before it is indexed)."""
        if not keys:
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        self._check_dimension(vectors.shape[1])
        shard = self._write_shard(keys, vectors)
        number = len(self._shards)
        self._shards.append(shard)
        self._rows.append(len(keys))
        for row, key in enumerate(keys):
            self._where.setdefault(key, (number, row))

    def _vectors(self, number: int) -> np.ndarray:
        shard = self._shards[number]
        try:
            with np.load(shard) as data:
                vectors = data["vectors"]
        except FileNotFoundError:
            raise
        except _UNREADABLE as error:
            raise BenchError(f"{shard}: embedding shard became unreadable while in use ({error}); run again") from None
        self._check_dimension(vectors.shape[1])
        return vectors

    def _check_dimension(self, dimension: int) -> None:
        if self.dimension is None:
            self.dimension = dimension
        elif dimension != self.dimension:
            raise BenchError(
                f"{self.directory}: stored embeddings have dimension {self.dimension}, got {dimension}; "
                "two different models share one identity (delete the directory)"
            )

    def _discard(self, shard: Path, error: BaseException) -> None:
        log.warning("embedding store: deleting unreadable shard %s (%s); its texts will be encoded again", shard, error)
        shard.unlink(missing_ok=True)

    def _write_shard(self, keys: Sequence[str], vectors: np.ndarray) -> Path:
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.array(keys, dtype="S64"), vectors=vectors)
        return atomic_write_bytes(self.directory / f"shard-{sha256_text(''.join(keys))[:24]}.npz", buffer.getvalue())

    def _merge_small_shards(self) -> None:
        """Merge small shards in groups of up to :data:`MERGED_SHARD_ROWS` rows: each merged shard
        is written before its sources are deleted, so a crash in between only leaves duplicates."""
        small = [number for number, rows in enumerate(self._rows) if rows < SMALL_SHARD_ROWS]
        if len(small) <= MERGE_SHARDS_ABOVE:
            return
        keys_of: dict[int, list[tuple[int, str]]] = {number: [] for number in small}
        for key, (number, row) in self._where.items():
            if number in keys_of:
                keys_of[number].append((row, key))
        groups: list[list[int]] = [[]]
        rows_in_group = 0
        for number in small:
            if groups[-1] and rows_in_group + self._rows[number] > MERGED_SHARD_ROWS:
                groups.append([])
                rows_in_group = 0
            groups[-1].append(number)
            rows_in_group += self._rows[number]
        try:
            for group in groups:
                keys = [key for number in group for _, key in sorted(keys_of[number])]
                merged = self._write_shard(keys, self._gather(keys))
                for number in group:
                    if self._shards[number] != merged:
                        self._shards[number].unlink(missing_ok=True)
        except FileNotFoundError:  # another process is merging the same shards: leave the rest to it
            pass
        self._reindex()

    def _reindex(self) -> None:
        self._shards, self._rows, self._where = [], [], {}
        self.refresh()


class Embedder:
    """Normalized embeddings of texts through ``encoder``, kept in ``store`` when one is given;
    ``batch_size`` None leaves the batch to the encoder (see :mod:`rag.encoders`)."""

    def __init__(
        self,
        encoder: Encoder,
        store: EmbeddingStore | None = None,
        batch_size: int | None = None,
        texts_per_call: int = 1024,
    ):
        self.encoder = encoder
        self.store = store
        self.batch_size = batch_size
        self.texts_per_call = texts_per_call
        self.texts_encoded = 0  # over this embedder's life: what a resumed build had left to do

    def embed(self, texts: Sequence[str], desc: str = "embedding") -> np.ndarray:
        """(len(texts), dim) float32 array of unit vectors; only texts not in the store are encoded.

        Texts to encode are sorted by length (longest first, as sentence-transformers sorts inside
        one ``encode`` call) and sent in calls of ``texts_per_call``, so padding stays minimal and
        each call's vectors are stored (one shard) as soon as they exist.
        """
        keys = [sha256_text(text) for text in texts]
        if self.store is not None and any(key not in self.store for key in keys):
            self.store.refresh()
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if (self.store is None or key not in self.store) and key not in missing:
                missing[key] = text
        encoded = self._encode(missing, desc)
        if self.store is not None:
            return self.store.get(keys)
        row = {key: i for i, key in enumerate(missing)}
        return encoded[[row[key] for key in keys]]

    def _encode(self, texts_by_key: dict[str, str], desc: str) -> np.ndarray:
        order = sorted(texts_by_key, key=lambda key: -len(texts_by_key[key]))
        blocks: list[np.ndarray] = []
        with progress_bar(total=len(order), desc=desc, unit="text", enabled=bool(order)) as progress:
            for start in range(0, len(order), self.texts_per_call):
                batch_keys = order[start : start + self.texts_per_call]
                vectors = self.encoder.encode(
                    [texts_by_key[key] for key in batch_keys],
                    **({} if self.batch_size is None else {"batch_size": self.batch_size}),
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ).astype(np.float32, copy=False)
                if self.store is not None:
                    self.store.add(batch_keys, vectors)
                else:
                    blocks.append(vectors)
                self.texts_encoded += len(batch_keys)
                progress.update(len(batch_keys))
        if not blocks:
            return np.empty((0, 0), dtype=np.float32)
        stacked = np.concatenate(blocks)
        position = {key: i for i, key in enumerate(order)}
        return stacked[[position[key] for key in texts_by_key]]
