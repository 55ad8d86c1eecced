"""Tokenizers: expected tokens written out by hand."""

from __future__ import annotations

import pytest

from rag.errors import ConfigError
from rag.retrievers.tokenizers import TokenizerParams, make_tokenizer


@pytest.mark.parametrize(
    ("params", "text", "expected"),
    [
        ({"stopwords": False}, "Hello, World! It's 2024_x café", ["hello", "world", "it", "s", "2024_x", "café"]),
        ({}, "Hello, World! It's 2024_x café", ["hello", "world", "2024_x", "café"]),
        ({"stopwords": False, "stemmer": "porter"}, "Running runs easily", ["run", "run", "easili"]),
        ({"stemmer": "porter"}, "The cats were running", ["cat", "run"]),
        # word_tokenize semantics: clitics split ("do" + "n't"), punctuation kept, sentence-final "."
        ({"name": "seed003", "stopwords": False}, "Don't stop. Birds sing, loudly!",
         ["do", "n't", "stop", ".", "birds", "sing", ",", "loudly", "!"]),
        ({"name": "seed003"}, "Don't stop. Birds sing, loudly!", ["n't", "stop", ".", "birds", "sing", ",", "loudly", "!"]),
        ({"name": "seed003"}, "It costs 3.5 dollars (roughly).", ["costs", "3.5", "dollars", "(", "roughly", ")", "."]),
    ],
)
def test_tokens(params, text, expected):
    assert make_tokenizer(TokenizerParams(**params))(text) == expected


def test_unknown_tokenizer_names_the_key():
    with pytest.raises(ConfigError, match="tokenizer.name.*expected one of: seed003, simple"):
        make_tokenizer(TokenizerParams(name="nope"))
