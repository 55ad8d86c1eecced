"""What the load stage records and selects: the question sets a run evaluates, and the data summary
its manifest keeps (hashes, counts, skipped records, each made set's provenance and each set's leak)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag.chunking import documents_fingerprint
from rag.config import portable_path
from rag.data import Dataset
from rag.data.questions.leak import gold_overlap, leak
from rag.errors import ConfigError
from rag.io_utils import sha256_file, sha256_strings
from rag.types import Question


def data_summary(dataset: Dataset, question_sets: Mapping[str, Sequence[Question]]) -> dict[str, Any]:
    """What the manifest records about the data: file and content hashes, counts, skipped records, and
    how each made question set was made (its provenance sidecar), and each set's leak
    and its lexical overlap with its gold pages (:mod:`rag.data.questions.leak`)."""
    documents = {document.url: document for document in dataset.documents}
    return {
        "name": dataset.name,
        "source_files": {source_name(path, dataset.source_root): sha256_file(path) for path in dataset.source_files},
        **({"files": {"read": dataset.files_read, "skipped": dataset.files_skipped}} if dataset.files_read is not None else {}),
        **({"duplicates": dict(dataset.duplicates),
            "generated": dict(dataset.generated),
            "near_duplicates": {url: why.record() for url, why in dataset.near_duplicates.items()},
            "cleaning": dict(dataset.cleaning),
            "boilerplate_lines": list(dataset.boilerplate)} if dataset.files_read is not None else {}),
        "documents": len(dataset.documents),
        "documents_sha256": documents_fingerprint(dataset.documents),
        "question_sets": {
            name: {"questions": len(qs), "sha256": questions_fingerprint(qs), "leak": leak(qs, documents).summary(),
                   "gold_overlap": gold_overlap(qs, documents)}
            for name, qs in question_sets.items()
        },
        "skipped_invalid": dict(dataset.skipped),
        "skipped_examples": list(dataset.skipped_examples),
        "question_provenance": {name: made for name, made in dataset.question_provenance.items() if name in question_sets},
    }


def source_name(path: Path, root: Path | None) -> str:
    """How the manifest names a source file: relative to the data set's folder (POSIX form) when it
    has one, so no absolute path of the user's machine is written for a folder of files."""
    return portable_path(path, root) if root is not None else str(path)


def select_question_sets(
    dataset: Dataset, wanted: Sequence[str] | None, limit: int | None
) -> dict[str, list[Question]]:
    """The configured question sets (all when ``wanted`` is None), each cut to its first ``limit``."""
    available = dataset.question_sets
    if not available:
        raise ConfigError("dataset.questions", "the data set has no questions; expected a question file "
                          "(our JSONL format, docs/data.md), or a mapping set name -> file")
    names = list(wanted) if wanted is not None else list(available)
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ConfigError("question_sets", f"unknown question set(s) {unknown}; expected among {sorted(available)}")
    return {name: list(available[name])[:limit] if limit else list(available[name]) for name in names}


def questions_fingerprint(questions: Sequence[Question]) -> str:
    return sha256_strings(
        json.dumps([q.qid, q.text, q.gold_urls, q.answers, q.qtype], ensure_ascii=False) for q in questions
    )
