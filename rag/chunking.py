"""Sentence-aware, heading-aware chunking of documents to a token budget, with overlap.

Tokens are counted with the embedding model's own (fast) tokenizer, so a chunk never exceeds what
the embedder reads and nothing is silently truncated. The default budget is 254 word pieces:
all-MiniLM-L6-v2 reads at most 256 (its ``max_seq_length``), two of which are ``[CLS]`` and ``[SEP]``.

Algorithm, per document:

1. split into sections at Markdown headings (:mod:`rag.text.sections`; ``headings: false``: one
   section). No chunk crosses a section boundary, except by this rule: a section of fewer than
   ``min_section_tokens`` tokens, at most half of ``max_tokens`` (a heading with no text of its own,
   or with one line under it, say) is joined to the section before it (its parent when it is a first
   child, else its previous sibling or that sibling's last subsection), never to a sibling after it,
   whose chunk it would otherwise be found in (gtk-doc's short "Returns" of one function in the chunk
   of the next function); a short section whose next section is its own first child is joined by
   that child instead, and by its next children while they are short together (a heading with no
   text of its own goes with what it heads). A short first section with no child after it is a
   chunk of its own;
2. split each section into sentences (:mod:`rag.text.sentences`); each is a character span of the
   document (a sentence of more than :data:`SPAN_CHARS` characters is first cut at white space);
3. count each sentence's tokens from its own tokenization (offset mapping), the sentences of
   consecutive documents tokenized together in batches of at most :data:`TOKENIZE_CHARS`
   characters, so the tokenizer's memory is bounded by a batch, not by the document (a WordPiece tokenizer splits at
   white space first, so these are the tokens of the
   whole document); a sentence longer than ``max_tokens`` is cut into pieces at word starts (at
   token boundaries only for a single word longer than the budget);
4. pack a section's pieces greedily into chunks of at most ``max_tokens``; a new chunk starts with the
   trailing whole sentences of the previous chunk that fit in ``overlap_tokens`` (overlap), dropping
   carried sentences from the front if the next sentence would not fit otherwise;
5. a last chunk shorter than ``min_tokens`` is merged into the previous one when the result fits;
   a document shorter than ``min_tokens`` is kept as one chunk (nothing is ever dropped).

A chunk's text is the verbatim slice of the document from its first sentence's start to its last
sentence's end; with ``section_prefix`` it is preceded by the chunk's section label and a blank line
(a contextual chunk header, at most a quarter of ``max_tokens``; the text's budget shrinks by the
tokens of the longest label of the joined sections). ``Chunk.section`` is that label,
``"Title › Section › Subsection"``, in either case: the headings that every sentence of the chunk lies
under (the common start of their sections' heading paths), so a chunk holding a joined section is
labelled by the parent they share; a heading line alone counts as lying under its subsection's path,
which names it. Its id is
``f"{doc_id}#{position}"`` (position 0, 1, ... within the document), and ``Chunk.url`` is the document
URL (the chunk -> URL mapping used by URL-level metrics). Every chunk is re-tokenized at the end and
``n_tokens`` is that exact count (special tokens excluded).

Documents without heading lines (the bundled Wikipedia summaries) are chunked exactly as before
headings existed; the chunk cache is keyed by every setting (``ChunkingConfig.model_dump_json``), so
``headings`` and ``section_prefix`` can be swept like the sizes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from rag.code_version import code_version
from rag.text.sections import Section, section_label, sections
from rag.text.sentences import sentence_spans
from rag.errors import BenchError, ConfigError
from rag.io_utils import atomic_write_json, sha256_strings, sha256_text
from rag.models import DEFAULT_EMBEDDING_MODEL, load_tokenizer, resolve_embedding_model
from rag.progress import progress as progress_bar
from rag.types import Chunk, Document
from rag.validation import ConfigModel

log = logging.getLogger(__name__)


class ChunkingConfig(ConfigModel):
    """Chunking settings. Token counts exclude the tokenizer's special tokens."""

    max_tokens: int = Field(254, ge=8, description="token budget of one chunk (without [CLS]/[SEP])")
    overlap_tokens: int = Field(50, ge=0, description="at most this many tokens of whole sentences repeated")
    min_tokens: int = Field(20, ge=0, description="a shorter last chunk is merged into the previous one")
    min_section_tokens: int = Field(
        50, ge=0, description="a shorter section (a heading and a line, say) is joined to the one before it (its parent "
                              "or previous sibling), never to the next; at most half of max_tokens is used; documents "
                              "without headings are one section and are not affected")
    tokenizer: str = Field(DEFAULT_EMBEDDING_MODEL, description="embedding model name or path")
    headings: bool = Field(True, description="no chunk crosses a Markdown heading: documents are chunked section by section")
    section_prefix: bool = Field(
        False, description="prepend the chunk's section label ('Title › Section › Subsection') and a blank line to "
                           "its text (contextual chunk headers); the label's tokens count against max_tokens")

    @model_validator(mode="after")
    def _check_sizes(self) -> ChunkingConfig:
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError(f"overlap_tokens ({self.overlap_tokens}) must be less than max_tokens ({self.max_tokens})")
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens ({self.min_tokens}) must not exceed max_tokens ({self.max_tokens})")
        return self


