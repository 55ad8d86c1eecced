"""Regex sentence splitting that returns character spans (no NLTK data needed, works offline).

A sentence ends at ``.``, ``!`` or ``?`` (optionally followed by closing quotes or brackets) when
white space and then an upper-case letter, a digit or an opening quote/bracket follow, and at every
line break. A period does not end a sentence after a known abbreviation ("Dr.", "e.g.", "St.",
"approx.") or after an initial ("J. R. R. Tolkien", "Arthur C. Clarke", "U.S.").

Spans exclude surrounding white space, so every non-white-space character of the text lies in
exactly one span and ``text[start:end]`` is the sentence verbatim.
"""

from __future__ import annotations

import re

ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft rev gen col lt sgt capt maj adm gov sen rep pres hon
    vs etc cf al approx ca fl no nos vol vols pp ed eds fig figs
    inc ltd co corp bros dept est jan feb mar apr jun jul aug sep sept oct nov dec
    """.split()
)

_CANDIDATE_END = re.compile(r"[.!?]+[\"'”’»)\]]*\s+(?=[\"'“‘«(\[]?[A-Z0-9\u00C0-\u00DE\u0391-\u03A9\u0410-\u042F])")
_LINE_BREAK = re.compile(r"\s*\n\s*")
_INITIALS = re.compile(r"^(?:[A-Za-z]\.)*[A-Za-z]$")


def _is_abbreviation(text: str, period_pos: int) -> bool:
    """True when the period at ``period_pos`` closes an abbreviation or an initial, not a sentence."""
    start = period_pos
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:period_pos].lstrip("\"'“‘«([").lower()
    return word in ABBREVIATIONS or bool(_INITIALS.match(word))


def _split_line(text: str, offset: int, end: int, spans: list[tuple[int, int]]) -> None:
    start = offset
    for match in _CANDIDATE_END.finditer(text, offset, end):
        punctuation = match.group(0)
        if punctuation[0] == "." and len(punctuation.rstrip().rstrip("\"'”’»)]")) == 1:
            if _is_abbreviation(text, match.start()):
                continue
        sentence_end = match.start() + len(match.group(0).rstrip())
        if sentence_end > start:
            spans.append((start, sentence_end))
        start = match.end()
    stripped_end = end
    while stripped_end > start and text[stripped_end - 1].isspace():
        stripped_end -= 1
    if stripped_end > start:
        spans.append((start, stripped_end))


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text[start:end]`` (offsets into
    ``text``), in order; ``start`` and ``end`` should lie at line boundaries."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    line_start = start
    for line_break in _LINE_BREAK.finditer(text, start, end):
        _split_line(text, _skip_space(text, line_start, end), line_break.start(), spans)
        line_start = line_break.end()
    _split_line(text, _skip_space(text, line_start, end), end, spans)
    return spans


def _skip_space(text: str, position: int, end: int) -> int:
    while position < end and text[position].isspace():
        position += 1
    return position


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` as strings (see :func:`sentence_spans`)."""
    return [text[start:end] for start, end in sentence_spans(text)]
