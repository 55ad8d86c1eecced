"""Tokenizers for sparse retrieval, selected by name from :data:`TOKENIZERS`.

- ``simple``: lower-cased word tokens, the regex ``\\w+`` (Unicode letters, digits, underscore).
- ``seed003``: the reference system of seed 003 — lower-cased NLTK word tokens. NLTK's
  ``word_tokenize`` needs the ``punkt`` model, which cannot be downloaded offline, so we use its
  documented equivalent without punkt: the text is split into sentences after ``.``, ``!`` or ``?``
  followed by white space (punkt additionally keeps abbreviations such as "Dr." together), and each
  sentence is tokenized with ``nltk.tokenize.NLTKWordTokenizer`` — the tokenizer ``word_tokenize``
  applies to each sentence. Punctuation tokens are kept, as ``word_tokenize`` keeps them.

Both then optionally drop English stop words (:data:`ENGLISH_STOPWORDS`, NLTK's list) and stem with
NLTK's Porter stemmer (pure code, no data package).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from functools import cached_property
from typing import Literal


from rag.registry import Registry
from rag.retrievers.stopwords import ENGLISH_STOPWORDS
from rag.validation import ConfigModel

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class TokenizerParams(ConfigModel):
    """Tokenizer settings of a sparse retriever (``tokenizer:`` in its params)."""

    name: str = "simple"
    stopwords: bool = True
    stemmer: Literal["none", "porter"] = "none"


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

    def __call__(self, text: str) -> list[str]:
        tokens = self.split(text)
        if self.params.stopwords:
            tokens = [token for token in tokens if token not in ENGLISH_STOPWORDS]
        if self.params.stemmer == "porter":
            tokens = [self._stem(token) for token in tokens]
        return tokens


TOKENIZERS: Registry[Tokenizer] = Registry("tokenizer")


@TOKENIZERS.register("simple")
class SimpleTokenizer(Tokenizer):
    def split(self, text: str) -> list[str]:
        return _WORD.findall(text.lower())


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
