"""Filters that keep a made question only when it is usable, without asking any retriever.

A candidate is a question, its short answer and the chunk it was made from. The filters run in this
order; the first that fails names the reason the candidate is removed (:data:`FILTERS` holds each
with its threshold, for the tables):

=====================  ============================================================================
reason                 a candidate is removed when
=====================  ============================================================================
``not_a_question``     the question does not end with ``?``
``question_length``    the question has fewer than 3 or more than 40 words (white-space separated)
``answer_length``      the answer has more than 12 words
``refers_to_source``   the question points at its source ("the text", "this passage", "the
                       author", ...): it cannot stand alone in front of a whole corpus
``names_gold_document`` the question names its gold document's title, file or page name
                       (:mod:`rag.data.questions.leak`): a retriever matching names would find it
``answer_in_question`` the answer's normalized form occurs in the question's ("Who was Bing Crosby?"
                       / "Bing Crosby")
``answer_unsupported`` the answer is not supported by its chunk: its normalized form (SQuAD
                       normalization + accent/punctuation folding, as ``answer_in_context``,
                       :func:`evaluation.answers.containment_form`) does not occur in the chunk's
                       at token boundaries, and fewer than 80 % of its content words occur in the chunk
``near_duplicate``     the Jaccard similarity of its content-word set with an already kept
                       question's, or with a question the LLM was shown as an example, is >= 0.8
                       (so an exact repeat too); or it asks a kept question's fact the other way
                       round: each one's answer words are all among the other's question words
                       ("What is the name of the sponsoring member of the PSF?" / "Zope
                       Corporation" and "What is Zope Corporation?" / "a sponsoring member of the
                       PSF", from one sentence in two overlapping chunks)
=====================  ============================================================================

Content words (:func:`rag.data.questions.common.content_words`): ``\\w+`` tokens, case-folded,
minus NLTK's English stop words; numbers count.

The lexical bias of a question is ``|C(q) ∩ C(chunk)| / |C(q)|``, the share of the question's
distinct content words that occur in its chunk (0 for a question without content words). Questions
that copy their chunk's words favour BM25 (exact term match) over dense retrieval, so the set's
distribution of this share is reported beside any comparison made with it (:func:`lexical_bias`).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.answers import containment_form
from rag.data.questions.common import content_words
from rag.data.questions.leak import names_gold

MIN_QUESTION_WORDS, MAX_QUESTION_WORDS = 3, 40
MAX_ANSWER_WORDS = 12
SUPPORT_SHARE = 0.8
DUPLICATE_JACCARD = 0.8
_SOURCE_REFERENCE = re.compile(
    r"\b(?:the|this|that|given|above|following)\s+(?:text|passage|paragraph|article|document|excerpt|context|"
    r"section|chunk|author)\b|\bthis question\b", re.IGNORECASE)

FILTERS: tuple[tuple[str, str], ...] = (
    ("not_a_question", "the question ends with '?'"),
    ("question_length", f"{MIN_QUESTION_WORDS} to {MAX_QUESTION_WORDS} words"),
    ("answer_length", f"at most {MAX_ANSWER_WORDS} words"),
    ("refers_to_source", "no 'the text' / 'this passage' / 'the author' ..."),
    ("names_gold_document", "the question does not name its gold document (leak)"),
    ("answer_in_question", "the answer does not occur in the question"),
    ("answer_unsupported", f"the answer occurs in its chunk, or >= {SUPPORT_SHARE:.0%} of its content words do"),
    ("near_duplicate", f"content-word Jaccard < {DUPLICATE_JACCARD} with every kept question, none asked the other way round"),
)
BIAS_BINS = (0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class Candidate:
    """A made question before filtering: its text, short answer, source chunk, extra metadata and
    the normalized names of its gold document (:func:`rag.data.questions.leak.document_names`)."""

    question: str
    answer: str
    chunk_id: str
    url: str
    chunk_text: str
    kind: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    gold_names: frozenset[str] = field(default_factory=frozenset, compare=False, hash=False)


def _contains(haystack: str, needle: str) -> bool:
    """Whether the normalized ``needle`` occurs in the normalized ``haystack`` at token boundaries."""
    form = containment_form(needle)
    return bool(form) and f" {form} " in f" {containment_form(haystack)} "


def answer_supported(answer: str, chunk_text: str) -> bool:
    """The ``answer_unsupported`` test (see the module docstring) passes."""
    if _contains(chunk_text, answer):
        return True
    words = content_words(answer)
    return bool(words) and len(words & content_words(chunk_text)) / len(words) >= SUPPORT_SHARE


def jaccard(a: set[str], b: set[str]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (1.0 for two empty sets)."""
    return len(a & b) / len(a | b) if a | b else 1.0


