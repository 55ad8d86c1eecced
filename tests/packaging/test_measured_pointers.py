"""Every "measured: docs/x.md#anchor" line of the code points at an anchor that exists (issue 43: the
numbers left the docstrings for docs/, each leaving one such line): a heading of the page, as GitHub
makes its anchor, or an ``<a id="...">`` the page holds."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
POINTER = re.compile(r"measured: (docs/[\w.-]+\.md)#([\w-]+)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors (lower-cased, punctuation but '-' and '_' dropped, spaces to '-') and explicit ids."""
    text = page.read_text(encoding="utf-8")
    headings = {re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
                for title in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}
    return headings | set(re.findall(r'<a id="([\w-]+)"></a>', text))


def test_every_measured_pointer_names_an_anchor_of_its_page():
    pointers = [(source.relative_to(REPO), page, anchor)
                for package in ("rag", "evaluation") for source in sorted((REPO / package).rglob("*.py"))
                for page, anchor in POINTER.findall(source.read_text(encoding="utf-8"))]
    assert len(pointers) >= 10  # the code's pointers are found at all
    missing = [p for p in pointers if p[2] not in anchors(REPO / p[1])]
    assert not missing, missing


def test_anchors_by_hand():
    assert anchors(REPO / "docs" / "measurements.md") >= {"bm25-kernel", "docx-blocks", "numbers-behind-code-choices"}
    assert "template-ratings" in anchors(REPO / "docs" / "data.md")
