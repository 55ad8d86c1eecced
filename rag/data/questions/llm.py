"""LLM question synthesis: answer first, examples from the user's own corpus, and a round trip.

Three published ideas, all with the configured chat generator and never with a compared retriever:

* **Answer first** (Lewis et al. 2019; Alberti et al. 2019, "Synthetic QA Corpora Generation with
  Roundtrip Consistency"): the model first copies a short answer from the chunk, then writes the
  question that answer answers (reply ``Answer: ... / Question: ...``), so the question is built
  around a span of the text rather than the answer fitted to a question.
* **Examples from the user's corpus** (the few-shot of InPars / Promptagator, drawn from the target
  corpus): the worked turns of the prompt are template questions (:mod:`rag.data.questions.templates`)
  made from other chunks of the same corpus, with the sentence they were made from; the two generic
  examples of :data:`FEW_SHOT` stand in only when the corpus gives fewer than two.
* **Round trip with the generator itself** (Alberti et al. 2019): every parsed question is asked
  back twice, with its chunk (:data:`ANSWER_SYSTEM`) and without any text (:data:`CLOSED_BOOK_SYSTEM`).
  It is kept only when the reply with the chunk matches its answer and the reply without it does
  not (:func:`matches`): answerable from the text, and not from the model's memory or the question
  alone. Candidates that a per-candidate filter removes anyway are not asked back. Removals count as
  ``round_trip:not_answered_from_text`` and
  ``round_trip:answered_without_text`` (``round_trip:request_failed`` when an answer request fails).

A reply matches an answer when its SQuAD-normalized token F1 with it is at least
:data:`MATCH_F1`, or the answer's normalized form occurs in it (``match`` of
:func:`evaluation.answers.answer_scores`).

Every request goes through the project's one chat engine (:class:`rag.generation.llm.ChatGenerator`:
preflight, concurrency, retries, the on-disk generation cache, the redactor) with this module's
prompts (:class:`SynthesisPrompts`). A request that fails after its retries counts as
``request:<error_kind>``; a reply that cannot be read counts by its :mod:`rag.data.questions.parse`
reason; nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evaluation.answers import answer_scores
from rag.data.questions.filters import Candidate, rejection
from rag.data.questions.parse import ParseFailure, parse_reply
from rag.generation.base import GenerationRequest, GenerationResult, Generator
from rag.generation.config import LLMGeneratorConfig, LocalGeneratorConfig
from rag.generation.prompt import Prompt
from rag.io_utils import sha256_text
from rag.types import Chunk

QUESTION_MAX_TOKENS = 64  # a short answer and a question; a longer reply is cut (and fails a filter)
MATCH_F1 = 0.5
SYSTEM_PROMPT = ("First copy a short answer (a few words) from the text. Then write one question that this "
                 "answer answers and that makes sense without the text.")
ANSWER_SYSTEM = "Answer the question with a few words copied from the text."
CLOSED_BOOK_SYSTEM = "Answer the question with a few words."
FEW_SHOT = (
    ("The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the company "
     "of Gustave Eiffel and completed in 1889.",
     "Gustave Eiffel", "Whose company designed the Eiffel Tower?"),
    ("Photosynthesis is the process by which plants use light energy to turn carbon dioxide and water "
     "into sugars.",
     "sugars", "What do plants turn carbon dioxide and water into?"),
)
USER_TEMPLATE = "Text: {text}"
N_EXAMPLES = 2
NOT_ANSWERED = "round_trip:not_answered_from_text"
ANSWERED_WITHOUT_TEXT = "round_trip:answered_without_text"
ROUND_TRIP_FAILED = "round_trip:request_failed"


@dataclass(frozen=True)
class Example:
    """A worked turn of the prompt: a text, the answer copied from it, and the question."""

    text: str
    answer: str
    question: str


def _reply(example: Example) -> str:
    return f"Answer: {example.answer}\nQuestion: {example.question}"


def question_messages(chunk_text: str, examples: Sequence[Example] = ()) -> list[dict[str, str]]:
    """The chat messages that ask for an answer and then a question about ``chunk_text``, with
    ``examples`` (default :data:`FEW_SHOT`) as earlier turns."""
    shots = list(examples) if len(examples) >= N_EXAMPLES else [Example(*shot) for shot in FEW_SHOT]
    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    for example in shots:
        messages += [{"role": "user", "content": USER_TEMPLATE.format(text=example.text)},
                     {"role": "assistant", "content": _reply(example)}]
    return messages + [{"role": "user", "content": USER_TEMPLATE.format(text=chunk_text.strip())}]


def answer_messages(question: str, chunk_text: str | None) -> list[dict[str, str]]:
    """The round trip's messages: ``question`` with ``chunk_text``, or alone (None)."""
    if chunk_text is None:
        return [{"role": "system", "content": CLOSED_BOOK_SYSTEM}, {"role": "user", "content": f"Question: {question}"}]
    return [{"role": "system", "content": ANSWER_SYSTEM},
            {"role": "user", "content": f"Text: {chunk_text.strip()}\nQuestion: {question}"}]