def lexical_overlap(question: str, chunk_text: str) -> float:
    """The share of the question's content words that occur in the chunk (see the module docstring)."""
    words = content_words(question)
    return len(words & content_words(chunk_text)) / len(words) if words else 0.0


def rejection(candidate: Candidate) -> str | None:
    """The first per-candidate filter that removes ``candidate`` (None: it passes them all)."""
    question, answer = candidate.question, candidate.answer
    if not question.endswith("?"):
        return "not_a_question"
    if not MIN_QUESTION_WORDS <= len(question.split()) <= MAX_QUESTION_WORDS:
        return "question_length"
    if len(answer.split()) > MAX_ANSWER_WORDS:
        return "answer_length"
    if _SOURCE_REFERENCE.search(question):
        return "refers_to_source"
    if names_gold(question, candidate.gold_names):
        return "names_gold_document"
    if _contains(question, answer):
        return "answer_in_question"
    if not answer_supported(answer, candidate.chunk_text):
        return "answer_unsupported"
    return None


class QuestionFilter:
    """Applies :data:`FILTERS` to candidates one at a time, in order, remembering the kept questions
    and the example questions shown (for ``near_duplicate``) and counting every removal by reason."""

    def __init__(self, shown: Sequence[str] = ()) -> None:
        """``shown``: questions the generator was shown as examples; a copy of one is a near duplicate."""
        self.removed: Counter[str] = Counter()
        self.seen = 0
        self._kept: list[tuple[set[str], set[str]]] = [(content_words(question), set()) for question in shown]

    def keep(self, candidate: Candidate) -> bool:
        self.seen += 1
        reason = rejection(candidate)
        words, answer = content_words(candidate.question), content_words(candidate.answer)
        if reason is None and any(jaccard(words, kept) >= DUPLICATE_JACCARD
                                  or (answer and kept_answer and answer <= kept and kept_answer <= words)
                                  for kept, kept_answer in self._kept):
            reason = "near_duplicate"
        if reason is not None:
            self.removed[reason] += 1
            return False
        self._kept.append((words, answer))
        return True

    def table(self) -> list[dict[str, Any]]:
        """One row per filter, in order: its rule, the candidates it saw and how many it removed."""
        rows, remaining = [], self.seen
        for name, rule in FILTERS:
            removed = self.removed[name]
            rows.append({"filter": name, "keeps": rule, "in": remaining, "removed": removed})
            remaining -= removed
        return rows


def lexical_bias(overlaps: Sequence[float]) -> dict[str, Any]:
    """Summary of the per-question lexical overlaps: count, mean, quartiles, the share of questions
    whose content words all occur in their chunk, and a histogram (bins ``[0, .2), [.2, .4), ...,
    [.8, 1), {1}``)."""
    if not overlaps:
        return {"questions": 0}
    values = sorted(overlaps)
    quartiles = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    labels = ["[0, 0.2)", "[0.2, 0.4)", "[0.4, 0.6)", "[0.6, 0.8)", "[0.8, 1)", "1"]
    bins = Counter(labels[next(i for i, edge in enumerate(BIAS_BINS) if v < edge)] if v < 1.0 else "1" for v in values)
    return {
        "questions": len(values), "mean": statistics.fmean(values), "p25": quartiles[0], "median": quartiles[1],
        "p75": quartiles[2], "all_words_copied": sum(v >= 1.0 for v in values) / len(values),
        "histogram": {label: bins[label] for label in labels},
    }
