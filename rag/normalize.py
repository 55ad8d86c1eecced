"""Unicode normalization of text, the one rule for documents and queries alike (:func:`fold`).

NFKC would be the simplest rule, but it also erases what a compatibility character means: ``(1 + x)ⁿ``
becomes ``(1 + x)n``, ``x²`` becomes ``x2``, ``CO₂`` ``CO2``, ``½`` ``1⁄2``, ``ℝ`` ``R``. So only the
compatibility characters that are another way of drawing plain text are folded to it: one glyph for
several characters (decomposition tag ``<compat>`` and more than one character: the ligatures ``ﬁ``,
``ﬂ``, ``ﬀ``, ``ĳ``, ``…``, ``Ⅳ``), and the forms tagged ``<wide>`` and ``<narrow>`` (full-width ``Ａ``,
half-width forms), ``<noBreak>`` (the no-break space), ``<small>``, ``<vertical>``, ``<square>`` and
the Arabic presentation forms (``<initial>``, ``<medial>``, ``<final>``, ``<isolated>``): each becomes
its NFKC form, unless that form holds a combining mark (the spacing accents ``¨``, ``´`` would become a
space and a combining mark). The spaces of other widths (``<compat>`` spaces: the thin
space U+2009, the hair space U+200A) become a space. A ``<compat>`` letter of its own stays (``ſ``, the long s, which Python's
``re`` documentation names as a character apart from ``s``; ``µ``), and so do superscripts and
subscripts (``<super>``, ``<sub>``: ``ⁿ``, ``²``, ``₂``, ``™``), fractions (``<fraction>``), circled
forms (``<circle>``: ``①``) and styled letters (``<font>``: ``ℝ``, ``𝑥``).
The result is then in NFC (canonical composition: ``e`` and a combining acute become ``é``).
"""

from __future__ import annotations

import unicodedata

#: The decomposition tags (UAX #44) of the compatibility characters :func:`fold` replaces.
FOLDED_TAGS = frozenset({"<compat>", "<wide>", "<narrow>", "<noBreak>", "<small>", "<vertical>", "<square>",
                         "<initial>", "<medial>", "<final>", "<isolated>"})


class _FoldTable(dict):
    """``str.translate``'s table for :func:`fold`, filled in as code points are met (a code point
    that is not folded maps to itself)."""

    def __missing__(self, code: int) -> str:
        character = chr(code)
        tag = unicodedata.decomposition(character).split(" ", 1)[0]
        folded = unicodedata.normalize("NFKC", character) if tag in FOLDED_TAGS else character
        if any(unicodedata.combining(c) for c in folded) or (tag == "<compat>" and len(folded) == 1
                                                             and not folded.isspace()):
            folded = character
        self[code] = folded
        return folded


_FOLD = _FoldTable()


def fold(text: str) -> str:
    """``text`` with the compatibility characters that only draw plain text folded to it (ligatures,
    full-width letters, the no-break space), the others kept (superscripts, subscripts; see the module
    docstring), in NFC. A text that is NFKC already is returned as it is (most are)."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    return unicodedata.normalize("NFC", text.translate(_FOLD))
