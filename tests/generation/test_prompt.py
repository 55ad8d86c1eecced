import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.generation import GenerationRequest
from rag.generation.prompt import HFTokenCounter, PromptBuilder
from rag.models import load_tokenizer


def builder(counter, budget, max_chunks=10, min_partial=2):
    return PromptBuilder("SYS", "Q: {question}\nC:\n{context}", budget, max_chunks, counter, min_partial)


def test_chunks_are_numbered_in_rank_order_and_fill_the_template(whitespace_counter):
    prompt = builder(whitespace_counter, 100).build(GenerationRequest("k", " Who? ", ["alpha beta", "gamma"]))
    assert prompt.messages == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "Q: Who?\nC:\n[1] alpha beta\n\n[2] gamma"},
    ]
    assert (prompt.chunks_used, prompt.chunks_truncated, prompt.context_tokens) == (2, False, 5)


def test_budget_truncates_the_boundary_chunk_and_drops_lower_ranks(whitespace_counter):
    # entries: "[1] a b c" = 4 tokens, "[2] d e f g" = 5, "[3] h" = 2; budget 7 -> 4 + first 3 of entry 2
    prompt = builder(whitespace_counter, 7).build(GenerationRequest("k", "q", ["a b c", "d e f g", "h"]))
    assert prompt.messages[1]["content"].endswith("[1] a b c\n\n[2] d e")
    assert (prompt.chunks_used, prompt.chunks_truncated, prompt.context_tokens) == (2, True, 7)


def test_a_too_small_remainder_drops_the_chunk_instead_of_keeping_a_stub(whitespace_counter):
    prompt = builder(whitespace_counter, 5, min_partial=2).build(GenerationRequest("k", "q", ["a b c", "d e f"]))
    assert prompt.messages[1]["content"].endswith("C:\n[1] a b c")
    assert (prompt.chunks_used, prompt.chunks_truncated) == (1, True)


def test_max_chunks_keeps_only_the_top_ranks(whitespace_counter):
    prompt = builder(whitespace_counter, 100, max_chunks=2).build(GenerationRequest("k", "q", ["a", "b", "c"]))
    assert "[3]" not in prompt.messages[1]["content"]
    assert (prompt.chunks_used, prompt.chunks_truncated) == (2, True)


words = st.lists(st.sampled_from(["Paris", "is", "the", "capital", "of", "France", "photosynthesis", "1889,", "Zürich"]),
                 min_size=1, max_size=40).map(" ".join)


@settings(max_examples=40, deadline=None)
@given(contexts=st.lists(words, max_size=12), budget=st.integers(1, 120))
def test_context_never_exceeds_the_budget_counted_by_the_real_tokenizer(contexts, budget):
    tokenizer = load_tokenizer()
    prompt = builder(HFTokenCounter(tokenizer), budget).build(GenerationRequest("k", "q", contexts))
    entries = prompt.messages[1]["content"].split("C:\n", 1)[1]
    entries = [e for e in entries.split("\n\n") if e]
    independent = sum(len(tokenizer.tokenize(e)) for e in entries)
    assert independent <= budget
    for rank, entry in enumerate(entries, start=1):  # a prefix of the ranking, each a prefix of its chunk
        full = f"[{rank}] {contexts[rank - 1].strip()}"
        assert full.startswith(entry)
    assert prompt.chunks_truncated == (entries != [f"[{r}] {c.strip()}" for r, c in enumerate(contexts, 1)])


def test_a_closed_book_prompt_holds_no_context(whitespace_counter):
    prompts = PromptBuilder("SYS", "Q: {question}\nC:\n{context}", 100, None, whitespace_counter,
                            closed_book_prompts=("CLOSED", "Question: {question}\nAnswer:"))
    prompt = prompts.build(GenerationRequest("k", " Who wrote Hamlet? ", [], closed_book=True))
    assert prompt.messages == [
        {"role": "system", "content": "CLOSED"},
        {"role": "user", "content": "Question: Who wrote Hamlet?\nAnswer:"},
    ]
    assert (prompt.chunks_used, prompt.chunks_truncated, prompt.context_tokens) == (0, False, 0)
    # an empty retrieval result is not closed book: the usual prompt, with an empty context
    empty = prompts.build(GenerationRequest("k", "Who wrote Hamlet?", []))
    assert empty.messages[0]["content"] == "SYS" and "C:\n" in empty.messages[1]["content"]


def test_a_closed_book_request_with_contexts_is_refused():
    with pytest.raises(ValueError, match="closed-book request carries no contexts"):
        GenerationRequest("k", "q", ["a passage"], closed_book=True)


def test_no_budget_and_no_max_chunks_keep_every_chunk(whitespace_counter):
    contexts = [f"chunk {i} " + "word " * 50 for i in range(12)]
    prompt = builder(whitespace_counter, None, max_chunks=None).build(GenerationRequest("k", "q", contexts))
    assert (prompt.chunks_used, prompt.chunks_truncated) == (12, False)
    assert prompt.context_tokens == sum(len(f"[{i}] {c}".split()) for i, c in enumerate(contexts, 1))
