"""Markdown ATX headings as sections: the one place that reads a document's heading structure.

A heading is a line ``#`` to ``######``, then white space and the heading text (up to three leading
spaces, optional closing ``#``s), as in CommonMark. A section runs from its heading line to the next
heading line (of any level); the text before the first heading is a section without a heading. The
section *path* of a heading is the chain of open headings above it and itself: a level-``n`` heading
closes every open heading of level ``n`` or deeper. Lines inside fenced code blocks (```` ``` ```` or
``~~~``) are never headings (a ``# comment`` in a shell example, say). The patterns of Markdown's
literal regions (:data:`FENCE`, :data:`CODE_SPAN`) serve the other readers of Markdown text too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

ATX_HEADING = re.compile(r"^[ ]{0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^[ ]{0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
#: An inline code span (CommonMark: a backtick string, the code, the same backtick string), where
#: Markdown syntax is literal; group 2 is the code.
CODE_SPAN = re.compile(r"(`+)([\s\S]*?)(?<!`)\1(?!`)")
#: A letter or digit: a line or region without one holds no text (a rule, a bar, a blank).
TEXT_CHARACTER = re.compile(r"[^\W_]")
PATH_SEPARATOR = " › "


@dataclass(frozen=True, slots=True)
class Section:
    """Characters ``[start, end)`` of a document and the titles of the headings it lies under."""

    start: int
    end: int
    path: tuple[str, ...]


def headings(text: str) -> Iterator[re.Match[str]]:
    """The heading lines of ``text`` (outside fenced code blocks), in order; group 1 is the ``#``s,
    group 2 the title."""
    fences = FENCE.finditer(text)
    fence = next(fences, None)
    for match in ATX_HEADING.finditer(text):
        while fence is not None and fence.end() <= match.start():
            fence = next(fences, None)
        if fence is None or match.start() < fence.start():
            yield match


def first_heading(text: str) -> str | None:
    """The text of the first heading of ``text``, if any."""
    match = next(headings(text), None)
    return match.group(2).strip() if match else None


def sections(text: str) -> Iterator[Section]:
    """The sections of ``text`` in order, together covering it; one section when it has no heading."""
    open_headings: list[tuple[int, str]] = []  # (level, title)
    start, path = 0, ()
    for match in headings(text):
        if match.start() > start or path:
            yield Section(start, match.start(), path)
        level = len(match.group(1))
        open_headings = [(lvl, title) for lvl, title in open_headings if lvl < level] + [(level, match.group(2).strip())]
        start, path = match.start(), tuple(title for _, title in open_headings)
    yield Section(start, len(text), path)


def section_label(title: str, path: tuple[str, ...]) -> str:
    """``"Title › Section › Subsection"``: the document title, then the heading path (its first
    heading left out when it repeats the title)."""
    parts = list(path[1:] if path and title and path[0] == title else path)
    return PATH_SEPARATOR.join([title, *parts] if title else parts)
