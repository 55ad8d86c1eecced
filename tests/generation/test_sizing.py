"""The default context budget holds top_k chunks of chunking.max_tokens, counted by the real tokenizer;
the local server's n_ctx is sized to hold the prompt and the answer."""

from __future__ import annotations

import math

import pytest

from rag.chunking import ChunkingConfig, chunk_documents
from rag.errors import ConfigError
from rag.generation import ExtractiveGeneratorConfig, GenerationRequest, LocalGeneratorConfig, OpenAIGeneratorConfig
from rag.generation.prompt import HFTokenCounter, PromptBuilder
from rag.generation.sizing import NUMBERING_TOKENS, context_budget, required_n_ctx, size_generator
from rag.models import load_tokenizer
from rag.types import Document

SENTENCE = "The quick brown fox, named Zoë, jumped over 1,234 lazy dogs near the river Thames."


@pytest.fixture(scope="module")
def counter() -> HFTokenCounter:
    return HFTokenCounter(load_tokenizer())


def test_the_rank_number_costs_three_wordpiece_tokens(counter):
    for rank in range(1, 101):
        assert counter.count(f"[{rank}] {SENTENCE.strip()}") == counter.count(SENTENCE.strip()) + NUMBERING_TOKENS


def test_the_default_budget_holds_top_k_chunks_of_the_maximum_size(counter):
    """Real chunks cut to exactly max_tokens by the chunker (one sentence far longer than a chunk)."""
    chunking = ChunkingConfig(max_tokens=64, overlap_tokens=0, min_tokens=0)
    text = " ".join(["alpha beta gamma delta epsilon"] * 300)  # one token a word: pieces of exactly 64
    chunks = chunk_documents([Document("d", "u", "t", text)], chunking, progress=False)
    full = [c.text for c in chunks if c.n_tokens == chunking.max_tokens]
    assert len(full) >= 10, [c.n_tokens for c in chunks]
    budget = context_budget(10, chunking.max_tokens)
    prompt = PromptBuilder("s", "{context}\n{question}", budget, None, counter).build(GenerationRequest("k", "q", full[:10]))
    assert (prompt.chunks_used, prompt.chunks_truncated) == (10, False)
    assert prompt.context_tokens == budget  # exactly full: a budget one token smaller would cut
    tighter = PromptBuilder("s", "{context}\n{question}", budget - 1, None, counter).build(GenerationRequest("k", "q", full[:10]))
    assert tighter.chunks_truncated


def test_size_generator_fills_the_budget_and_n_ctx(counter):
    sized = size_generator(LocalGeneratorConfig(max_tokens=32), top_k=10, chunk_tokens=254, counter=counter)
    assert sized.context_token_budget == 10 * 257
    templates = counter.count(sized.system_prompt) + counter.count(sized.user_prompt.format(question="", context=""))
    expected = math.ceil((math.ceil(1.5 * (2570 + templates + 128)) + 32) / 256) * 256
    assert sized.n_ctx == expected == required_n_ctx(sized, 2570, counter)
    assert sized.n_ctx % 256 == 0 and sized.n_ctx >= 1.5 * 2570 + 32


def test_explicit_values_are_kept_and_a_too_small_n_ctx_is_an_error(counter):
    kept = size_generator(LocalGeneratorConfig(context_token_budget=600, n_ctx=2048), 10, 254, counter)
    assert (kept.context_token_budget, kept.n_ctx) == (600, 2048)
    with pytest.raises(ConfigError) as caught:
        size_generator(LocalGeneratorConfig(n_ctx=1024), 10, 254, counter)
    assert caught.value.key == "generation.generator.n_ctx" and "expected at least" in str(caught.value)
    remote = size_generator(OpenAIGeneratorConfig(model="m"), 5, 100, counter)
    assert remote.context_token_budget == 5 * 103
    assert size_generator(ExtractiveGeneratorConfig(), 10, 254, counter) == ExtractiveGeneratorConfig()
