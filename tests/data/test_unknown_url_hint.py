"""A gold URL one folder level off names the nearest corpus URL and says a folder's URLs are relative to
the --docs folder (issue 44, item 10a)."""

from __future__ import annotations

import json

import pytest

from rag.data import load_dataset
from rag.data.url_hints import nearest_url
from rag.errors import DataError

PAGE = "# {title}\n\nThe {title} page explains how to {title} the sensor network in the field, step by step.\n"


@pytest.mark.parametrize("gold, nearest", [
    ("library/abc.html", "python/library/abc.html"),      # a folder level missing
    ("docs/python/library/abc.html", "python/library/abc.html"),  # one too many
    ("python/library/abd.html", "python/library/abc.html"),  # a typo: the closest by similarity
])
def test_an_unknown_gold_url_names_the_nearest_corpus_url_and_the_docs_folder(tmp_path, gold, nearest):
    for name in ("python/library/abc.html", "python/library/os.html", "python/tutorial/index.html"):
        (tmp_path / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / name).write_text(f"<html><body><h1>{name}</h1><p>{PAGE.format(title=name)}</p></body></html>")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "How?", "gold_urls": [gold]}) + "\n")
    with pytest.raises(DataError) as raised:
        load_dataset({"format": "files", "path": str(tmp_path / "docs"), "questions": str(questions)})
    message = str(raised.value)
    assert f"gold URL {gold!r} is not in the corpus" in message
    assert f"nearest corpus URL is {nearest!r}" in message and "relative to the --docs folder" in message


def test_nothing_near_names_no_url_and_a_web_url_gets_no_folder_note():
    known = {"https://x.org/wiki/Paris", "https://x.org/wiki/Rome"}
    assert nearest_url("https://x.org/wiki/Pariss", known) == "https://x.org/wiki/Paris"
    assert nearest_url("zzzzzzzzzzzzzzzzzz", known) is None
