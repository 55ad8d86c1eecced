"""Leak: the share of questions that name their gold document.

A question *leaks* when it names one of its gold documents: the normalized form of one of that
document's names occurs in the question's normalized form at word boundaries. A retriever that
matches page names then finds the page whatever its method, so a set with a high leak measures
name matching, not retrieval (issue 27; the lexical bias, :func:`rag.data.questions.filters.lexical_bias`,
does not see it: the name is not copied chunk text).

Normal form (:func:`normalize`): :func:`rag.normalize.fold` (ligatures and full-width letters
folded), case-folded, every run of characters that are not
letters or digits made one space (so ``git-cat-file`` and ``git cat file`` are the same name).

A document's names (:func:`document_names`), each kept when its normal form holds a letter:

* its title, and the title without a trailing parenthesized qualifier: a man-page section such as
  ``git-stash(1)`` -> ``git-stash``, a disambiguation such as ``Mercury (planet)`` -> ``Mercury``;
* its file or page name: the last segment of its URL (percent-decoded, ``_`` read as a space, the
  file suffix such as ``.html`` dropped), and that name without a trailing qualifier too.

Gold URLs that are not documents of the corpus contribute their URL name only. Real users do name
pages ("what does git stash do?"), so leak is a figure to show beside the lexical bias and to keep
near what third-party questions on that kind of corpus show, not to force to 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from rag.normalize import fold
from rag.types import Document, Question

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")


def normalize(text: str) -> str:
    """``text`` in the normal form of the module docstring (words joined by single spaces)."""
    return " ".join(_NON_WORD.sub(" ", fold(text).casefold()).split())


def url_name(url: str) -> str:
    """The page or file name of ``url``: its last path segment, percent-decoded, ``_`` as a space,
    without its file suffix (``https://en.wikipedia.org/wiki/Bing_Crosby`` -> ``Bing Crosby``,
    ``howto/git-stash.html`` -> ``git-stash``)."""
    path = urlsplit(url).path if "://" in url else url
    segment = unquote(path.rstrip("/").rsplit("/", 1)[-1]).replace("_", " ")
    return PurePosixPath(segment).stem if "." in segment[1:] else segment


def document_names(url: str, title: str | None) -> frozenset[str]:
    """The normalized names of the document at ``url`` titled ``title`` (see the module docstring)."""
    raw = [url_name(url), *([title] if title else [])]
    forms = {normalize(variant) for name in raw for variant in (name, _QUALIFIER.sub("", name))}
    return frozenset(form for form in forms if any(char.isalpha() for char in form))


def names_gold(question: str, names: Iterable[str]) -> bool:
    """Whether ``question`` names one of ``names`` (normal forms) at word boundaries."""
    padded = f" {normalize(question)} "
    return any(f" {name} " in padded for name in names)


@dataclass(frozen=True)
class Leak:
    """A question set's leak: how many questions name a gold document, of how many, and which."""

    questions: int
    leaked: int
    leaked_ids: tuple[str, ...]

    @property
    def share(self) -> float:
        return self.leaked / self.questions if self.questions else 0.0

    def summary(self) -> dict[str, float | int]:
        """The figures recorded in provenance and manifests: ``{"questions", "leaked", "share"}``."""
        return {"questions": self.questions, "leaked": self.leaked, "share": round(self.share, 4)}


def question_leaks(question: Question, documents: Mapping[str, Document]) -> bool:
    """Whether ``question`` names one of its gold documents (``documents`` keyed by URL)."""
    names: set[str] = set()
    for group in question.gold_urls:
        for url in group:
            document = documents.get(url)
            names |= document_names(url, document.title if document else None)
    return names_gold(question.text, names)


def leak(questions: Sequence[Question], documents: Iterable[Document] | Mapping[str, Document]) -> Leak:
    """The :class:`Leak` of ``questions`` over the corpus ``documents`` (a sequence, or keyed by URL)."""
    by_url = documents if isinstance(documents, Mapping) else {document.url: document for document in documents}
    leaked = tuple(q.qid for q in questions if question_leaks(q, by_url))
    return Leak(len(questions), len(leaked), leaked)


def gold_overlap(questions: Sequence[Question], documents: Mapping[str, Document]) -> float | None:
    """The mean share of a question's content words that occur in its gold pages (their union): how
    much a set copies its pages, measured on any set with gold (a made set's *lexical bias* is the
    same share against its one chunk). None when no question has a gold page in ``documents``."""
    from rag.data.questions.common import content_words

    words_of: dict[str, set[str]] = {}
    shares = []
    for question in questions:
        urls = [url for group in question.gold_urls for url in group if url in documents]
        words = content_words(question.text)
        if not urls or not words:
            continue
        page_words: set[str] = set()
        for url in urls:
            if url not in words_of:
                words_of[url] = content_words(documents[url].text)
            page_words |= words_of[url]
        shares.append(len(words & page_words) / len(words))
    return round(sum(shares) / len(shares), 4) if shares else None


def leak_share(questions: Sequence[Question], documents: Iterable[Document] | Mapping[str, Document]) -> float:
    """The share of ``questions`` that name a gold document (0.0 for no question)."""
    return leak(questions, documents).share


def leak_fact(leaks: Mapping[str, Mapping[str, float | int]]) -> str:
    """One line for the report's run facts from each set's :meth:`Leak.summary`, ``set 73% (435 of 600)``."""
    return "leak (questions naming their gold document's title, file or page name): " + ", ".join(
        f"{name} {figure['share']:.0%} ({figure['leaked']} of {figure['questions']})" for name, figure in leaks.items())
