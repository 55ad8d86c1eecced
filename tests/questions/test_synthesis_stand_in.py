"""LLM synthesis against the stand-in OpenAI-compatible server: every way a reply or a request can go
wrong is counted by its reason, the good replies become questions whose gold is the chunk's document."""

from __future__ import annotations

import json

import pytest

from rag.config import load_config
from rag.data import load_dataset
from rag.runner.questions import make_questions
from rag.testing import StandInServer, StandInSettings

from .conftest import write_config


def _reply(text: str, hidden: str = "") -> str:
    """The stand-in's scripted-reply marker (a JSON string); the characters of ``hidden`` are
    \\u-escaped so that those words of the reply do not occur in the chunk that carries the marker."""
    literal = json.dumps(text)
    escaped = "".join("\\u%04x" % ord(c) for c in hidden)
    return "[[reply:" + (literal.replace(hidden, escaped) if hidden else literal) + "]]"


DOCUMENTS = [
    ("designer", "The Brooklyn Bridge was designed by John Roebling. "
               + _reply("Question: Who designed the Brooklyn Bridge?\nAnswer: John Roebling")),
    ("opening", "The bridge opened to traffic in 1883 after fourteen years of work. "
                + _reply('Sure: {"question": "When did the bridge open to traffic?", "answer": "1883"}')),
    ("refusal", "Some text about cables. " + _reply("I'm sorry, I cannot help with that request.")),
    ("no-answer", "Some text about towers. " + _reply("Question: How tall are the towers?")),
    ("prose", "Some text about granite. " + _reply("Granite is a common rock.")),
    ("unsupported", "Some text about paint. " + _reply("Question: Who painted the bridge?\nAnswer: Pablo Picasso", hidden="Pablo Picasso")),
    ("duplicate", "Roebling designed the Brooklyn Bridge. "
                  + _reply("Question: Who designed Brooklyn Bridge?\nAnswer: Roebling")),
    ("memory", "The server replies: stand-in answer. "
               + _reply("Question: What does the fault-injection server reply?\nAnswer: stand-in answer")),
    ("empty", "Some text about wind. [[faults:empty_content]]"),
    ("server", "Some text about rivers. [[faults:error_500]]"),
    ("client", "Some text about boats. [[faults:bad_request_400]]"),
    ("broken", "Some text about steel. [[faults:malformed_json]]"),
]


@pytest.fixture
def stand_in():
    with StandInServer(StandInSettings(retry_after="0")) as server:
        yield server


def test_failures_are_counted_by_reason_and_good_replies_become_questions(tmp_path, stand_in):
    generator = {"type": "openai", "base_url": stand_in.base_url, "model": "stand-in", "max_retries": 0,
                 "api_key_env": "NO_SUCH_KEY_VARIABLE"}
    config = load_config(write_config(tmp_path, DOCUMENTS, generator))
    result = make_questions(config, n=10, generator="llm", seed=1, progress=False)
    made = result.provenance
    # a question request per chunk, then each question that passes the per-candidate filters asked
    # back twice (designer, opening, duplicate, memory): with its chunk and without any text
    assert made["candidates"] == len(DOCUMENTS) and stand_in.stats.completions_requests == len(DOCUMENTS) + 2 * 4
    assert made["failures"] == {
        "no_answer": 1, "no_question": 1, "refusal": 1, "request:client_error": 1,
        "request:empty_response": 1, "request:malformed_response": 1, "request:server_error": 1,
        "round_trip:answered_without_text": 1,  # the stand-in's closed-book reply is "stand-in answer <hash>"
    }
    removed = {row["filter"]: row["removed"] for row in made["filters"]}
    assert removed["answer_unsupported"] == 1 and removed["near_duplicate"] == 1
    assert made["written"] == 2 and made["model"] == "stand-in" and len(made["prompt_sha256"]) == 64
    by_text = {q.text: q for q in result.questions}
    opening = by_text["When did the bridge open to traffic?"]
    assert opening.answers == ["1883"] and opening.gold_urls == [["docs/opening.md"]]
    assert opening.metadata["chunk_id"] == "opening#0" and opening.metadata["reply_shape"] == "json"
    designed = next(q for q in result.questions if q is not opening)  # of two near-duplicates, the first in chunk order
    assert (designed.text, designed.answers, designed.gold_urls) in [
        ("Who designed the Brooklyn Bridge?", ["John Roebling"], [["docs/designer.md"]]),
        ("Who designed Brooklyn Bridge?", ["Roebling"], [["docs/duplicate.md"]])]
    assert designed.metadata["lexical_overlap"] == 1.0  # designed, brooklyn, bridge all in the chunk

    # the file is an ordinary question file of the corpus, with its provenance beside it
    dataset = load_dataset({"format": "jsonl", "corpus": str(tmp_path / "corpus.jsonl"), "questions": str(result.path)})
    assert [q.text for q in dataset.question_sets["llm"]] == [q.text for q in result.questions]
    assert dataset.question_provenance["llm"]["written"] == 2

    # the same inputs read the cached file: no request is sent again
    requests = stand_in.stats.completions_requests
    again = make_questions(config, n=10, generator="llm", seed=1, progress=False)
    assert again.cached and again.path == result.path and stand_in.stats.completions_requests == requests