TOKENIZE_BATCH = 256  # chunks per call of the fast tokenizer when they are recounted
TOKENIZE_CHARS = 1 << 16  # characters of sentences per call of the fast tokenizer
SPAN_CHARS = 1 << 15  # a longer sentence is cut at white space before it is tokenized


@dataclass(frozen=True, slots=True)
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


def _sentence_pieces(text: str, span: tuple[int, int], offsets: Sequence[tuple[int, int]], max_tokens: int) -> list[_Piece]:
    """An over-long sentence cut into pieces of at most ``max_tokens`` at word starts (at token
    boundaries only for a single word longer than the budget). ``offsets`` are the sentence's own
    tokens' character offsets (relative to its start)."""
    base, n = span[0], len(offsets)
    word_start = [start == 0 or text[base + start - 1].isspace() for start, _ in offsets] + [True]
    pieces = []
    begin = 0
    while begin < n:
        stop = min(begin + max_tokens, n)
        if stop < n:
            stop = next((i for i in range(stop, begin, -1) if word_start[i]), stop)
        end_char = span[1] if stop == n else base + offsets[stop - 1][1]
        start_char = span[0] if begin == 0 else base + offsets[begin][0]
        pieces.append(_Piece(start_char, end_char, stop - begin))
        begin = stop
    return pieces


def _pack(pieces: list[_Piece], config: ChunkingConfig, max_tokens: int) -> list[list[_Piece]]:
    """Greedy packing into ``max_tokens`` with sentence overlap and tail merging (steps 3 and 4 of the
    module doc)."""
    chunks: list[list[_Piece]] = []
    current: list[_Piece] = []
    carried = 0  # how many leading pieces of ``current`` repeat the previous chunk
    for piece in pieces:
        if current and sum(p.n_tokens for p in current) + piece.n_tokens > max_tokens:
            chunks.append(current)
            overlap: list[_Piece] = []
            for previous in reversed(current):
                if sum(p.n_tokens for p in overlap) + previous.n_tokens > config.overlap_tokens:
                    break
                overlap.insert(0, previous)
            while overlap and sum(p.n_tokens for p in overlap) + piece.n_tokens > max_tokens:
                overlap.pop(0)
            current, carried = overlap, len(overlap)
        current.append(piece)
    if current:
        new_part = current[carried:]
        tail_tokens = sum(p.n_tokens for p in current)
        if chunks and tail_tokens < config.min_tokens and (
            sum(p.n_tokens for p in chunks[-1]) + sum(p.n_tokens for p in new_part) <= max_tokens
        ):
            chunks[-1] = chunks[-1] + new_part
        else:
            chunks.append(current)
    return chunks


