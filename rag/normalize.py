"""Unicode normalization of text, the one rule for documents and queries alike."""

from __future__ import annotations

import unicodedata


def nfkc(text: str) -> str:
    """``text`` in Unicode normalization form NFKC (compatibility decomposition, then canonical
    composition, UAX #15): ligatures such as ``ﬁ`` become ``fi``, full-width letters their ASCII forms.
    Checked first, since most texts are normalized already."""
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)
