"""The run_file method (issue 51): a TREC run file read, checked line by line and served by question
text, at chunk and at page level; every bad file is one DataError naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation import ranked_ids
from rag.errors import ConfigError, DataError
from rag.retrievers import build_retriever
from rag.retrievers.run_file import first_passages, read_run_file, run_file_entries
from rag.services import StageServices
from rag.types import Chunk

CHUNKS = [Chunk(f"{page}#{i}", page, f"pages/{page}.md", f"text {page} {i}", i, 3)
          for page in ("a", "b", "c") for i in (1, 0)]
QUESTIONS = {"s/q1": "first question", "s/q2": "second question", "t/q1": "first question"}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prod.trec"
    path.write_text(text, encoding="utf-8")
    return path


def retriever(path: Path, questions=QUESTIONS):
    found = build_retriever("prod", "run_file", {"path": path})
    found.use(StageServices(lambda *a: None, None, path.parent, questions))
    found.index(CHUNKS, None)
    return found


def test_chunk_level_follows_the_scores_then_chunk_id_descending(tmp_path: Path) -> None:
    path = write(tmp_path, "s/q1 Q0 a#0 1 1.0 x\ns/q1 Q0 b#1 2 3.0 x\ns/q1 Q0 c#0 3 3.0 x\n\ns/q2 Q0 b#0 1 0.5 x\n")
    found = retriever(path)
    first, second, missing = found.search(["first question", "second question", "no such"], 10)
    assert first.chunk_ids == ["c#0", "b#1", "a#0"] and first.scores == [3.0, 3.0, 1.0]  # trec_eval's order
    assert second.chunk_ids == ["b#0"] and missing.chunk_ids == []
    assert found.search(["first question"], 2)[0].chunk_ids == ["c#0", "b#1"]
    assert found.params.measures_cost() is False
    assert found.params.source_fingerprint()["sha256"]


def test_page_level_each_page_is_its_first_passage_in_trec_evals_page_order(tmp_path: Path) -> None:
    path = write(tmp_path, "s/q1 Q0 pages/a.md 1 2.0 x\ns/q1 Q0 pages/c.md 2 2.0 x\ns/q1 Q0 pages/b.md 3 1.0 x\n")
    assert read_run_file(path, QUESTIONS, CHUNKS).level == "url"
    ranking = retriever(path).search(["first question"], 10)[0]
    pages = ranked_ids({"pages/a.md": 2.0, "pages/c.md": 2.0, "pages/b.md": 1.0})
    assert ranking.chunk_ids == [first_passages(CHUNKS)[page].chunk_id for page in pages] == ["c#0", "a#0", "b#0"]


@pytest.mark.parametrize(("text", "line", "said"), [
    ("s/q1 Q0 a#0 1 1.0\n", 1, "expected 6 fields"),
    ("s/q1 Q0 a#0 1 1.0 x\ns/q1 Q0 b#0 one 0.5 x\n", 2, "rank must be an integer, got 'one'"),
    ("s/q1 Q0 a#0 1 high x\n", 1, "score must be a number, got 'high'"),
    ("s/q1 Q0 a#0 1 nan x\n", 1, "score must be a finite number"),
    ("s/q1 Q0 a#0 1 1.0 x\ns/q1 Q0 b#0 1 0.5 x\n", 2, "rank 1 of question 's/q1' appears twice (first on line 1)"),
    ("s/q1 Q0 a#0 1 1.0 x\ns/q1 Q0 a#0 2 0.5 x\n", 2, "document 'a#0' appears twice"),
    ("s/q1 Q0 a#0 1 1.0 x\nother/7 Q0 a#0 1 1.0 x\nother/8 Q0 a#0 1 1.0 x\n", 2,
     "2 of its 3 question ids are no question of this run: 'other/7', 'other/8'"),
    ("x/1 Q0 a#0 1 1.0 x\nx/2 Q0 a#0 1 1.0 x\n", 1, "a run for another question file: none of its 2 question ids"),
    ("s/q1 Q0 a#0 1 1.0 x\ns/q1 Q0 z#9 2 0.5 x\ns/q2 Q0 y#1 1 0.5 x\n", 2,
     "2 of its 3 document ids are no chunk or page of this corpus: 'z#9', 'y#1'"),
    ("s/q1 Q0 a#0 1 1.0 x\ns/q1 Q0 pages/b.md 2 0.5 x\n", 2, "mixes chunk ids and page URLs"),
    ("\n\n", None, "holds no ranking"),
    ("s/q1 Q0 a\\q 1 1.0 x\n", 1, "is not an encoded TREC id"),
])
def test_a_bad_file_is_one_line_naming_file_and_line(tmp_path: Path, text: str, line: int | None, said: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(DataError) as caught:
        read_run_file(path, QUESTIONS, CHUNKS)
    message = str(caught.value)
    assert "\n" not in message and said in message
    assert message.startswith(f"{path}:{line}: " if line else f"{path}: ")


def test_run_option_values(tmp_path: Path) -> None:
    path = write(tmp_path, "s/q1 Q0 a#0 1 1.0 x\n")
    assert run_file_entries([f"prod={path}"]) == [{"name": "prod", "type": "run_file", "params": {"path": path}}]
    for bad, said in (("prod", "expected NAME=FILE"), ("=x", "expected NAME=FILE"), (f"p={tmp_path}/none", "file not found")):
        with pytest.raises(ConfigError, match=said):
            run_file_entries([bad])
