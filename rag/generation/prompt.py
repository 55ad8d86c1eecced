"""Building the chat prompt: system message + user template with the question and numbered chunks.

The chunks are numbered in rank order (``[1] ...``) and trimmed to a token budget: chunks are kept
whole in rank order while they fit; the first one that does not fit is truncated to the remaining
budget (dropped when fewer than ``min_partial_tokens`` would remain) and every lower-ranked chunk is
dropped. So the lowest-ranked text always goes first. A budget of None keeps every chunk (up to
``max_chunks``; None = all). A closed-book request gets the closed-book templates: the system
prompt and ``{question}`` only, no context section.

Tokens are counted with a real tokenizer injected as a :class:`TokenCounter`. The default is the
embedding model's WordPiece tokenizer (``rag.models.load_tokenizer()``): it is available offline,
fast, and — unlike a server's ``/tokenize`` endpoint, which most OpenAI-compatible servers lack —
independent of the endpoint, so the same question gets the same prompt (and the same cache key)
against every server. For English text its counts are within ~15% of BPE counts; leave that margin
between ``context_token_budget`` and the model's context window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rag.generation.base import GenerationRequest


class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that holds at most ``max_tokens`` tokens."""
        ...


class HFTokenCounter:
    """Counts with a Hugging Face *fast* tokenizer (character offsets make truncation exact)."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def _encode(self, text: str):
        return self._tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)

    def count(self, text: str) -> int:
        return len(self._encode(text)["input_ids"])

    def truncate(self, text: str, max_tokens: int) -> str:
        offsets = self._encode(text)["offset_mapping"]
        if len(offsets) <= max_tokens:
            return text
        if max_tokens <= 0:
            return ""
        return text[: offsets[max_tokens - 1][1]]


def default_token_counter() -> HFTokenCounter:
    from rag.models import load_tokenizer

    return HFTokenCounter(load_tokenizer())


@dataclass(frozen=True)
class Prompt:
    """The messages sent for one request and how the context was trimmed."""

    messages: list[dict[str, str]]
    chunks_used: int
    chunks_truncated: bool
    context_tokens: int


class PromptBuilder:
    def __init__(
        self,
        system_prompt: str,
        user_prompt: str,
        context_token_budget: int | None,
        max_chunks: int | None,
        token_counter: TokenCounter,
        min_partial_tokens: int = 16,
        closed_book_prompts: tuple[str, str] = ("", "{question}"),
    ):
        self.system_prompt = system_prompt
        self.user_prompt = user_prompt
        self.context_token_budget = context_token_budget
        self.max_chunks = max_chunks
        self.token_counter = token_counter
        self.min_partial_tokens = min_partial_tokens
        self.closed_book_system_prompt, self.closed_book_user_prompt = closed_book_prompts

    def numbered_context(self, contexts: list[str]) -> tuple[list[str], int, bool]:
        """Numbered entries ``[i] text`` within the budget, their token total, and whether any text
        was cut (a truncated chunk or dropped chunks)."""
        budget = self.context_token_budget
        remaining = budget if budget is not None else float("inf")
        entries: list[str] = []
        used = 0
        ranked = contexts[: self.max_chunks]
        for rank, text in enumerate(ranked, start=1):
            entry = f"[{rank}] {text.strip()}"
            n_tokens = self.token_counter.count(entry)
            if n_tokens <= remaining:
                entries.append(entry)
                remaining -= n_tokens
                used += n_tokens
                continue
            if remaining >= self.min_partial_tokens:
                entries.append(self.token_counter.truncate(entry, int(remaining)))
                used += int(remaining)
            return entries, used, True
        return entries, used, len(ranked) < len(contexts)

    def build(self, request: GenerationRequest) -> Prompt:
        if request.closed_book:
            user = self.closed_book_user_prompt.format(question=request.question.strip())
            messages = [{"role": "system", "content": self.closed_book_system_prompt}, {"role": "user", "content": user}]
            return Prompt(messages=messages, chunks_used=0, chunks_truncated=False, context_tokens=0)
        entries, n_tokens, cut = self.numbered_context(list(request.contexts))
        user = self.user_prompt.format(question=request.question.strip(), context="\n\n".join(entries))
        messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": user}]
        return Prompt(messages=messages, chunks_used=len(entries), chunks_truncated=cut, context_tokens=n_tokens)
