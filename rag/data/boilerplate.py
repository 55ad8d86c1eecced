"""Boilerplate repeated across the documents of a folder: lines found at the same edge of most pages.

Page furniture is found first by the page's own markup, where a format has it (HTML: navigation,
the footer, what lies outside the main region, a documentation tool's bars:
:func:`rag.data.convert.page_regions`; PDF: running headers and footers, :mod:`rag.data.pdf_text`).
What is left to this module is furniture that no markup marks: a footer or a suite line that a
generator writes as plain text ("Last updated 2024-05-31 00:35:55 UTC", "Part of the git(1) suite" at
the end of every AsciiDoc page of Git's manual), a notice at the top of every Markdown file.

Such a line is furniture by its place in the page, not by its frequency alone: a short line that
recurs inside page bodies ("New in version 3.8.", "Since: 2.64") is text. The rule, applied to the
documents of one format at a time (the pages an HTML generator wrote, the PDFs a browser printed), in a
folder of at least :data:`MIN_DOCUMENTS` documents:

1. a line's key is :func:`rag.data.pdf_text.line_key` (lower-cased, white space collapsed, digits as
   ``0``, so that dates and times compare equal); lines without a letter or digit (rules, ``|``),
   blank lines and headings are passed over (never furniture themselves), a line of a fenced code
   block ends the edge;
2. a page's *head* is its run of lines from the top whose keys occur in at least :data:`MIN_SHARE` of
   the folder's documents (and in :data:`MIN_DOCUMENTS` of them), its *tail* the same run from the
   bottom;
3. a key is head (tail) furniture when it lies in the head (tail) of at least :data:`MIN_SHARE` of the
   documents (and of :data:`MIN_DOCUMENTS`), and in the head (tail) of at least :data:`EDGE_SHARE` of
   the documents that hold it anywhere: furniture is where it is on every page, a body line is
   elsewhere too;
4. a page loses the run of head furniture lines from its top and of tail furniture lines from its
   bottom; a furniture key inside the body stays.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rag.data.pdf_text import line_key
from rag.text.sections import ATX_HEADING, FENCE, TEXT_CHARACTER

MIN_SHARE = 0.5
MIN_DOCUMENTS = 3
EDGE_SHARE = 0.9

Line = tuple[int, int, str | None]  # start, end, key (None: passed over)
STOP = ""  # the key of a line that ends an edge (a line of code)


def lines(text: str) -> list[Line]:
    """``(start, end, key)`` of each line of ``text``: the key of a line with a letter or digit outside
    code and headings, :data:`STOP` for a line of a fenced code block, None for the others."""
    fences = [(m.start(), m.end()) for m in FENCE.finditer(text)]
    found: list[Line] = []
    start = fence = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        while fence < len(fences) and fences[fence][1] <= start:
            fence += 1
        line = text[start:end]
        if fence < len(fences) and fences[fence][0] <= start < fences[fence][1]:
            found.append((start, end, STOP))
        elif ATX_HEADING.match(text, start, end) or not TEXT_CHARACTER.search(line):
            found.append((start, end, None))
        else:
            found.append((start, end, line_key(line)))
        start = end + 1
    return found


def _edge(text_lines: Sequence[Line], keys: frozenset[str]) -> int:
    """How many lines from the start of ``text_lines`` form its edge: lines whose keys are in ``keys``
    and lines without a key (passed over), up to the first other line."""
    for index, line in enumerate(text_lines):
        if line[2] is not None and line[2] not in keys:
            return index
    return len(text_lines)


def _keys(text_lines: Sequence[Line]) -> set[str]:
    return {line[2] for line in text_lines if line[2]}


def _edges(text_lines: Sequence[Line], head: frozenset[str], tail: frozenset[str]) -> tuple[int, int]:
    """Where the body of ``text_lines`` starts and ends: after its head (the edge over ``head``), before
    its tail (the edge of the reversed lines over ``tail``)."""
    top = _edge(text_lines, head)
    return top, max(top, len(text_lines) - _edge(text_lines[::-1], tail))


@dataclass(frozen=True)
class Furniture:
    """The keys of a folder's furniture lines: at the head of its pages and at their tail."""

    head: frozenset[str] = frozenset()
    tail: frozenset[str] = frozenset()

    def keys(self) -> list[str]:
        return sorted(self.head | self.tail)


def furniture(texts_lines: Sequence[list[Line]]) -> Furniture:
    """The furniture of a folder's texts, given the :func:`lines` of each (see the module docstring)."""
    if len(texts_lines) < MIN_DOCUMENTS:
        return Furniture()
    need = max(MIN_DOCUMENTS, math.ceil(MIN_SHARE * len(texts_lines)))
    holding = Counter(key for text_lines in texts_lines for key in _keys(text_lines))
    frequent = frozenset(key for key, count in holding.items() if count >= need)
    heads: Counter[str] = Counter()
    tails: Counter[str] = Counter()
    for text_lines in texts_lines:
        top, bottom = _edges(text_lines, frequent, frequent)
        body = _keys(text_lines[top:bottom])
        heads.update(_keys(text_lines[:top]) - body)
        tails.update(_keys(text_lines[bottom:]) - body)
    return Furniture(*(frozenset(key for key, count in counts.items() if count >= need and count >= EDGE_SHARE * holding[key])
                       for counts in (heads, tails)))


def drop_furniture(text: str, text_lines: list[Line], found: Furniture) -> tuple[str, int]:
    """``text`` without its head and tail furniture lines (``text_lines``: its :func:`lines`); how many
    lines were dropped."""
    top, bottom = _edges(text_lines, found.head, found.tail)
    cuts = [line for line in text_lines[:top] + text_lines[bottom:] if line[2]]
    if not cuts:
        return text, 0
    parts, last = [], 0
    for start, end, _ in cuts:
        parts.append(text[last:start])
        last = min(end + 1, len(text))
    parts.append(text[last:])
    return re.sub(r"\n{3,}", "\n\n", "".join(parts)).lstrip("\n"), len(cuts)
