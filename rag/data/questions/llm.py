"""LLM question synthesis: the configured chat generator writes a question its chunk answers and a
short answer.

The request goes through the project's one chat engine (:class:`rag.generation.llm.ChatGenerator`:
preflight, concurrency, retries with backoff, the on-disk generation cache, the redactor), with this
module's prompt in place of the answer prompt. The prompt is a system instruction and two worked
examples given as earlier chat turns, then the chunk (:data:`FEW_SHOT`); measured on SmolLM2-135M,
the worked turns are what makes a 135M model keep the ``Question: ... / Answer: ...`` shape, where
an instruction alone, or a request for JSON, mostly did not (docs/data.md has the numbers).

A request that fails after its retries counts as ``request:<error_kind>``; a reply that cannot be
read counts by its :mod:`rag.data.questions.parse` reason; neither is ever dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from rag.data.questions.filters import Candidate
from rag.data.questions.parse import ParseFailure, parse_reply
from rag.generation.base import GenerationRequest, GenerationResult, Generator
from rag.generation.config import LLMGeneratorConfig, LocalGeneratorConfig
from rag.generation.prompt import Prompt
from rag.io_utils import sha256_text
from rag.types import Chunk

QUESTION_MAX_TOKENS = 64  # a question and a short answer; a longer reply is cut (and fails answer_length)
SYSTEM_PROMPT = ("You write one quiz question that the text answers, and the answer: "
                 "a few words copied from the text.")
FEW_SHOT = (
    ("The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the company "
     "of Gustave Eiffel and completed in 1889.",
     "Question: Whose company designed the Eiffel Tower?\nAnswer: Gustave Eiffel"),
    ("Photosynthesis is the process by which plants use light energy to turn carbon dioxide and water "
     "into sugars.",
     "Question: What do plants turn carbon dioxide and water into?\nAnswer: sugars"),
)
USER_TEMPLATE = "Text: {text}"


def question_messages(chunk_text: str) -> list[dict[str, str]]:
    """The chat messages that ask for a question about ``chunk_text``."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    for text, reply in FEW_SHOT:
        messages += [{"role": "user", "content": USER_TEMPLATE.format(text=text)},
                     {"role": "assistant", "content": reply}]
    return messages + [{"role": "user", "content": USER_TEMPLATE.format(text=chunk_text.strip())}]


def prompt_hash() -> str:
    """SHA-256 of the prompt's messages with ``{text}`` in place of the chunk."""
    return sha256_text(json.dumps(question_messages("{text}"), ensure_ascii=False, sort_keys=True))


class QuestionPromptBuilder:
    """A :class:`rag.generation.prompt.PromptBuilder` stand-in: the request's one context is the chunk."""

    def build(self, request: GenerationRequest) -> Prompt:
        return Prompt(messages=question_messages(request.contexts[0]), chunks_used=1, chunks_truncated=False,
                      context_tokens=0)


def synthesis_config(configured: object) -> LLMGeneratorConfig:
    """The generator that writes questions: the run's LLM generator when it has one, else the local
    SmolLM2; ``max_tokens`` is :data:`QUESTION_MAX_TOKENS`."""
    base = configured if isinstance(configured, LLMGeneratorConfig) else LocalGeneratorConfig()
    return base.model_copy(update={"max_tokens": QUESTION_MAX_TOKENS})


def llm_candidates(
    generator: Generator, chunks: Sequence[Chunk], on_result: Callable[[GenerationResult], None] | None = None,
) -> list[Candidate | str]:
    """One candidate per chunk, or the reason none could be made (``request:<kind>``, or a parse
    failure's reason)."""
    requests = [GenerationRequest(key=chunk.chunk_id, question="", contexts=[chunk.text]) for chunk in chunks]
    results = generator.generate(requests, on_result=on_result)
    made: list[Candidate | str] = []
    for chunk, result in zip(chunks, results):
        if result.failed:
            made.append(f"request:{result.error_kind}")
            continue
        parsed = parse_reply(result.answer)
        if isinstance(parsed, ParseFailure):
            made.append(parsed.reason)
            continue
        section = str(getattr(chunk, "section", None) or "")
        made.append(Candidate(parsed.question, parsed.answer, chunk.chunk_id, chunk.url, chunk.text, "llm",
                              {"reply_shape": parsed.shape, **({"section": section} if section else {})}))
    return made
