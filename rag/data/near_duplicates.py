"""Documents of a folder that hold the text of others: the same page in two formats (twins, left
out), or a compilation of pages (reported, kept).

Real documentation folders ship one text several times: Node.js's ``doc/api`` holds every page as
``.md`` and ``.html`` and all of them again in ``all.html``; libxslt's holds its API reference in
``gtk-doc/`` and in ``html/html/`` and its manual pages again in ``xslt.html``. Indexed as they are,
a question made from ``assert.md`` is answered by the chunk of ``assert.html`` with the same words,
and that counts as a miss, so MRR would measure which twin won (measured:
docs/measurements.md#near-duplicate-twins).

Rule (measured: docs/data.md, "Near-duplicate documents"):

- A document's **shingles** are its runs of :data:`SHINGLE_WORDS` consecutive words (lower-cased
  ``\\w+`` tokens), less those found in more than :data:`MAX_DOCUMENTS_PER_SHINGLE` documents
  (shared phrasing: a navigation menu, a licence line); documents with fewer than
  :data:`MIN_SHINGLES` are never compared (index pages share most of their few words with their siblings).
- ``contained(P, D) = |S(P) ∩ S(D)| / |S(P)|``: the share of P's shingles found in D.
- D is a **compilation** when it contains (``contained >=`` :data:`COVERED`) at least two other
  documents, each at most half its size, and they account for at least :data:`MADE_OF` of its
  shingles (so it has little text of its own). It is reported, never left out: whether it or its
  parts are the pages depends on the folder (Node.js's ``all.html`` holds 118 pages; Git's
  ``git-log.html`` holds 9 of the fragments its source includes, and is the page), so the user
  chooses (``dataset.exclude``).
- Two other documents are **twins** when they are one page (the same file name once the document
  suffixes are stripped: ``assert.md`` and ``assert.html``, ``guide/a.html`` and ``_sources/a.rst.txt``,
  :func:`page_name`) and each contains at least :data:`TWIN` of the other (``min(contained(A, B),
  contained(B, A))``); twins form groups (transitively), and each group keeps one document, the
  others are left out: the one whose format comes first in :data:`KEPT_FORMATS` (the page as
  published, HTML, before its sources; structured sources before text read off a page layout; plain
  text last, as Sphinx's ``_sources/*.rst.txt`` copies keep their markup), then the first of the
  sorted walk. (The walk alone would keep ``_sources/c-api/abstract.rst.txt`` over
  ``c-api/abstract.html`` in Python's documentation, as ``_`` sorts before ``c``.) Pages under
  different names are never twins, however much they share: Git's ``git-diff-index.html`` and
  ``git-diff-files.html`` are 88% the same included option list, yet document two commands.

Exact: every shingle is compared (no sampling), word ids from one vocabulary, shingles as 64-bit
polynomial hashes of the ids (collisions ~1e-19 per pair), so the result does not depend on the
process (no randomized ``hash``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np

from rag.data.config import FILES_SUFFIXES
from rag.types import Document

SHINGLE_WORDS = 5
MIN_SHINGLES = 100
COVERED = 0.8
#: The share of a compilation's shingles its pages must account for (else it has text of its own).
MADE_OF = 0.8
TWIN = 0.5
#: A shingle found in more documents than this is shared phrasing (navigation, licence lines), not a
#: copy: neither counted nor compared.
MAX_DOCUMENTS_PER_SHINGLE = 8
#: Which format of twins is kept, most wanted first (see the module docstring).
KEPT_FORMATS = (".html", ".htm", ".xhtml", ".md", ".markdown", ".rst", ".docx", ".pdf", ".txt")
#: The suffixes :func:`page_name` strips: the formats a folder is read in (so Sphinx's ``.rst.txt`` too).
PAGE_SUFFIXES = frozenset(FILES_SUFFIXES)
_WORD = re.compile(r"\w+")
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class NearDuplicate:
    """A document holding others' text: a ``twin`` of ``kept`` (left out; ``shared``: the smaller of
    the two containments), or a ``compilation`` containing ``pages`` documents (kept; ``shared``: the
    smallest containment of its pages)."""

    kind: str
    kept: str | None
    pages: int
    shared: float

    def record(self) -> dict:
        """The manifest's entry."""
        if self.kind == "twin":
            return {"kind": "twin", "kept": self.kept, "shared": round(self.shared, 3)}
        return {"kind": "compilation", "pages": self.pages, "shared": round(self.shared, 3)}

    @property
    def left_out(self) -> bool:
        """Twins are left out of the corpus; compilations stay."""
        return self.kind == "twin"

    def describe(self, url: str) -> str:
        """``assert.md (twin of assert.html, 83% shared)``, ``all.html (holds 113 documents)``."""
        if self.kind == "twin":
            return f"{url} (twin of {self.kept}, {self.shared:.0%} shared)"
        return f"{url} (holds {self.pages} documents)"


