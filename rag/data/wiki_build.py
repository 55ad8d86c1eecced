"""Building the bundled data set (data/wiki, data/smoke) from the vital-article summaries.

Used by ``scripts/build_wiki_data.py bundled``; kept in the package so the steps are testable.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from rag.data.urls import page_name, title_from_wiki_url, wiki_url
from rag.types import Document, Question

QUESTION_COUNTS = {"seed_style": 600, "known_item": 600, "multi_doc": 400}
REFERENCE_SET = "reference"
# The reference's "ground_truth" of its two-page questions is a template, not an answer.
_REFERENCE_PLACEHOLDERS = ("Comparison of {} and {}", "Information from {} and {}")
SMOKE_QUESTIONS_PER_SET = 10
SMOKE_DOCUMENTS = 40


def documents_from_summaries(summaries: Mapping[str, Mapping[str, Any]]) -> list[Document]:
    """One document per summary ``{title, extract, description, topic}``, sorted by ``doc_id``.

    ``doc_id`` is the page name (title with underscores); ``url`` the canonical article URL.
    Summaries with an empty extract are left out.
    """
    documents = [
        Document(
            doc_id=page_name(entry["title"]), url=wiki_url(entry["title"]), title=entry["title"],
            text=entry["extract"].strip(),
            metadata={"topic": entry.get("topic", ""), "description": entry.get("description") or ""},
        )
        for entry in summaries.values()
        if entry.get("extract", "").strip()
    ]
    return sorted(documents, key=lambda d: d.doc_id)


def smoke_subset(
    documents: Sequence[Document], question_sets: Mapping[str, Sequence[Question]], seed: int,
    per_set: int = SMOKE_QUESTIONS_PER_SET, n_documents: int = SMOKE_DOCUMENTS,
) -> tuple[list[Document], list[Question]]:
    """A small deterministic sample: ``per_set`` questions of each set, their gold documents, and
    random distractor documents up to ``n_documents`` (more when the gold documents need it)."""
    rng = random.Random(f"{seed}:smoke")
    questions = [q for name in sorted(question_sets) for q in rng.sample(list(question_sets[name]), per_set)]
    gold = {url for q in questions for group in q.gold_urls for url in group}
    kept = [d for d in documents if d.url in gold]
    others = [d for d in documents if d.url not in gold]
    kept += rng.sample(others, max(0, n_documents - len(kept)))
    return sorted(kept, key=lambda d: d.doc_id), questions


def _one_or_many(value: str | list[str]) -> list[str]:
    """The reference's fields hold a string for one page and a list for two."""
    return [value] if isinstance(value, str) else list(value)


def _reference_type(item: Mapping[str, Any]) -> str:
    return item.get("question_type") or REFERENCE_SET


def reference_questions(
    reference: Mapping[str, Any], corpus_urls: Collection[str],
) -> tuple[list[Question], dict[str, list[str]]]:
    """The reference system's own questions (``questions_100.json``) as the ``reference`` set.

    A question is kept when every one of its pages (``source_url``, a URL or a list of URLs, all
    required) is in ``corpus_urls`` after mapping to the canonical URL form (:func:`wiki_url`;
    redirects are not followed). Kept: id ``reference-<question_id>``, one group per page (AND),
    ``type`` the reference's ``question_type`` (``"reference"`` when it has none), ``difficulty`` as
    metadata, ``answers`` its ``ground_truth`` unless that is the placeholder of a two-page question
    ("Comparison of A and B", "Information from A and B"). Returns the kept questions in source
    order and, for each left-out ``question_id``, its pages missing from the corpus.
    """
    kept: list[Question] = []
    left_out: dict[str, list[str]] = {}
    for item in reference["questions"]:
        urls = [wiki_url(title_from_wiki_url(url)) for url in _one_or_many(item["source_url"])]
        missing = [url for url in urls if url not in corpus_urls]
        if missing:
            left_out[item["question_id"]] = missing
            continue
        titles = _one_or_many(item["source_title"])
        answer = item.get("ground_truth") or ""
        placeholder = len(titles) == 2 and answer in {form.format(*titles) for form in _REFERENCE_PLACEHOLDERS}
        kept.append(Question(
            qid=f"{REFERENCE_SET}-{item['question_id']}", text=item["question"], gold_urls=[[url] for url in urls],
            answers=[answer] if answer and not placeholder else [], qtype=_reference_type(item),
            question_set=REFERENCE_SET, metadata={"difficulty": item["difficulty"]},
        ))
    return kept, left_out


def reference_manifest(
    reference: Mapping[str, Any], kept: Sequence[Question], left_out: Mapping[str, list[str]],
) -> dict[str, Any]:
    """The manifest entry of the ``reference`` set: counts, and why each left-out question was left out."""
    types = {item["question_id"]: _reference_type(item) for item in reference["questions"]}
    return {
        "questions": len(reference["questions"]), "kept": len(kept), "left_out": len(left_out),
        "left_out_reason": ("a gold page is not in the bundled corpus "
                            "(URLs compared in canonical form, redirects not followed)"),
        "left_out_by_type": dict(sorted(Counter(types[qid] for qid in left_out).items())),
        "missing_pages": dict(left_out),
    }
