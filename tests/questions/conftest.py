"""Helpers: a tiny corpus written under tmp_path and a run config that points at it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SMOKE_CONFIG = REPO / "configs" / "smoke.yaml"


def write_config(tmp_path: Path, documents: Sequence[tuple[str, str]], generator: dict[str, Any] | None = None) -> Path:
    """A corpus of ``(doc_id, text)`` documents (one dummy question) and a config with BM25 only."""
    corpus, questions = tmp_path / "corpus.jsonl", tmp_path / "seed.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "url": f"docs/{d}.md", "title": d, "text": t}) + "\n"
                              for d, t in documents))
    questions.write_text(json.dumps({"id": "q0", "question": "anything?", "gold_urls": [f"docs/{documents[0][0]}.md"]}) + "\n")
    config = {
        "name": "questions-test", "dataset": {"format": "jsonl", "corpus": str(corpus), "questions": str(questions)},
        "chunking": {"max_tokens": 128, "overlap_tokens": 16},
        "retrievers": [{"name": "bm25", "type": "bm25", "params": {}}],
        "output_dir": str(tmp_path / "runs"), "cache_dir": str(tmp_path / "cache"),
    }
    if generator is not None:
        config["generation"] = {"generator": generator}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path
