"""Tokenizers for sparse retrieval, selected by name from :data:`TOKENIZERS`.

- ``simple``: lower-cased word tokens, the regex ``\\w+`` (Unicode letters, digits, underscore).
- ``seed003``: the reference system of seed 003 — lower-cased NLTK word tokens. NLTK's
  ``word_tokenize`` needs the ``punkt`` model, which cannot be downloaded offline, so we use its
  documented equivalent without punkt: the text is split into sentences after ``.``, ``!`` or ``?``
  followed by white space (punkt additionally keeps abbreviations such as "Dr." together), and each
  sentence is tokenized with ``nltk.tokenize.NLTKWordTokenizer`` — the tokenizer ``word_tokenize``
  applies to each sentence. Punctuation tokens are kept, as ``word_tokenize`` keeps them.

Both then optionally drop English stop words (:data:`ENGLISH_STOPWORDS`, NLTK's list) and stem with
NLTK's Porter stemmer (pure code, no data package). A tokenizer maps one text to its list of terms
(queries), or many texts at once to term numbers (:meth:`Tokenizer.encode`, for indexing large
corpora without keeping a string per token).
"""

from __future__ import annotations

import itertools
import re
from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from functools import cached_property
from typing import Literal

import numpy as np

from rag.registry import Registry
from rag.retrievers.stopwords import ENGLISH_STOPWORDS
from rag.validation import ConfigModel

_WORD = re.compile(r"\w+")
_ASCII_NON_WORD_TO_SPACE = bytes(code if _WORD.fullmatch(chr(code)) or code > 127 else 32 for code in range(256))
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class TokenizerParams(ConfigModel):
    """Tokenizer settings of a sparse retriever (``tokenizer:`` in its params)."""

    name: str = "simple"
    stopwords: bool = True
    stemmer: Literal["none", "porter"] = "none"