def page_name(url: str) -> str:
    """The file name of ``url`` without its document suffixes (case-insensitive), the name a page keeps
    across formats: ``api/assert.md`` -> ``assert``, ``_sources/intro.rst.txt`` -> ``intro``,
    ``RelNotes/1.8.5.6.txt`` -> ``1.8.5.6``."""
    name = PurePosixPath(url).name
    while PurePosixPath(name).suffix.lower() in PAGE_SUFFIXES and PurePosixPath(name).stem:
        name = PurePosixPath(name).stem
    return name.lower()


def kept_rank(url: str) -> int:
    """The place of ``url``'s format in :data:`KEPT_FORMATS` (lower is kept first among twins)."""
    suffix = PurePosixPath(url).suffix.lower()
    return KEPT_FORMATS.index(suffix) if suffix in KEPT_FORMATS else len(KEPT_FORMATS)


def shingles(text: str, vocabulary: dict[str, int]) -> np.ndarray:
    """The sorted distinct shingle hashes of ``text`` (uint64), word ids from ``vocabulary`` (grown)."""
    ids = np.fromiter((vocabulary.setdefault(match.group(), len(vocabulary)) for match in _WORD.finditer(text.lower())),
                      dtype=np.uint64)  # streamed: no list of the words of a huge document
    if len(ids) < SHINGLE_WORDS:
        return np.empty(0, dtype=np.uint64)
    hashes = np.zeros(len(ids) - SHINGLE_WORDS + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for offset in range(SHINGLE_WORDS):
            hashes = hashes * _MULTIPLIER + ids[offset : offset + len(hashes)] + np.uint64(1)
    return np.unique(hashes)


def own_shingles(sets: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Each document's shingles less those found in more than :data:`MAX_DOCUMENTS_PER_SHINGLE`
    documents (shared phrasing: navigation, licence lines)."""
    if not sets:
        return []
    hashes, spread = np.unique(np.concatenate(sets), return_counts=True)
    widespread = hashes[spread > MAX_DOCUMENTS_PER_SHINGLE]
    return [s[~np.isin(s, widespread, assume_unique=True)] if len(widespread) else s for s in sets]


def shared_counts(sets: Sequence[np.ndarray]) -> dict[tuple[int, int], int]:
    """``|S(a) ∩ S(b)|`` for every pair ``a < b`` of ``sets`` sharing a shingle."""
    if not sets:
        return {}
    hashes = np.concatenate(sets)
    owners = np.concatenate([np.full(len(s), i, dtype=np.int64) for i, s in enumerate(sets)])
    order = np.argsort(hashes, kind="stable")
    hashes, owners = hashes[order], owners[order]
    starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])
    spread = np.diff(np.r_[starts, len(hashes)])
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for start, size in zip(starts[spread > 1], spread[spread > 1]):
        group = owners[start : start + size]
        for i in range(size):
            for j in range(i + 1, size):
                counts[(int(group[i]), int(group[j]))] += 1
    return counts


def near_duplicates(documents: Sequence[Document]) -> dict[str, NearDuplicate]:
    """The twins to leave out and the compilations (url -> which), by the module docstring's rule;
    ``documents`` in the order of the sorted walk."""
    if len(documents) < 2:
        return {}
    vocabulary: dict[str, int] = {}
    sets = own_shingles([shingles(document.text, vocabulary) for document in documents])
    sizes = {i: len(s) for i, s in enumerate(sets)}
    compared = [i for i, size in sizes.items() if size >= MIN_SHINGLES]
    counts = shared_counts([sets[i] if sizes[i] >= MIN_SHINGLES else sets[i][:0] for i in range(len(sets))])
    contains: dict[int, list[tuple[int, float]]] = defaultdict(list)  # D -> [(P, contained(P, D))]
    pairs: list[tuple[int, int, float]] = []
    for (a, b), shared in counts.items():
        in_b, in_a = shared / sizes[a], shared / sizes[b]  # contained(a, b), contained(b, a)
        if in_b >= COVERED and 2 * sizes[a] <= sizes[b]:
            contains[b].append((a, in_b))
        if in_a >= COVERED and 2 * sizes[b] <= sizes[a]:
            contains[a].append((b, in_a))
        pairs.append((a, b, min(in_a, in_b)))
    found: dict[str, NearDuplicate] = {}
    compilations = {d for d, pages in contains.items()
                    if len(pages) >= 2 and np.isin(sets[d], np.concatenate([sets[p] for p, _ in pages])).mean() >= MADE_OF}
    for d in sorted(compilations):
        found[documents[d].url] = NearDuplicate("compilation", None, len(contains[d]), min(c for _, c in contains[d]))
    parent = {i: i for i in compared}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    closeness: dict[int, float] = {}
    for a, b, shared in sorted(pairs):
        if (shared >= TWIN and a not in compilations and b not in compilations
                and page_name(documents[a].url) == page_name(documents[b].url)):
            ra, rb = root(a), root(b)
            if ra != rb:
                kept, other = sorted((ra, rb), key=lambda i: (kept_rank(documents[i].url), i))
                parent[other] = kept
            closeness[b] = max(closeness.get(b, 0.0), shared)
            closeness[a] = max(closeness.get(a, 0.0), shared)
    for i in compared:
        first = root(i)
        if first != i and i not in compilations:
            found[documents[i].url] = NearDuplicate("twin", documents[first].url, 0, closeness[i])
    return found