def _encode(tokenizer: Any, texts: list[str]) -> list[Any]:
    """The fast tokenizer's own encodings of ``texts`` (no special tokens): their lengths and offsets
    are read from Rust only where needed, never converted to Python lists wholesale. Truncation and
    padding are switched off first, as the tokenizer's ``__call__`` does when it is not asked for them."""
    backend = tokenizer.backend_tokenizer
    if backend.truncation is not None:
        backend.no_truncation()
    if backend.padding is not None:
        backend.no_padding()
    return backend.encode_batch(texts, add_special_tokens=False)


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
    budget = config.max_tokens - (_prefix_cap(config.max_tokens) if config.section_prefix else 0)
    measured = _measured((_layout(document, config) for document in documents), tokenizer, budget)
    chunks: list[Chunk] = []
    for document, sections_pieces in progress_bar(measured, total=len(documents), desc="chunking", unit="doc",
                                                  enabled=progress):
        groups = _section_groups(sections_pieces, min(config.min_section_tokens, config.max_tokens // 2))
        chunks.extend(_document_chunks(document, groups, config, tokenizer))
    return _recount(chunks, tokenizer, config.max_tokens)


Layout = tuple[Document, list[tuple[tuple[str, ...], array]]]  # per section: heading path, sentence spans (start, end, ...)


def _layout(document: Document, config: ChunkingConfig) -> Layout:
    """A document's sections (steps 1-2), each with its sentences' spans as a flat array of
    ``start, end`` offsets (16 bytes a sentence), a span of more than :data:`SPAN_CHARS` characters cut
    at white space."""
    text = document.text
    spans = sections(text) if config.headings else [Section(0, len(text), ())]
    return document, [
        (section.path, array("q", (offset for span in sentence_spans(text, section.start, section.end)
                                   for part in _bounded(text, span) for offset in part)))
        for section in spans
    ]


Measured = Iterator[tuple[Document, list[tuple[tuple[str, ...], list[_Piece]]]]]  # per document: (heading path, pieces)


def _measured(layouts: Iterator[Layout], tokenizer: Any, max_tokens: int) -> Measured:
    """Each document with (heading path, pieces) per section (step 3). Sentences of consecutive
    documents are tokenized together, :data:`TOKENIZE_CHARS` characters per call at most."""
    pending: list[Layout] = []
    size = 0
    for layout in layouts:
        pending.append(layout)
        size += sum(sum(spans[1::2]) - sum(spans[0::2]) for _, spans in layout[1])
        if size >= TOKENIZE_CHARS:
            yield from _measure(pending, tokenizer, max_tokens)
            pending, size = [], 0
    yield from _measure(pending, tokenizer, max_tokens)


def _measure(layouts: list[Layout], tokenizer: Any, max_tokens: int) -> Measured:
    pieces: list[_Piece] = []
    counts = array("q")  # pieces per sentence, in order
    batch: list[tuple[str, int, int]] = []
    size = 0
    for document, sections_spans in layouts:
        for _, spans in sections_spans:
            for index in range(0, len(spans), 2):
                start, end = spans[index], spans[index + 1]
                if batch and size + end - start > TOKENIZE_CHARS:
                    _measure_batch(batch, tokenizer, max_tokens, pieces, counts)
                    batch, size = [], 0
                batch.append((document.text, start, end))
                size += end - start
    _measure_batch(batch, tokenizer, max_tokens, pieces, counts)
    sentence = piece = 0
    for document, sections_spans in layouts:
        measured = []
        for path, spans in sections_spans:
            n_pieces = sum(counts[sentence : sentence + len(spans) // 2])
            measured.append((path, pieces[piece : piece + n_pieces]))
            sentence, piece = sentence + len(spans) // 2, piece + n_pieces
        yield document, measured


def _measure_batch(batch: list[tuple[str, int, int]], tokenizer: Any, max_tokens: int, pieces: list[_Piece],
                   counts: array) -> None:
    """Tokenize a batch of sentences; append their pieces to ``pieces`` and how many to ``counts``."""
    for (text, start, end), encoding in zip(batch, _encode(tokenizer, [text[a:b] for text, a, b in batch])):
        n_tokens = len(encoding)
        new = ([_Piece(start, end, n_tokens)] if n_tokens <= max_tokens
               else _sentence_pieces(text, (start, end), encoding.offsets, max_tokens))
        pieces.extend(new)
        counts.append(len(new))


Sections = list[tuple[tuple[str, ...], list[_Piece]]]  # (heading path, pieces) per section, in order


def _document_chunks(document: Document, groups: list[Sections], config: ChunkingConfig, tokenizer: Any) -> list[Chunk]:
    """The chunks of one document: its section groups' pieces packed group by group (steps 4-5), each
    chunk labelled by :func:`_chunk_path`."""
    text = document.text
    chunks: list[Chunk] = []
    headers: dict[tuple[str, ...], tuple[str, str, int]] = {}  # path -> label, contextual header, its tokens

    def header(path: tuple[str, ...]) -> tuple[str, str, int]:
        if path not in headers:
            label = section_label(document.title, path)
            prefix = _prefix(label, tokenizer, config.max_tokens) if config.section_prefix else ""
            headers[path] = label, prefix, _count(tokenizer, prefix) if prefix else 0
        return headers[path]

    for group in groups:
        path_of = {piece.start: path for path, pieces in group for piece in pieces}
        bare = {path for path, pieces in group if path and pieces and "\n" not in text[pieces[0].start:pieces[-1].end]}
        prefix_tokens = max(header(path)[2] for path, _ in group)
        for packed in _pack([piece for _, pieces in group for piece in pieces], config, config.max_tokens - prefix_tokens):
            label, prefix, n_prefix = header(_chunk_path({path_of[piece.start] for piece in packed}, bare))
            position = len(chunks)
            chunks.append(Chunk(
                chunk_id=f"{document.doc_id}#{position}", doc_id=document.doc_id, url=document.url,
                text=prefix + text[packed[0].start:packed[-1].end], position=position,
                n_tokens=n_prefix + _n_tokens(packed), section=label,
            ))
    return chunks


def _under(path: tuple[str, ...], parent: tuple[str, ...]) -> bool:
    """Whether heading path ``path`` lies under ``parent`` (a subsection of it, at any depth)."""
    return len(path) > len(parent) and path[:len(parent)] == parent


def _chunk_path(paths: set[tuple[str, ...]], bare: set[tuple[str, ...]]) -> tuple[str, ...]:
    """The heading path of a chunk whose sentences lie in the sections of ``paths``: the longest path
    that starts all of them, a section that is only its heading line (``bare``) left out when a
    subsection of it is in the chunk too (its title is in that subsection's path)."""
    kept = sorted(path for path in paths if not (path in bare and any(_under(other, path) for other in paths)))
    first, last = kept[0], kept[-1]  # sorted: the common start of all is that of the first and last
    return next((first[:i] for i, (a, b) in enumerate(zip(first, last)) if a != b), first[:len(last)])


def _section_groups(sections_pieces: Sections, min_tokens: int) -> list[Sections]:
    """The sections in runs packed together (step 1): a section of fewer than ``min_tokens`` tokens
    joins the run before it, unless the next section lies under it (its first child) and so starts a
    run with it; a run of fewer than ``min_tokens`` tokens is joined by the next section that lies
    under the run's first section (a heading with no text, then its first subsections)."""
    groups: list[Sections] = []
    for index, (path, pieces) in enumerate(sections_pieces):
        short = _n_tokens(pieces) < min_tokens
        opens = index + 1 < len(sections_pieces) and _under(sections_pieces[index + 1][0], path)
        heads = bool(groups) and _under(path, groups[-1][0][0]) and (
            sum(_n_tokens(run_pieces) for _, run_pieces in groups[-1]) < min_tokens)
        if groups and (heads or (short and not opens)):
            groups[-1].append((path, pieces))
        else:
            groups.append([(path, pieces)])
    return groups


def _n_tokens(pieces: list[_Piece]) -> int:
    return sum(p.n_tokens for p in pieces)


def _prefix_cap(max_tokens: int) -> int:
    """Most tokens a contextual header takes: a quarter of the budget (the rest is for the text)."""
    return max_tokens // 4


def _prefix(label: str, tokenizer: Any, max_tokens: int) -> str:
    """The contextual header of a chunk: its section label and a blank line, the label cut at a token
    boundary so that the header fits :func:`_prefix_cap`."""
    if not label:
        return ""
    offsets = _encode(tokenizer, [label])[0].offsets
    limit = _prefix_cap(max_tokens)
    while len(offsets) > 0:
        header = label[: offsets[-1][1]] + "\n\n"
        if _count(tokenizer, header) <= limit:
            return header
        offsets = offsets[: min(len(offsets) - 1, limit)]
    return ""


def _count(tokenizer: Any, text: str) -> int:
    return len(_encode(tokenizer, [text])[0])


def _bounded(text: str, span: tuple[int, int]) -> list[tuple[int, int]]:
    """``span`` cut at white space into parts of at most :data:`SPAN_CHARS` characters (hard cuts
    where a part holds no white space)."""
    start, end = span
    parts = []
    while end - start > SPAN_CHARS:
        cut = max(text.rfind(" ", start + 1, start + SPAN_CHARS), text.rfind("\t", start + 1, start + SPAN_CHARS))
        cut = cut if cut > start else start + SPAN_CHARS
        parts.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    parts.append((start, end))
    return parts


def _recount(chunks: list[Chunk], tokenizer: Any, max_tokens: int) -> list[Chunk]:
    """Re-tokenize every chunk; store the exact count; fail loudly if one is over budget."""
    counts = [
        len(encoding)
        for first in range(0, len(chunks), TOKENIZE_BATCH)
        for encoding in _encode(tokenizer, [c.text for c in chunks[first : first + TOKENIZE_BATCH]])
    ]
    result = []
    for chunk, count in zip(chunks, counts):
        if count > max_tokens:
            raise BenchError(
                f"chunk {chunk.chunk_id} re-tokenizes to {count} tokens (budget {max_tokens}): this tokenizer "
                "merges text across white space; lower chunking.max_tokens"
            )
        result.append(chunk if count == chunk.n_tokens else Chunk(
            chunk.chunk_id, chunk.doc_id, chunk.url, chunk.text, chunk.position, count, chunk.section))
    return result


def documents_fingerprint(documents: Sequence[Document]) -> str:
    """SHA-256 over every document's id, URL, title and text, in order."""
    return sha256_strings(part for d in documents for part in (d.doc_id, d.url, d.title, d.text))


def cached_chunks(
    documents: Sequence[Document], config: ChunkingConfig, cache_dir: Path, progress: bool = True,
) -> tuple[list[Chunk], str]:
    """Chunk the documents, or read the chunks cached under ``cache_dir/chunks`` for the same documents,
    settings and chunking code (:func:`rag.code_version.code_version`); returns the chunks and their
    fingerprint (SHA-256 over ids, URLs and texts)."""
    key = sha256_text(documents_fingerprint(documents) + config.model_dump_json() + code_version(__name__))
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
