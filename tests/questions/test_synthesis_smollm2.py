"""Question synthesis with the real local SmolLM2 server on a few smoke chunks: every chunk tried is
accounted for (a question kept, a failure by reason, a filter's removal, or not needed), and the kept
questions are supported by their chunks and load as an ordinary question file."""

from __future__ import annotations

import pytest

from rag.config import load_config
from rag.data import load_dataset
from rag.data.questions.filters import FILTERS, answer_supported
from rag.data.questions.llm import ANSWERED_WITHOUT_TEXT, NOT_ANSWERED, ROUND_TRIP_FAILED
from rag.data.questions.parse import PARSE_FAILURES

from .conftest import REPO, SMOKE_CONFIG

pytestmark = pytest.mark.slow


def test_smollm2_writes_questions_that_are_parsed_filtered_and_accounted_for(tmp_path):
    from rag.runner.questions import make_questions

    config = load_config(SMOKE_CONFIG, [f"cache_dir={tmp_path}", "generation.generator={type: local, n_threads: 2}"])
    result = make_questions(config, n=2, generator="llm", seed=0, progress=False)
    made = result.provenance
    assert made["model"] == "smollm2-135m-instruct" and made["max_tokens"] == 64
    assert set(made["failures"]) <= set(PARSE_FAILURES) | {"request:timeout", "request:server_error",
                                                            ANSWERED_WITHOUT_TEXT, NOT_ANSWERED, ROUND_TRIP_FAILED}
    removed = sum(row["removed"] for row in made["filters"])
    assert made["candidates"] == sum(made["failures"].values()) + made["filters"][0]["in"] + made["not_needed"]
    assert made["filters"][0]["in"] == removed + made["written"] and [r["filter"] for r in made["filters"]] == [f for f, _ in FILTERS]
    # measured: 2 of the first 8 chunks (seed 0) kept without flash attention, 1 with it (the model's
    # numerics change with the attention kernel); the budget is 4 chunks per question asked
    assert 1 <= made["written"] <= 2 and made["candidates"] <= 8 and (made["written"] == 2 or made["candidates"] == 8)
    dataset = load_dataset({"format": "jsonl", "corpus": str(REPO / "data/smoke/corpus.jsonl"), "questions": str(result.path)})
    url = {document.doc_id: document.url for document in dataset.documents}
    for question in result.questions:
        chunk_id = question.metadata["chunk_id"]
        assert answer_supported(question.answers[0], result.chunk_text[chunk_id])
        assert question.gold_urls == [[url[chunk_id.rsplit("#", 1)[0]]]]
    assert len(dataset.question_sets["llm"]) == made["written"]
