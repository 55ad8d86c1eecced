"""The ``llm`` reranker: pointwise relevance through a chat endpoint (by default the run's generator,
else the local SmolLM2 served by llama.cpp).

One request per (question, candidate): system :data:`SYSTEM_PROMPT`, user :data:`USER_PROMPT` with
``{question}`` and ``{passage}`` (the chunk text) filled in, at most :data:`MAX_ANSWER_TOKENS`
answer tokens. The score is P(yes), the relevance-as-yes-probability of pointwise LLM rerankers
(monoT5, Nogueira et al. 2020; the "yes/no" prompting of Liang et al. 2022, HELM):

- with ``logprobs: true`` (the default; OpenAI's ``logprobs``/``top_logprobs``, which llama.cpp's
  server and vLLM return): the sum of exp(log-prob) over the first answer token's
  ``top_logprobs`` alternatives that read "yes" once stripped and lower-cased ("Yes", " yes"); 0
  when "yes" is not among them;
- with ``logprobs: false``: the parsed answer, 1.0 when its first word is "yes", 0.0 for "no".

A reply without a usable score is a failed stage for its question, never a stand-in score
(docs/evaluation.md, "Failed stages"): log-probs asked for and not given, log-probs that are not
numbers in (-inf, 0] (refused as they arrive, so never cached: :func:`rag.generation.llm.valid_logprobs`),
a parsed answer that is neither yes nor no, or a reply longer than its cap (at ``max_tokens`` 3,
:func:`rag.generation.llm.reply_cap` = 1,192 characters, refused as it arrives). The
rerank then gives that question no ranking and the method's results on its set are withheld.

Requests go through the generator machinery (:mod:`rag.generation`: its client, retries, redactor and
on-disk cache, here under ``<cache_dir>/stages/<method>``), opened for each scoring call and closed
after it. A request failing for good stops the run with one line (answers already made are cached).
Cost per question: ``llm_calls`` = the candidates scored (one request each, cached or not),
``llm_tokens`` = their prompt + completion tokens.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Annotated, Literal, Union

from pydantic import Field

from rag.errors import BenchError
from rag.generation.base import GenerationRequest, GenerationResult
from rag.generation.config import LLMGeneratorConfig, LocalGeneratorConfig, OpenAIGeneratorConfig, stage_generator_config
from rag.rerankers.base import RERANKERS, Candidate, Reranker, RerankerParams, Scored

SYSTEM_PROMPT = ("You judge whether a passage is relevant to a question, that is, whether it helps to answer it. "
                 "Reply with one word: yes or no.")
USER_PROMPT = "Question: {question}\nPassage: {passage}\nIs the passage relevant to the question? Reply yes or no."
MAX_ANSWER_TOKENS = 3
TOP_LOGPROBS = 20
_FIRST_WORD = re.compile(r"[a-z]+")

ChatGeneratorConfig = Annotated[Union[OpenAIGeneratorConfig, LocalGeneratorConfig], Field(discriminator="type")]


class LLMRerankerParams(RerankerParams):
    """``generator``: the chat endpoint (``openai`` or ``local``, the generator settings of
    docs/generation.md); null: the run's generator when it is one of these, else the local SmolLM2.
    ``logprobs``: ask for log-probs and score by them (false: the parsed yes/no answer)."""

    type: Literal["llm"] = "llm"
    generator: ChatGeneratorConfig | None = None
    logprobs: bool = True

    def calls_per_query(self, depth: int) -> int:
        return depth


def yes_probability(result: GenerationResult, logprobs: bool = True) -> float | str:
    """The score of one answer (module docstring), or why it has none (a string)."""
    if logprobs:
        alternatives = result.extra.get("top_logprobs")
        if not alternatives:
            return "the reply carries no top_logprobs (set logprobs: false to score the parsed yes/no)"
        return sum(math.exp(logprob) for token, logprob in alternatives.items() if token.strip().lower() == "yes")
    word = _FIRST_WORD.search((result.answer or "").lower())
    score = {"yes": 1.0, "no": 0.0}.get(word.group(0) if word else "")
    return score if score is not None else f"the reply {result.answer[:40]!r} is neither yes nor no"


@RERANKERS.register("llm")
class LLMReranker(Reranker):
    """Scores each candidate with one chat request (module docstring)."""

    Params = LLMRerankerParams
    params: LLMRerankerParams

    def generator_config(self) -> LLMGeneratorConfig:
        """The chat generator's settings with the reranking prompt as its closed-book template."""
        base = stage_generator_config(self.params.generator,
                                      self.services.default_generator if self.services is not None else None)
        return base.model_copy(update={
            "closed_book_system_prompt": SYSTEM_PROMPT, "closed_book_user_prompt": "{question}",
            "max_tokens": MAX_ANSWER_TOKENS, "temperature": 0.0,
            "top_logprobs": TOP_LOGPROBS if self.params.logprobs else None,
        })

    def score(self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]]) -> list[Scored]:
        if self.services is None:
            raise BenchError(f"{self.key}: the llm reranker needs the run's services (Retriever.use) before it scores")
        requests = [GenerationRequest(f"{self.method}/{q}/{c}", USER_PROMPT.format(question=question, passage=found.text),
                                      [], closed_book=True)
                    for q, (question, found_list) in enumerate(zip(questions, candidates, strict=True))
                    for c, found in enumerate(found_list)]
        if not requests:
            return [Scored([]) for _ in questions]
        with self.services.generator_factory(self.generator_config(), self.services.stage_cache(self.method)) as generator:
            results = generator.generate(requests)
        failed = next((result for result in results if result.failed and result.error_kind != "malformed_response"),
                      None)
        if failed is not None:
            raise BenchError(f"{self.key}: a relevance request failed for good ({failed.error_kind}: "
                             f"{failed.error_message}); the answers made so far are cached")
        scored, start = [], 0
        for found_list in candidates:
            mine = results[start : start + len(found_list)]
            start += len(found_list)
            scores = [f"{r.error_kind}: {r.error_message}" if r.failed else yes_probability(r, self.params.logprobs)
                      for r in mine]
            reason = next((s for s in scores if isinstance(s, str)), "")
            scored.append(Scored([] if reason else scores, llm_calls=len(mine),
                                 llm_tokens=sum(r.prompt_tokens + r.completion_tokens for r in mine),
                                 failed=f"llm reranker: {reason}" if reason else ""))
        return scored
