"""Tokenizers for sparse retrieval, selected by name from :data:`TOKENIZERS`.

- ``simple``: lower-cased word tokens, the regex ``\\w+`` (Unicode letters, digits, underscore), of the
  text folded by :func:`rag.normalize.fold` (so the ligature in "ﬁle" and full-width letters match their
  plain forms, while ``x²`` stays ``x²``; documents read from files are folded already,
  :mod:`rag.data.convert`). Queries go through the same tokenizer.
- ``seed003``: the reference system of seed 003 — lower-cased NLTK word tokens. NLTK's
  ``word_tokenize`` needs the ``punkt`` model, which cannot be downloaded offline, so we use its
  documented equivalent without punkt: the text is split into sentences after ``.``, ``!`` or ``?``
  followed by white space (punkt additionally keeps abbreviations such as "Dr." together), and each
  sentence is tokenized with ``nltk.tokenize.NLTKWordTokenizer`` — the tokenizer ``word_tokenize``
  applies to each sentence. Punctuation tokens are kept, as ``word_tokenize`` keeps them. The text is
  not folded (this tokenizer reproduces a reference system's tokens). NLTK's rules
  run over whole blocks of texts at once (:mod:`rag.retrievers.word_rules`, about 10x faster than
  NLTK sentence by sentence, with the same tokens).

Both then optionally drop English stop words (:data:`ENGLISH_STOPWORDS`, NLTK's list) and stem with
NLTK's Porter stemmer (pure code, no data package). A tokenizer maps texts to their lists of terms
(:meth:`Tokenizer.many`, queries), or to term numbers (:meth:`Tokenizer.encode`, for indexing large
corpora without keeping a string per token).
"""

from __future__ import annotations

import itertools
import re
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from functools import cached_property
from typing import Literal

import numpy as np

from rag.normalize import fold
from rag.registry import Registry
from rag.retrievers import word_rules
from rag.stopwords import ENGLISH_STOPWORDS
from rag.validation import ConfigModel

_WORD = re.compile(r"\w+")
_ASCII_NON_WORD_TO_SPACE = bytes(code if _WORD.fullmatch(chr(code)) or code > 127 else 32 for code in range(256))


class TokenizerParams(ConfigModel):
    """Tokenizer settings of a sparse retriever (``tokenizer:`` in its params)."""

    name: str = "simple"
    stopwords: bool = True
    stemmer: Literal["none", "porter"] = "none"


