"""How a question file was made, in a sidecar JSON file beside it.

``q.jsonl`` (or ``q.jsonl.gz``) has its provenance in ``q.provenance.json``: generator, model and
endpoint, prompt hash, seed, the candidates tried, the failures by reason, each filter with its
counts, the lexical bias and the leak (:mod:`rag.data.questions.leak`). A data set that reads a question file with a sidecar carries it into
the run's manifest (``data.question_provenance``) and the report's run facts
(:func:`provenance_fact`). Files of the same stem hold the review: ``q.review.csv``, ``q.review.html``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rag.errors import DataError

PROVENANCE_SUFFIX = ".provenance.json"


def stem(path: Path) -> str:
    """``q`` for ``q.jsonl``, ``q.jsonl.gz``, ``q.review.csv`` and ``q.review.html``; any other name
    without its last suffix."""
    name = path.name
    for suffix in (".jsonl.gz", ".jsonl", ".review.csv", ".review.html"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def sibling(path: Path, suffix: str) -> Path:
    """The file of the same stem with ``suffix`` (``.provenance.json``, ``.review.csv``, ...)."""
    return path.with_name(stem(path) + suffix)


def read_provenance(question_file: Path) -> dict[str, Any] | None:
    """The sidecar of ``question_file``, or None when it has none; an unreadable one is a DataError."""
    path = sibling(question_file, PROVENANCE_SUFFIX)
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(path, f"not a valid provenance file: {exc}") from None
    if not isinstance(value, dict):
        raise DataError(path, "expected a JSON object")
    return value


def provenance_fact(set_name: str, provenance: dict[str, Any]) -> str:
    """One line for the report's run facts: how the set's questions were made, its lexical bias and its leak."""
    model = provenance.get("model")
    made = f"{provenance.get('generator', '?')}" + (f" ({model})" if model else "")
    bias = provenance.get("lexical_bias") or {}
    bias_text = (f"lexical bias: mean {bias['mean']:.2f}, median {bias['median']:.2f}, all words copied "
                 f"{bias['all_words_copied']:.0%}" if bias.get("questions") else "lexical bias: n/a")
    made_leak = provenance.get("leak") or {}
    leak_text = (f"leak (questions naming their gold document): {made_leak['share']:.0%} "
                 f"({made_leak['leaked']} of {made_leak['questions']})" if made_leak.get("questions") else "leak: n/a")
    failures = provenance.get("failures") or {}
    removed = {row["filter"]: row["removed"] for row in provenance.get("filters", []) if row.get("removed")}
    review = provenance.get("review")
    parts = [
        f"questions of {set_name}: made by {made}, seed {provenance.get('seed')}, prompt "
        f"{str(provenance.get('prompt_sha256') or '-')[:12]}",
        f"{provenance.get('written', '?')} written of {provenance.get('candidates', '?')} chunks tried",
        "failures " + (json.dumps(failures) if failures else "none"),
        "filtered " + (json.dumps(removed) if removed else "none"),
        bias_text,
        leak_text,
    ]
    if review:
        parts.append(f"reviewed: {review.get('accepted')} accepted, {review.get('rejected')} rejected, "
                     f"{review.get('unreviewed')} unreviewed")
    return "; ".join(parts)
