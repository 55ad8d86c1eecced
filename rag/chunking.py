"""Sentence-aware chunking of documents to a token budget, with overlap.

Tokens are counted with the embedding model's own (fast) tokenizer, so a chunk never exceeds what
the embedder reads and nothing is silently truncated. The default budget is 254 word pieces:
all-MiniLM-L6-v2 reads at most 256 (its ``max_seq_length``), two of which are ``[CLS]`` and ``[SEP]``.

Algorithm, per document:

1. split into sentences (:mod:`rag.data.sentences`); each is a character span of the document;
2. count each sentence's tokens from one tokenization of the whole document (offset mapping); a
   sentence longer than ``max_tokens`` is cut into pieces at word starts (at token boundaries only
   for a single word longer than the budget);
3. pack pieces greedily into chunks of at most ``max_tokens``; a new chunk starts with the trailing
   whole sentences of the previous chunk that fit in ``overlap_tokens`` (overlap), dropping carried
   sentences from the front if the next sentence would not fit otherwise;
4. a last chunk shorter than ``min_tokens`` is merged into the previous one when the result fits;
   a document shorter than ``min_tokens`` is kept as one chunk (nothing is ever dropped).

A chunk's text is the verbatim slice of the document from its first sentence's start to its last
sentence's end. Its id is ``f"{doc_id}#{position}"`` (position 0, 1, ... within the document), and
``Chunk.url`` is the document URL (the chunk -> URL mapping used by URL-level metrics). Every chunk
is re-tokenized at the end and ``n_tokens`` is that exact count (special tokens excluded).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, model_validator

from rag.data.sentences import sentence_spans
from rag.errors import BenchError, ConfigError
from rag.io_utils import atomic_write_json, sha256_strings, sha256_text
from rag.models import DEFAULT_EMBEDDING_MODEL, load_tokenizer, resolve_embedding_model
from rag.progress import progress as progress_bar
from rag.types import Chunk, Document
from rag.validation import ConfigModel

log = logging.getLogger(__name__)


class ChunkingConfig(ConfigModel):
    """Chunking settings. Token counts exclude the tokenizer's special tokens."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int = Field(254, ge=8, description="token budget of one chunk (without [CLS]/[SEP])")
    overlap_tokens: int = Field(50, ge=0, description="at most this many tokens of whole sentences repeated")
    min_tokens: int = Field(20, ge=0, description="a shorter last chunk is merged into the previous one")
    tokenizer: str = Field(DEFAULT_EMBEDDING_MODEL, description="embedding model name or path")

    @model_validator(mode="after")
    def _check_sizes(self) -> ChunkingConfig:
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError(f"overlap_tokens ({self.overlap_tokens}) must be less than max_tokens ({self.max_tokens})")
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens ({self.min_tokens}) must not exceed max_tokens ({self.max_tokens})")
        return self


TOKENIZE_BATCH = 1024  # documents (or chunks) per call of the fast tokenizer


@dataclass(frozen=True)
class _Piece:
    """A sentence (or part of an over-long sentence): a character span and its token count."""

    start: int
    end: int
    n_tokens: int


def embedder_token_limit(tokenizer: Any, model: str) -> int:
    """Longest input (special tokens included) the embedder reads without truncation.

    sentence-transformers truncates at ``max_seq_length`` from ``sentence_bert_config.json`` (256 for
    all-MiniLM-L6-v2), which is stricter than the tokenizer's ``model_max_length`` (512).
    """
    limit = int(getattr(tokenizer, "model_max_length", 1 << 30))
    config_file = Path(resolve_embedding_model(model)) / "sentence_bert_config.json"
    if config_file.is_file():
        limit = min(limit, int(json.loads(config_file.read_text()).get("max_seq_length", limit)))
    return limit


def _word_starts(text: str, offsets: Sequence[tuple[int, int]]) -> list[bool]:
    return [start == 0 or text[start - 1].isspace() for start, _ in offsets]


def _sentence_pieces(
    text: str, span: tuple[int, int], offsets: Sequence[tuple[int, int]],
    token_starts: list[int], word_start: list[bool], max_tokens: int,
) -> list[_Piece]:
    """One piece for a sentence within budget; else pieces cut at word starts (token boundaries)."""
    first, last = bisect_left(token_starts, span[0]), bisect_left(token_starts, span[1])
    if last - first <= max_tokens:
        return [_Piece(span[0], span[1], last - first)]
    pieces = []
    begin = first
    while begin < last:
        stop = min(begin + max_tokens, last)
        if stop < last:
            cut = next((i for i in range(stop, begin, -1) if word_start[i]), stop)
            stop = cut
        end_char = span[1] if stop == last else offsets[stop - 1][1]
        start_char = span[0] if begin == first else offsets[begin][0]
        pieces.append(_Piece(start_char, end_char, stop - begin))
        begin = stop
    return pieces


def _pack(pieces: list[_Piece], config: ChunkingConfig) -> list[list[_Piece]]:
    """Greedy packing with sentence overlap and tail merging (steps 3 and 4 of the module doc)."""
    chunks: list[list[_Piece]] = []
    current: list[_Piece] = []
    carried = 0  # how many leading pieces of ``current`` repeat the previous chunk
    for piece in pieces:
        if current and sum(p.n_tokens for p in current) + piece.n_tokens > config.max_tokens:
            chunks.append(current)
            overlap: list[_Piece] = []
            for previous in reversed(current):
                if sum(p.n_tokens for p in overlap) + previous.n_tokens > config.overlap_tokens:
                    break
                overlap.insert(0, previous)
            while overlap and sum(p.n_tokens for p in overlap) + piece.n_tokens > config.max_tokens:
                overlap.pop(0)
            current, carried = overlap, len(overlap)
        current.append(piece)
    if current:
        new_part = current[carried:]
        tail_tokens = sum(p.n_tokens for p in current)
        if chunks and tail_tokens < config.min_tokens and (
            sum(p.n_tokens for p in chunks[-1]) + sum(p.n_tokens for p in new_part) <= config.max_tokens
        ):
            chunks[-1] = chunks[-1] + new_part
        else:
            chunks.append(current)
    return chunks