class Vocabulary:
    """Terms numbered 0, 1, ... in order of first appearance over every text encoded with it, plus
    the pieces (see :meth:`Tokenizer.cut`) resolved so far, each once: piece number -> its terms
    as a slice of one growing array of term numbers."""

    def __init__(self, terms: Mapping[str, int] | None = None) -> None:
        """``terms``: start from another vocabulary's terms (numbered 0, 1, ...), so that the terms
        both know keep their numbers and new ones are numbered after them."""
        self.terms: dict[str, int] = dict(terms or {})
        self.piece_number: dict[Hashable, int] = {}
        self._starts = np.zeros(1024, dtype=np.int64)  # per piece: first position in _table
        self._widths = np.zeros(1024, dtype=np.int64)  # per piece: how many terms
        self._table = np.zeros(1024, dtype=np.int64)
        self._n_pieces = 0
        self._n_table = 0

    def add_pieces(self, pieces: Sequence[Hashable], terms: Sequence[Sequence[str]]) -> None:
        """Number new pieces; ``terms[i]`` are the terms (after stop words and stemming) of ``pieces[i]``."""
        ids = [self.terms.setdefault(term, len(self.terms)) for piece_terms in terms for term in piece_terms]
        widths = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
        first, stop = self._n_pieces, self._n_pieces + len(pieces)
        self.piece_number.update(zip(pieces, range(first, stop)))
        self._starts = _room(self._starts, stop)
        self._widths = _room(self._widths, stop)
        self._table = _room(self._table, self._n_table + len(ids))
        self._starts[first:stop] = self._n_table + np.cumsum(widths) - widths
        self._widths[first:stop] = widths
        self._table[self._n_table : self._n_table + len(ids)] = ids
        self._n_pieces, self._n_table = stop, self._n_table + len(ids)

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
    """Text -> list of terms: raw tokens (per tokenizer) then stop words, then stemming.

    A tokenizer works on many texts at once: it cuts them into *pieces* (:meth:`cut`), resolves each
    distinct piece into its raw tokens once (:meth:`resolve`), and maps each token to its term once
    per tokenizer (a token's term depends on the token alone)."""

    def __init__(self, params: TokenizerParams):
        self.params = params
        self._terms: dict[str, str | None] = {}

    @abstractmethod
    def cut(self, texts: Sequence[str]) -> list[list[Hashable]]:
        """Each text cut into pieces whose raw tokens, in order, are the text's."""

    @abstractmethod
    def resolve(self, pieces: list[Hashable]) -> list[list[str]]:
        """The lower-cased raw tokens of each piece, in order."""

    def split_many(self, texts: Sequence[str]) -> list[list[str]]:
        """The raw tokens of each text."""
        pieces = self.cut(texts)
        distinct = list(dict.fromkeys(itertools.chain.from_iterable(pieces)))
        tokens = dict(zip(distinct, self.resolve(distinct)))
        return [[token for piece in text_pieces for token in tokens[piece]] for text_pieces in pieces]

    @cached_property
    def _stemmer(self):
        from nltk.stem.porter import PorterStemmer

        return PorterStemmer()

    def _term(self, token: str) -> str | None:
        """The term a raw token becomes: None for a dropped stop word, else the token or its stem."""
        if token not in self._terms:
            if self.params.stopwords and token in ENGLISH_STOPWORDS:
                self._terms[token] = None
            else:
                self._terms[token] = self._stemmer.stem(token) if self.params.stemmer == "porter" else token
        return self._terms[token]

    def terms(self, tokens: list[str]) -> list[str]:
        """The terms of a sequence of raw tokens (stop words dropped, stems)."""
        return [term for term in map(self._term, tokens) if term is not None]

    def many(self, texts: Sequence[str]) -> list[list[str]]:
        """The terms of each text."""
        return [self.terms(tokens) for tokens in self.split_many(texts)]

    def __call__(self, text: str) -> list[str]:
        return self.many([text])[0]

    def encode(self, texts: Sequence[str], vocabulary: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
        """The terms of ``texts`` as numbers in ``vocabulary`` (which grows): (the term numbers of all
        texts concatenated, the number of terms of each text). Equal to ``self.many(texts)`` mapped
        through ``vocabulary.terms``, but each distinct piece is resolved (raw tokens, stop words,
        stemming) once per vocabulary and no string outlives its piece lookup."""
        pieces = self.cut(texts)
        counts = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        flat = list(itertools.chain.from_iterable(pieces))
        del pieces
        new = [piece for piece in dict.fromkeys(flat) if piece not in vocabulary.piece_number]  # first appearance order
        vocabulary.add_pieces(new, [self.terms(tokens) for tokens in self.resolve(new)])
        numbers = np.fromiter(map(vocabulary.piece_number.__getitem__, flat), dtype=np.int64, count=len(flat))
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

    def split_many(self, texts: Sequence[str]) -> list[list[str]]:
        return [_WORD.findall(fold(text).lower()) for text in texts]

    def cut(self, texts: Sequence[str]) -> list[list[Hashable]]:
        return [fold(text).lower().encode("utf-8", "surrogatepass").translate(_ASCII_NON_WORD_TO_SPACE).split()
                for text in texts]

    def resolve(self, pieces: list[Hashable]) -> list[list[str]]:
        texts = [piece.decode("utf-8", "surrogatepass") for piece in pieces]  # type: ignore[union-attr]
        return [[text] if text.isascii() else _WORD.findall(text) for text in texts]


@TOKENIZERS.register("seed003")
class Seed003Tokenizer(Tokenizer):
    """NLTK word tokens of each sentence, computed for many texts at once (:mod:`rag.retrievers.word_rules`)."""

    def cut(self, texts: Sequence[str]) -> list[list[Hashable]]:
        return word_rules.cut(list(texts))  # type: ignore[return-value]

    def resolve(self, pieces: list[Hashable]) -> list[list[str]]:
        return word_rules.resolve(pieces)  # type: ignore[arg-type]


def make_tokenizer(params: TokenizerParams, key: str = "tokenizer.name") -> Tokenizer:
    """The tokenizer named by ``params.name`` (``ConfigError`` at ``key`` for an unknown name)."""
    return TOKENIZERS.get(params.name, key=key)(params)
