"""HyDE and multi-query against the stand-in OpenAI-compatible server (deterministic replies, injected
faults) and the real MiniLM model: the HyDE query vector is the mean computed here with the model
itself, multi-query's fused list is ranx's RRF over the same lists, a failure stops with one line naming the method."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from ranx import Run, fuse

from rag.errors import BenchError
from rag.generation import OpenAIGeneratorConfig, build_generator
from rag.retrievers.query_transforms.config import HYDE_PROMPT
from rag.retrievers import IndexStorage, build_retriever
from rag.services import StageServices
from rag.retrievers.dense import DenseParams, DenseRetriever
from rag.testing import StandInServer, StandInSettings

TEXTS = {
    "paris": "Paris is the capital and largest city of France.",
    "tokyo": "Tokyo is the capital of Japan and its most populous city.",
    "cats": "Cats are small domesticated carnivorous mammals kept as pets.",
    "python": "Python is a high-level general-purpose programming language.",
    "volcano": "A volcano is a rupture in the crust where lava and ash escape.",
    "lyon": "Lyon is a French city known for its cuisine and silk.",
    "kyoto": "Kyoto was the imperial capital of Japan for more than a thousand years.",
}
FAST = {"model": "stand-in", "concurrency": 2, "timeout_s": 2.0, "max_retries": 1,
        "backoff": {"initial_s": 0.01, "max_s": 0.02}}


@pytest.fixture(scope="module")
def stand_in():
    with StandInServer(StandInSettings()) as server:
        yield server


def services(server, tmp_path, **overrides) -> StageServices:
    config = OpenAIGeneratorConfig(**{**FAST, "base_url": server.base_url, "api_key_env": "RAG_TEST_NO_SUCH_VAR",
                                      **overrides})
    return StageServices(generator_factory=build_generator, default_generator=config, cache_dir=tmp_path)


def reply(text: str) -> str:
    """The stand-in's scripted-reply marker (its reply is ``text``)."""
    return f"[[reply:{json.dumps(text)}]]"


def stand_in_answer(user_message: str) -> str:
    return "stand-in answer " + hashlib.sha256(user_message.encode()).hexdigest()[:16]


def bm25(make_chunks, tmp_path, query: dict, name="mq"):
    retriever = build_retriever(name, "bm25", {"query": query})
    retriever.index(make_chunks(TEXTS), IndexStorage.under(tmp_path, name))
    return retriever


def ranx_rrf(lists) -> dict[str, float]:
    """ranx's RRF (k = 60) of the lists in their order (scores that fall with the rank, so ranx's ranks
    are ours whatever its tie rule: RRF reads ranks only)."""
    runs = [Run({"q": {c: float(len(r.chunk_ids) - rank) for rank, c in enumerate(r.chunk_ids)}}, name=f"r{i}")
            for i, r in enumerate(lists)]
    return fuse(runs, method="rrf", params={"k": 60}).to_dict()["q"]


def test_multi_query_fuses_the_question_and_its_paraphrases_as_ranx_rrf(stand_in, make_chunks, tmp_path):
    question = "capital city Japan " + reply("1. Which city is Japan's capital?\n2) imperial capital Kyoto\n\n"
                                             "- imperial capital Kyoto\n* French city cuisine\nextra line")
    retriever = bm25(make_chunks, tmp_path, {"type": "multi_query", "n": 3})
    retriever.use(services(stand_in, tmp_path))
    [ranking] = retriever.search([question], k=7)
    paraphrases = ["Which city is Japan's capital?", "imperial capital Kyoto", "French city cuisine"]  # parsed by hand
    lists = retriever.search_plain([question, *paraphrases], 7)
    expected = ranx_rrf(lists)
    assert set(ranking.chunk_ids) <= set(expected) and len(ranking.chunk_ids) == min(7, len(expected))
    assert ranking.scores == pytest.approx([expected[c] for c in ranking.chunk_ids], rel=1e-6)
    assert all(expected[c] <= min(ranking.scores) + 1e-9 for c in set(expected) - set(ranking.chunk_ids))
    assert ranking.scores == sorted(ranking.scores, reverse=True)
    assert "lyon" in ranking.chunk_ids  # only a paraphrase finds it
    system, user = "", retriever.params.query.prompt().format(question=question)
    assert (ranking.llm_calls, ranking.llm_tokens) == (1, len(system.split()) + len(user.split()) + 4)  # stand-in usage
    assert retriever.params.llm_calls_per_query() == 1


def test_paraphrases_are_the_replys_lines_without_markers_repeats_or_the_question():
    from rag.retrievers.query_transforms.multi_query import paraphrases

    text = " 1. What is RM3?\n\n2) what is rm3?\n- How does RM3 expand a query \n* What is BM25?\n•  extra\nfifth"
    assert paraphrases(text, "How does RM3 expand a query", 3) == ["What is RM3?", "What is BM25?", "extra"]
    assert paraphrases("", "q", 3) == []