def prompt_hash() -> str:
    """SHA-256 of the prompts with placeholders in place of the chunk, the examples and the question."""
    example = Example("{example text}", "{example answer}", "{example question}")
    return sha256_text(json.dumps([question_messages("{text}", [example] * N_EXAMPLES),
                                   answer_messages("{question}", "{text}"), answer_messages("{question}", None)],
                                  ensure_ascii=False, sort_keys=True))


class SynthesisPrompts:
    """A :class:`rag.generation.prompt.PromptBuilder` stand-in: a request without a question asks for
    a question about its one context; one with a question asks it back, with its context or closed-book."""

    def __init__(self, examples: Sequence[Example] = ()):
        self.examples = list(examples)

    def build(self, request: GenerationRequest) -> Prompt:
        if not request.question:
            messages = question_messages(request.contexts[0], self.examples)
        else:
            messages = answer_messages(request.question, None if request.closed_book else request.contexts[0])
        return Prompt(messages=messages, chunks_used=len(request.contexts), chunks_truncated=False, context_tokens=0)


def synthesis_config(configured: object) -> LLMGeneratorConfig:
    """The generator that writes questions: the run's LLM generator when it has one, else the local
    SmolLM2; ``max_tokens`` is :data:`QUESTION_MAX_TOKENS`."""
    base = configured if isinstance(configured, LLMGeneratorConfig) else LocalGeneratorConfig()
    return base.model_copy(update={"max_tokens": QUESTION_MAX_TOKENS})


def matches(reply: str | None, answer: str) -> bool:
    """Whether ``reply`` gives ``answer`` (see the module docstring)."""
    if not reply or not reply.strip():
        return False
    scores = answer_scores(reply, answer)
    return scores["f1"] >= MATCH_F1 or scores["match"] == 1.0


def _round_trip(generator: Generator, made: list[Candidate | str]) -> list[Candidate | str]:
    """``made`` with every candidate that fails the round trip replaced by its reason; a candidate a
    per-candidate filter removes anyway (:func:`rag.data.questions.filters.rejection`) is not asked
    back, and is left to the filters to count."""
    asked = [(i, c) for i, c in enumerate(made) if isinstance(c, Candidate) and rejection(c) is None]
    requests = [GenerationRequest(key=f"{c.chunk_id}/with-text", question=c.question, contexts=[c.chunk_text])
                for _, c in asked]
    requests += [GenerationRequest(key=f"{c.chunk_id}/without-text", question=c.question, contexts=[], closed_book=True)
                 for _, c in asked]
    results = generator.generate(requests)
    with_text, without_text = results[:len(asked)], results[len(asked):]
    kept = list(made)
    for (index, candidate), informed, closed in zip(asked, with_text, without_text):
        if informed.failed or closed.failed:
            kept[index] = ROUND_TRIP_FAILED
        elif not matches(informed.answer, candidate.answer):
            kept[index] = NOT_ANSWERED
        elif matches(closed.answer, candidate.answer):
            kept[index] = ANSWERED_WITHOUT_TEXT
    return kept


def llm_candidates(
    generator: Generator, chunks: Sequence[Chunk], on_result: Callable[[GenerationResult], None] | None = None,
    gold_names: Callable[[Chunk], frozenset[str]] = lambda chunk: frozenset(),
) -> list[Candidate | str]:
    """One candidate per chunk that passed the round trip, or the reason none was made
    (``request:<kind>``, a parse failure's reason, or a ``round_trip:`` reason)."""
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
                              {"reply_shape": parsed.shape, **({"section": section} if section else {})},
                              gold_names=gold_names(chunk)))
    return _round_trip(generator, made)
