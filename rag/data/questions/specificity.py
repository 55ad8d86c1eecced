"""How specific a question's words are in the folder it is asked of, and the link targets left in text.

A question asked in front of a whole corpus must point at few passages: "What happens if
--recurse-submodules is specified?" holds on a dozen pages of the git manual, "What is the return
value?" on most pages of a C library's manual. :class:`FolderTerms` is computed once from the chunks
given to the generator (the whole folder, before sampling) over content words
(:func:`rag.data.questions.common.content_words`):

* the *document frequency* of a word: how many of the folder's documents hold it in some chunk;
  a word is **distinctive** when it is in at most ``max(MIN_DISTINCTIVE_DOCUMENTS,
  DISTINCTIVE_SHARE * documents)`` documents (the rare-term idea of IDF, Sparck Jones 1972, with a
  cut-off instead of a weight);
* the *matching chunks* of a set of words: how many chunks hold them all (a conjunctive Boolean
  query); a question whose words many chunks hold together is answered by many passages;
* the folder's *page names* (:func:`rag.data.questions.leak.url_name` of every document URL,
  normalized): a path-like token (``topics/repeatable-installs``, ``../topics/vcs-support``) whose last
  segment is one of them is a link target that conversion left in the sentence, not prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass

from rag.data.questions.common import content_words
from rag.data.questions.leak import normalize, url_name
from rag.types import Chunk, Document

DISTINCTIVE_SHARE = 0.05
MIN_DISTINCTIVE_DOCUMENTS = 2
_PATH_TOKEN = re.compile(r"(?<![\w/])(?:\.{1,2}/)*[\w.-]+(?:/[\w.-]*[\w-])+")


@dataclass(frozen=True)
class FolderTerms:
    """Document frequencies, chunk postings and page names of a folder (see the module docstring)."""

    documents: int
    document_frequency: Mapping[str, int]
    chunk_postings: Mapping[str, Set[int]]
    page_names: frozenset[str]

    @classmethod
    def from_chunks(cls, chunks: Iterable[Chunk], documents: Iterable[Document]) -> FolderTerms:
        postings: dict[str, set[int]] = {}
        holders: dict[str, set[str]] = {}
        for index, chunk in enumerate(chunks):
            for word in content_words(chunk.text):
                postings.setdefault(word, set()).add(index)
                holders.setdefault(word, set()).add(chunk.doc_id)
        documents = list(documents)
        names = frozenset(name for name in (normalize(url_name(d.url)) for d in documents) if name)
        return cls(len(documents), {word: len(docs) for word, docs in holders.items()}, postings, names)

    @property
    def distinctive_limit(self) -> float:
        """The largest document frequency of a distinctive word."""
        return max(MIN_DISTINCTIVE_DOCUMENTS, DISTINCTIVE_SHARE * self.documents)

    def distinctive(self, words: Iterable[str]) -> set[str]:
        """The words of ``words`` (content words) that are in at most :attr:`distinctive_limit` documents."""
        return {word for word in words if self.document_frequency.get(word, 0) <= self.distinctive_limit}

    def matching_chunks(self, words: Iterable[str]) -> int:
        """How many chunks hold every one of ``words`` (0 for no word)."""
        lists = sorted((self.chunk_postings.get(word, set()) for word in set(words)), key=len)
        if not lists:
            return 0
        common = set(lists[0])
        for postings in lists[1:]:
            common &= postings
        return len(common)

    def link_target(self, text: str) -> bool:
        """Whether ``text`` holds a path-like token whose last segment is a page name of the folder."""
        return any(normalize(url_name(token)) in self.page_names for token in _PATH_TOKEN.findall(text))
