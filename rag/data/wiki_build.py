"""Building the bundled data set (data/wiki, data/smoke) from the vital-article summaries.

Used by ``scripts/build_wiki_data.py bundled``; kept in the package so the steps are testable.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from rag.data.urls import page_name, wiki_url
from rag.types import Document, Question

QUESTION_COUNTS = {"seed_style": 600, "known_item": 600, "multi_doc": 400}
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
