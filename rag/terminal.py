"""What the tool prints fits a terminal of :data:`WIDTH` columns: the width, and the one rule that
wraps a printed line to it (:func:`fit`), for the command line, the run's summary and its errors."""

from __future__ import annotations

import textwrap

WIDTH = 100  # no printed line is wider
CONTINUATION = "    "  # the indent of a wrapped line's continuation


def fit(text: str, width: int = WIDTH) -> str:
    """``text`` with every line over ``width`` columns wrapped at spaces (never cut), its continuations
    indented four spaces more than it; a word is never split (not at hyphens either), so a path longer
    than a line stays whole, on a line of its own, to be copied. Lines that fit are left as they are."""
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        out += textwrap.wrap(line, width=width, subsequent_indent=indent + CONTINUATION, break_on_hyphens=False,
                             break_long_words=False)
    return "\n".join(out)
