"""Boilerplate repeated across the documents of a folder: found by line frequency, dropped.

The rule (a cross-document line-frequency rule, measured against trafilatura and jusText in
docs/data.md, "Boilerplate"), applied to the documents of one format at a time (the pages an HTML
generator wrote, the PDFs a browser printed): a unit, a paragraph (lines between blank lines) or a
single line, is boilerplate when its key (:func:`rag.data.pdf_text.line_key`:
lower-cased, white space collapsed, digits as ``0`` so that dates and times compare equal) occurs in at
least :data:`MIN_SHARE` of the folder's documents and in :data:`MIN_DOCUMENTS` of them at least, and
holds at least :data:`MIN_WORDS` words (so that short structural lines shared by pages of one kind,
"NAME", "-q, --quiet", stay). Headings and lines inside fenced code blocks are never boilerplate;
a paragraph is one unit when none of its lines is a heading or code.
Footers ("Last updated 2024-05-31 00:35:55 UTC"), suite lines ("Part of the git(1) suite") and
navigation repeated on every page are such lines; a folder of fewer than three documents has none.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence

from rag.data.pdf_text import line_key
from rag.text.sections import ATX_HEADING, FENCE

MIN_SHARE = 0.5
MIN_DOCUMENTS = 3
MIN_WORDS = 3
_WORDS = re.compile(r"\w+")


def _prose_lines(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each line of ``text`` outside fenced code that is not a heading."""
    fences = [(m.start(), m.end()) for m in FENCE.finditer(text)]
    start = 0
    fence = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        while fence < len(fences) and fences[fence][1] <= start:
            fence += 1
        inside = fence < len(fences) and fences[fence][0] <= start < fences[fence][1]
        if not inside and not ATX_HEADING.match(text, start, end):
            yield start, end
        start = end + 1


Unit = tuple[int, int, str]  # start, end, key


def units(text: str) -> list[Unit]:
    """``(start, end, key)`` of each unit of ``text``: its paragraphs of prose lines, then its lines."""
    return list(_units(text))


def _units(text: str) -> Iterator[Unit]:
    lines = list(_prose_lines(text))
    paragraph: list[tuple[int, int]] = []
    for index, (start, end) in enumerate(lines):
        if text[start:end].strip():
            paragraph.append((start, end))
        following = lines[index + 1][0] if index + 1 < len(lines) else None
        if paragraph and (not text[start:end].strip() or following != end + 1):
            if len(paragraph) > 1 and (key := _key(text[paragraph[0][0]:paragraph[-1][1]])):
                yield paragraph[0][0], paragraph[-1][1], key
            paragraph = []
    for start, end in lines:
        if key := _key(text[start:end]):
            yield start, end, key


def _key(unit: str) -> str | None:
    return line_key(unit) if len(_WORDS.findall(unit)) >= MIN_WORDS else None


def repeated_lines(texts_units: Sequence[list[Unit]]) -> set[str]:
    """The keys of the boilerplate lines of a folder's texts, given the :func:`units` of each (see
    the module docstring)."""
    if len(texts_units) < MIN_DOCUMENTS:
        return set()
    counts = Counter(key for text_units in texts_units for key in {key for _, _, key in text_units})
    need = max(MIN_DOCUMENTS, math.ceil(MIN_SHARE * len(texts_units)))
    return {key for key, count in counts.items() if count >= need}


def drop_lines(text: str, text_units: list[Unit], keys: set[str]) -> tuple[str, int]:
    """``text`` without its units (``text_units``, its :func:`units`) whose key is in ``keys``; how
    many lines were dropped."""
    if not keys:
        return text, 0
    cuts = sorted((start, end) for start, end, key in text_units if key in keys)
    if not cuts:
        return text, 0
    parts, last, dropped = [], 0, 0
    for start, end in cuts:
        if start < last:
            continue  # a line of a paragraph dropped already
        parts.append(text[last:start])
        last = min(end + 1, len(text))
        dropped += text.count("\n", start, end) + 1
    parts.append(text[last:])
    return re.sub(r"\n{3,}", "\n\n", "".join(parts)), dropped
