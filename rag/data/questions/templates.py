"""The no-LLM question maker: templates over titles, section headings and definition sentences.

It generalizes the bundled Wikipedia generators (:mod:`rag.data.questions.wiki`) from article
summaries to any chunked corpus. For one chunk, every template that applies makes a candidate and one
is drawn with the seeded random generator:

``title``       (a document's first chunk, when the document has a title and the chunk's first
                sentence is a definition, below) "What is {title}?"; answer: that definition's
                predicate
``section``     (a chunk with a ``section`` attribute, e.g. a Markdown heading, other than the title)
                "What does {title} say about {section}?"; answer: the chunk's first sentence up to
                its first comma or semicolon
``definition``  a sentence "{Subject} is/was/are/were a/an/the {predicate}" (subject of 1-8 words,
                not a pronoun; a leading article lower-cased) gives "What {verb} {subject}?";
                answer: the predicate up to its first comma or semicolon
``known_item``  the same sentence read backwards, when the subject names the document (without its
                article it equals the title, or it is a proper name -- every word capitalized but
                of/and/de/von/van/al -- sharing a content word with the title):
                "What is the name of the {predicate}?"; answer: the subject

Gold is the chunk's document; the chunk id is recorded. A chunk no template applies to is counted
(``no_template``), like an LLM failure.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

from rag.data.questions.common import content_words
from rag.data.questions.filters import Candidate
from rag.data.sentences import split_sentences
from rag.types import Chunk, Document

NO_TEMPLATE = "no_template"
_DEFINITION = re.compile(
    r"^(?P<subject>[A-Z][^,;:()\[\]]{0,80}?)\s+(?P<verb>is|was|are|were)\s+(?P<predicate>(?:a|an|the)\s+[^;]+?)\.?$")
_PRONOUNS = frozenset("it this that these those he she they there here its his her their which who".split())
MAX_SUBJECT_WORDS = 8
_NAME_PARTICLES = frozenset("of and de von van al la le der del da di du".split())
_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)


def _first_clause(text: str) -> str:
    return re.split(r"[,;]", text, maxsplit=1)[0].strip()


def _definitions(text: str) -> list[tuple[str, str, str]]:
    """(subject, verb, predicate) of the definition sentences of ``text``."""
    found = []
    for sentence in split_sentences(text):
        match = _DEFINITION.match(sentence.strip())
        if match is None:
            continue
        subject = match.group("subject").strip()
        words = subject.split()
        if len(words) > MAX_SUBJECT_WORDS or words[0].lower() in _PRONOUNS:
            continue
        if _ARTICLE.match(subject) and len(words) > 1 and words[1][:1].islower():
            subject = words[0].lower() + subject[len(words[0]):]
        found.append((subject, match.group("verb"), _first_clause(match.group("predicate"))))
    return found


def names_document(subject: str, title: str) -> bool:
    """Whether ``subject`` names the document titled ``title`` (see ``known_item`` above)."""
    bare = _ARTICLE.sub("", subject).strip()
    if bare.casefold() == title.casefold():
        return True
    proper = all(word[:1].isupper() or word.lower() in _NAME_PARTICLES for word in bare.split())
    return proper and bool(content_words(bare) & content_words(title))


def template_candidate(chunk: Chunk, document: Document, rng: random.Random) -> Candidate | None:
    """One candidate for ``chunk`` (a seeded draw among the templates that apply), or None."""
    sentences = split_sentences(chunk.text)
    first = sentences[0] if sentences else chunk.text.strip()
    title = document.title.strip()
    section = str(getattr(chunk, "section", None) or "").strip()
    options: list[tuple[str, str, str, str]] = []  # (kind, template, question, answer)
    definitions = _definitions(chunk.text)
    opening = _definitions(first)
    if chunk.position == 0 and title and opening:
        options.append(("title", "What is {title}?", f"What is {title}?", opening[0][2]))
    if section and title and section.casefold() != title.casefold():
        template = "What does {title} say about {section}?"
        options.append(("section", template, template.format(title=title, section=section), _first_clause(first)))
    for subject, verb, predicate in definitions:
        options.append(("definition", "What {verb} {subject}?", f"What {verb} {subject}?", predicate))
        if title and names_document(subject, title):
            predicate_phrase = _ARTICLE.sub("", predicate)
            options.append(("known_item", "What is the name of the {predicate}?",
                            f"What is the name of the {predicate_phrase}?", subject))
    if not options:
        return None
    kind, template, question, answer = rng.choice(options)
    return Candidate(question, answer, chunk.chunk_id, chunk.url, chunk.text, kind,
                     {"template": template, **({"section": section} if section else {})})


def template_candidates(
    chunks: list[Chunk], documents: Mapping[str, Document], rng: random.Random,
) -> list[Candidate | str]:
    """A candidate per chunk, or :data:`NO_TEMPLATE` where no template applies."""
    return [template_candidate(chunk, documents[chunk.doc_id], rng) or NO_TEMPLATE for chunk in chunks]