# issue 44: a reply with no usable line gave the plain retriever's list under the method's name
@pytest.mark.parametrize("text", ["1.\n2.\n-", "1. capital of Japan\n2. Capital of JAPAN?\n-  capital  of japan ."])
def test_a_reply_without_a_usable_line_fails_that_questions_stage(stand_in, make_chunks, tmp_path, text):
    question = "capital of Japan"
    retriever = bm25(make_chunks, tmp_path, {"type": "multi_query", "user_prompt": reply(text) + " {question}"},
                     name="mq_empty")
    retriever.use(services(stand_in, tmp_path))
    [ranking] = retriever.search([question], k=7)
    assert ranking.chunk_ids == [] and ranking.failed.startswith("multi_query: the reply holds no usable line")
    assert ranking.llm_calls == 1


def test_a_failed_generation_stops_the_search_naming_the_method(stand_in, make_chunks, tmp_path):
    question = "capital of Japan [[faults:error_500]]"
    retriever = bm25(make_chunks, tmp_path, {"type": "multi_query"}, name="mq_fail")
    retriever.use(services(stand_in, tmp_path, max_retries=0))
    with pytest.raises(BenchError, match=r"retriever 'mq_fail': 1 of 1 multi_query generations failed for good"):
        retriever.search([question], k=7)


def test_generations_are_cached_under_the_stage_directory(stand_in, make_chunks, tmp_path):
    question = "capital of France " + reply("French capital\nlargest city of France")
    first = bm25(make_chunks, tmp_path, {"type": "multi_query"}, name="mq_cache")
    first.use(services(stand_in, tmp_path))
    expected = first.search([question], 5)
    assert (tmp_path / "stages" / "mq_cache" / "generations.jsonl").is_file()
    sent = stand_in.stats.completions_requests
    again = bm25(make_chunks, tmp_path, {"type": "multi_query"}, name="mq_cache")
    again.use(services(stand_in, tmp_path))
    assert again.search([question], 5) == expected
    assert stand_in.stats.completions_requests == sent  # answered from the stage cache


def test_an_llm_transform_without_services_says_what_is_missing(make_chunks, tmp_path):
    retriever = bm25(make_chunks, tmp_path, {"type": "multi_query"})
    with pytest.raises(BenchError, match="needs the run's services"):
        retriever.search(["capital"], 3)


@pytest.mark.slow  # loads the real embedding model
@pytest.mark.parametrize("n", [1, 2])
def test_hyde_query_vector_is_the_mean_of_the_question_and_passages(stand_in, minilm, make_chunks, tmp_path, n):
    questions = ["Which city is the capital of Japan?", "Where does lava come from?"]
    retriever = DenseRetriever("hyde", DenseParams(search="exact", query={"type": "hyde", "n": n}), encoder=minilm)
    retriever.index(make_chunks(TEXTS), IndexStorage.under(tmp_path, "hyde"))
    retriever.use(services(stand_in, tmp_path))
    rankings = retriever.search(questions, k=7)
    ids = list(TEXTS)
    documents = minilm.encode(list(TEXTS.values()), convert_to_numpy=True)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    for question, ranking in zip(questions, rankings):
        passage = stand_in_answer(HYDE_PROMPT.format(question=question))  # every pass sends the same prompt
        texts = [question] + [passage] * n
        vectors = minilm.encode(texts, convert_to_numpy=True).astype(np.float64)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        mean = vectors.mean(axis=0)
        cosine = documents.astype(np.float64) @ (mean / np.linalg.norm(mean))
        order = sorted(range(len(ids)), key=lambda i: -cosine[i])
        assert ranking.chunk_ids == [ids[i] for i in order]
        assert ranking.scores == pytest.approx([cosine[i] for i in order], abs=1e-5)
        assert ranking.llm_calls == n
    assert retriever.params.llm_calls_per_query() == n


@pytest.mark.slow  # loads the real embedding model
def test_hyde_with_a_failed_generation_stops_naming_the_method(stand_in, minilm, make_chunks, tmp_path):
    question = "capital of Japan [[faults:error_500]]"
    retriever = DenseRetriever("hyde", DenseParams(search="exact", query={"type": "hyde"}), encoder=minilm)
    retriever.index(make_chunks(TEXTS), IndexStorage.under(tmp_path, "hyde"))
    retriever.use(services(stand_in, tmp_path, max_retries=0))
    with pytest.raises(BenchError, match=r"retriever 'hyde': 1 of 1 hyde generations failed for good"):
        retriever.search([question], 7)


@pytest.mark.slow  # loads the real embedding model
def test_hyde_whose_every_reply_echoes_the_question_fails_that_questions_stage(stand_in, minilm, make_chunks, tmp_path):
    """issue 44: a reply that only echoes the question made plain dense retrieval under hyde's name."""
    prompt = reply("Capital of JAPAN?") + " {question}"
    retriever = DenseRetriever("hyde_echo", DenseParams(search="exact", query={"type": "hyde", "user_prompt": prompt}),
                               encoder=minilm)
    retriever.index(make_chunks(TEXTS), IndexStorage.under(tmp_path, "hyde_echo"))
    retriever.use(services(stand_in, tmp_path))
    [ranking] = retriever.search(["capital of Japan"], 7)
    assert ranking.chunk_ids == [] and ranking.failed.startswith("hyde: no reply is a passage") and ranking.llm_calls == 1