def _tokenize(tokenizer: Any, texts: list[str], offsets: bool) -> Any:
    return tokenizer(
        texts, add_special_tokens=False, return_offsets_mapping=offsets,
        return_attention_mask=False, return_token_type_ids=False, verbose=False,
    )


def chunk_documents(
    documents: Sequence[Document], config: ChunkingConfig | None = None, tokenizer: Any = None,
    progress: bool = True,
) -> list[Chunk]:
    """Split ``documents`` into chunks (see the module docstring); order: by document, then position.

    ``tokenizer`` (a Hugging Face *fast* tokenizer) defaults to the one of ``config.tokenizer``.
    Raises :class:`ConfigError` when the budget does not fit the embedder's input window.
    """
    config = config or ChunkingConfig()
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer(config.tokenizer)
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError("chunking.tokenizer", f"{config.tokenizer!r} has no fast tokenizer (offsets are needed)")
    window = embedder_token_limit(tokenizer, config.tokenizer)
    specials = tokenizer.num_special_tokens_to_add()
    if config.max_tokens + specials > window:
        raise ConfigError(
            "chunking.max_tokens",
            f"{config.max_tokens} + {specials} special tokens exceeds the embedder's window of {window} "
            f"tokens; the embedder would truncate chunks (use at most {window - specials})",
        )
    chunks: list[Chunk] = []
    for document, offsets in progress_bar(
        _offsets_in_batches(tokenizer, documents), total=len(documents), desc="chunking", unit="doc", enabled=progress
    ):
        text = document.text
        token_starts = [start for start, _ in offsets]
        word_start = _word_starts(text, offsets) + [True]
        pieces = [
            piece
            for span in sentence_spans(text)
            for piece in _sentence_pieces(text, span, offsets, token_starts, word_start, config.max_tokens)
        ]
        for position, group in enumerate(_pack(pieces, config)):
            chunks.append(Chunk(
                chunk_id=f"{document.doc_id}#{position}", doc_id=document.doc_id, url=document.url,
                text=text[group[0].start:group[-1].end], position=position,
                n_tokens=sum(p.n_tokens for p in group),
            ))
    return _recount(chunks, tokenizer, config.max_tokens)


def _offsets_in_batches(tokenizer: Any, documents: Sequence[Document]):
    """(document, its tokens' character offsets), tokenized :data:`TOKENIZE_BATCH` documents at a
    time, so the offsets of the whole corpus never exist at once."""
    for first in range(0, len(documents), TOKENIZE_BATCH):
        batch = documents[first : first + TOKENIZE_BATCH]
        yield from zip(batch, _tokenize(tokenizer, [document.text for document in batch], offsets=True)["offset_mapping"])


def _recount(chunks: list[Chunk], tokenizer: Any, max_tokens: int) -> list[Chunk]:
    """Re-tokenize every chunk; store the exact count; fail loudly if one is over budget."""
    counts = [
        len(ids)
        for first in range(0, len(chunks), TOKENIZE_BATCH)
        for ids in _tokenize(tokenizer, [c.text for c in chunks[first : first + TOKENIZE_BATCH]], offsets=False)["input_ids"]
    ]
    result = []
    for chunk, count in zip(chunks, counts):
        if count > max_tokens:
            raise BenchError(
                f"chunk {chunk.chunk_id} re-tokenizes to {count} tokens (budget {max_tokens}): this tokenizer "
                "merges text across white space; lower chunking.max_tokens"
            )
        result.append(chunk if count == chunk.n_tokens else Chunk(
            chunk.chunk_id, chunk.doc_id, chunk.url, chunk.text, chunk.position, count))
    return result


def documents_fingerprint(documents: Sequence[Document]) -> str:
    """SHA-256 over every document's id, URL, title and text, in order."""
    return sha256_strings(part for d in documents for part in (d.doc_id, d.url, d.title, d.text))


def cached_chunks(
    documents: Sequence[Document], config: ChunkingConfig, cache_dir: Path, progress: bool = True,
) -> tuple[list[Chunk], str]:
    """Chunk the documents, or read the chunks cached under ``cache_dir/chunks`` for the same documents
    and settings; returns the chunks and their fingerprint (SHA-256 over ids, URLs and texts)."""
    key = sha256_text(documents_fingerprint(documents) + config.model_dump_json())
    path = Path(cache_dir) / "chunks" / f"{key[:32]}.json"
    chunks: list[Chunk] | None = None
    if path.is_file():
        try:
            chunks = [Chunk(**record) for record in json.loads(path.read_text(encoding="utf-8"))]
        except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as exc:
            log.warning("ignoring unreadable chunk cache %s (%s)", path, exc)
    if chunks is None:
        chunks = chunk_documents(documents, config, progress=progress)
        atomic_write_json(path, [dataclasses.asdict(chunk) for chunk in chunks], indent=None)
    fingerprint = sha256_strings(part for c in chunks for part in (c.chunk_id, c.url, c.text))
    return chunks, fingerprint
