"""What every question generator shares: the seeded random generator, proportional allocation,
numbering, a document's first sentence, the words questions are compared on, and text without its
inline Markdown (:func:`plain`).

``seeded_rng(seed, name)`` is ``random.Random(f"{seed}:{name}")``: a string seed hashes with SHA-512
in CPython, so results never depend on ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from rag.text.sections import CODE_SPAN
from rag.text.sentences import split_sentences
from rag.stopwords import ENGLISH_STOPWORDS
from rag.types import Document, Question

_TOKEN = re.compile(r"\w+", re.UNICODE)
_EMPHASIS = re.compile(r"`+|(?<!\w)[*_]{1,2}(?=\S)|(?<=\S)[*_]{1,2}(?!\w)")  # and stray backticks
_SPAN_OR_EMPHASIS = re.compile(f"{CODE_SPAN.pattern}|{_EMPHASIS.pattern}")  # a code span first (groups 1, 2)


def seeded_rng(seed: int, name: str) -> random.Random:
    return random.Random(f"{seed}:{name}")


def allocate(total: int, weights: Sequence[int]) -> list[int]:
    """Split ``total`` in proportion to ``weights`` (largest remainder; ties to the earlier entry)."""
    exact = [total * w / sum(weights) for w in weights]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    return counts


def numbered(set_name: str, questions: list[Question]) -> list[Question]:
    """The questions with ids ``f"{set_name}-{i:04d}"`` (1-based), in order."""
    return [Question(f"{set_name}-{i:04d}", q.text, q.gold_urls, q.answers, q.qtype, q.question_set, q.metadata)
            for i, q in enumerate(questions, start=1)]


def first_sentence(document: Document) -> str:
    sentences = split_sentences(document.text)
    return sentences[0] if sentences else document.text.strip()


def content_words(text: str) -> set[str]:
    """The distinct content words of ``text``: Unicode word tokens (``\\w+``), case-folded, without
    NLTK's English stop words (:data:`rag.stopwords.ENGLISH_STOPWORDS`). Numbers count."""
    return {token for token in _TOKEN.findall(text.casefold()) if token not in ENGLISH_STOPWORDS}


def plain(text: str) -> str:
    """``text`` without inline code backticks and ``*``/``_`` emphasis, white space runs made one space; a
    code span's text is kept as it is (``__init__()`` is a name, not emphasis), and emphasis around
    a code span goes too (gtk-doc's parameters, ``*`checksum_type`*``): spans and emphasis are found
    in one left-to-right pass."""
    return " ".join(_SPAN_OR_EMPHASIS.sub(lambda found: found.group(2) if found.group(1) else "", text).split())