class Vocabulary:
    """Terms numbered 0, 1, ... in order of first appearance over every text encoded with it, plus
    the pieces (see :meth:`Tokenizer.pieces`) resolved so far, each once: piece number -> its terms
    as a slice of one growing array of term numbers."""

    def __init__(self) -> None:
        self.terms: dict[str, int] = {}
        self.piece_number: dict[Hashable, int] = {}
        self._starts = np.zeros(1024, dtype=np.int64)  # per piece: first position in _table
        self._widths = np.zeros(1024, dtype=np.int64)  # per piece: how many terms
        self._table = np.zeros(1024, dtype=np.int64)
        self._n_pieces = 0
        self._n_table = 0

    def add_piece(self, piece: Hashable, terms: Sequence[str]) -> int:
        """Number a new piece whose terms (after stop words and stemming) are ``terms``."""
        ids = [self.terms.setdefault(term, len(self.terms)) for term in terms]
        number = self.piece_number[piece] = self._n_pieces
        self._starts = _room(self._starts, number + 1)
        self._widths = _room(self._widths, number + 1)
        self._table = _room(self._table, self._n_table + len(ids))
        self._starts[number], self._widths[number] = self._n_table, len(ids)
        self._table[self._n_table : self._n_table + len(ids)] = ids
        self._n_pieces, self._n_table = number + 1, self._n_table + len(ids)
        return number

    def expand(self, pieces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The term numbers of a sequence of piece numbers, concatenated, and each piece's count."""
        widths = self._widths[pieces]
        output_starts = np.cumsum(widths) - widths
        positions = np.repeat(self._starts[pieces] - output_starts, widths) + np.arange(int(widths.sum()))
        return self._table[positions], widths


def _room(array: np.ndarray, size: int) -> np.ndarray:
    """``array``, grown (doubling) to hold at least ``size`` entries."""
    if size <= len(array):
        return array
    grown = np.zeros(max(size, 2 * len(array)), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


class Tokenizer(ABC):
    """Text -> list of terms: :meth:`split` (per tokenizer) then stop words, then stemming."""

    def __init__(self, params: TokenizerParams):
        self.params = params
        self._stems: dict[str, str] = {}

    @abstractmethod
    def split(self, text: str) -> list[str]:
        """Lower-cased raw tokens of ``text``."""

    @cached_property
    def _stemmer(self):
        from nltk.stem.porter import PorterStemmer

        return PorterStemmer()

    def _stem(self, token: str) -> str:
        stem = self._stems.get(token)
        if stem is None:
            stem = self._stems[token] = self._stemmer.stem(token)
        return stem

    def _term(self, token: str) -> str | None:
        """The term a raw token becomes: None for a dropped stop word, else the token or its stem."""
        if self.params.stopwords and token in ENGLISH_STOPWORDS:
            return None
        return self._stem(token) if self.params.stemmer == "porter" else token

    def __call__(self, text: str) -> list[str]:
        return [term for term in map(self._term, self.split(text)) if term is not None]

    def pieces(self, text: str) -> list[Hashable]:
        """``text`` cut into pieces whose tokens :meth:`piece_tokens` gives; by default the raw tokens
        themselves. A faster tokenizer may cut coarser pieces in C and resolve each distinct one once."""
        return self.split(text)

    def piece_tokens(self, piece: Hashable) -> list[str]:
        """The raw tokens of one piece, in order."""
        return [piece]  # type: ignore[list-item]

    def encode(self, texts: Sequence[str], vocabulary: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
        """The terms of ``texts`` as numbers in ``vocabulary`` (which grows): (the term numbers of all
        texts concatenated, the number of terms of each text). Equal to ``[self(text) for text in
        texts]`` mapped through ``vocabulary.terms``, but each distinct piece is resolved (raw tokens,
        stop words, stemming) once per vocabulary and no string outlives its piece lookup."""
        pieces = [self.pieces(text) for text in texts]
        counts = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        flat = list(itertools.chain.from_iterable(pieces))
        del pieces
        numbers = np.fromiter(map(vocabulary.piece_number.get, flat, itertools.repeat(-1)), dtype=np.int64, count=len(flat))
        for position in np.flatnonzero(numbers < 0).tolist():  # new pieces, in order of appearance
            piece = flat[position]
            number = vocabulary.piece_number.get(piece)
            if number is None:
                number = vocabulary.add_piece(piece, [t for t in map(self._term, self.piece_tokens(piece)) if t is not None])
            numbers[position] = number
        codes, widths = vocabulary.expand(numbers)
        lengths = np.bincount(np.repeat(np.arange(len(texts)), counts), weights=widths, minlength=len(texts))
        return codes, lengths.astype(np.int64)


TOKENIZERS: Registry[Tokenizer] = Registry("tokenizer")


@TOKENIZERS.register("simple")
class SimpleTokenizer(Tokenizer):
    """``\\w+`` over the lower-cased text.

    For indexing (:meth:`Tokenizer.encode`) texts are cut in C: the lower-cased text as UTF-8 bytes,
    every ASCII non-word byte replaced by a space, ``bytes.split``. An ASCII piece is one token; a
    piece holding non-ASCII characters (possibly non-word characters or Unicode spaces) is split by
    the regex, once per distinct piece. Same tokens as the regex on the whole text, since a ``\\w+``
    run never crosses an ASCII non-word character.
    """

    def split(self, text: str) -> list[str]:
        return _WORD.findall(text.lower())

    def piece_tokens(self, piece: Hashable) -> list[str]:
        text = piece.decode("utf-8", "surrogatepass")  # type: ignore[union-attr]
        return [text] if text.isascii() else _WORD.findall(text)

    def pieces(self, text: str) -> list[Hashable]:
        return text.lower().encode("utf-8", "surrogatepass").translate(_ASCII_NON_WORD_TO_SPACE).split()


@TOKENIZERS.register("seed003")
class Seed003Tokenizer(Tokenizer):
    @cached_property
    def _word_tokenizer(self):
        from nltk.tokenize import NLTKWordTokenizer

        return NLTKWordTokenizer()

    def split(self, text: str) -> list[str]:
        tokenize = self._word_tokenizer.tokenize
        return [token for sentence in _SENTENCE_END.split(text.lower()) for token in tokenize(sentence)]


def make_tokenizer(params: TokenizerParams, key: str = "tokenizer.name") -> Tokenizer:
    """The tokenizer named by ``params.name`` (``ConfigError`` at ``key`` for an unknown name)."""
    return TOKENIZERS.get(params.name, key=key)(params)
