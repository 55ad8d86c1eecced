"""Template questions on a small folder of prose (issue 43): six documents of the bundled Wikipedia
corpus give at least 15 questions (the rules before gave 15 on these and 10 on the other six topics;
see docs/data.md, "Questions from your corpus")."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

from rag.config import load_config
from rag.resources import builtin_config
from rag.runner.questions import make_questions

CORPUS = Path(__file__).resolve().parents[2] / "rag" / "resources" / "data" / "wiki" / "corpus.jsonl.gz"


def six_documents(folder: Path, words: int = 1250) -> Path:
    """Six Markdown documents, one per topic (the first six topics in name order), each the topic's
    longest articles joined as paragraphs until it holds ``words`` words: about 53 chunks of prose."""
    by_topic: dict[str, list[dict]] = defaultdict(list)
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            by_topic[row["topic"]].append(row)
    folder.mkdir()
    for topic in sorted(by_topic)[:6]:
        texts, total = [], 0
        for article in sorted(by_topic[topic], key=lambda row: (-len(row["text"].split()), row["doc_id"])):
            texts.append(article["text"])
            total += len(article["text"].split())
            if total > words:
                break
        (folder / f"{topic.split()[0].lower()}.md").write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    return folder


def test_six_documents_of_wikipedia_prose_give_at_least_15_template_questions(tmp_path):
    folder = six_documents(tmp_path / "six")
    config = load_config(builtin_config("documents"), [f"dataset.path={folder}", f"cache_dir={tmp_path / 'cache'}"])
    result = make_questions(config, n=40, generator="template", progress=False)
    assert len(result.questions) >= 15
