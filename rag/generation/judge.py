"""An optional LLM judge of answers (``evaluation.judge``, off by default).

The judge sees the question, the reference answer(s) and the candidate answer, and replies yes or no:

- system: :data:`JUDGE_SYSTEM_PROMPT`;
- user: :data:`JUDGE_USER_PROMPT` with ``{question}``, ``{references}`` (joined by `` | ``) and
  ``{answer}`` filled in.

The verdict is 1.0 when the reply's first word is ``yes``, 0.0 when it is ``no`` (case and
punctuation ignored), NaN otherwise (unparseable, counted). Judge requests are closed-book requests
to a generator built from the judge's own config (any OpenAI-compatible endpoint, or the managed
local server) with the judge prompt as its closed-book template: the judge shares the generators'
client, on-disk cache (keyed by model, endpoint, messages and parameters, so a verdict is asked once),
retries and redactor (:mod:`rag.generation.llm`).

:func:`agreement` compares the verdicts with a containment metric (match or EM) on the answers where
both are defined: the share of equal 0/1 verdicts and Cohen's kappa (scikit-learn).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from rag.generation.base import GenerationRequest, Generator
from rag.results import schema
from rag.results.schema import JUDGE

JUDGE_SYSTEM_PROMPT = (
    "You grade answers to questions. A candidate answer is correct when it states what the reference "
    "answer states; wording, length and extra correct detail do not matter. Reply with one word: yes or no."
)
JUDGE_USER_PROMPT = (
    "Question: {question}\nReference answer: {references}\nCandidate answer: {answer}\n"
    "Is the candidate answer correct? Reply yes or no."
)

_FIRST_WORD = re.compile(r"[a-z]+")


def judge_generator_config(config):
    """The judge's generator config: ``config`` with the judge prompt as its closed-book template
    (the judge's reply is a word: ``max_tokens`` is capped at 8)."""
    return config.model_copy(update={"closed_book_system_prompt": JUDGE_SYSTEM_PROMPT,
                                     "closed_book_user_prompt": "{question}",
                                     "max_tokens": min(config.max_tokens, 8)})


@dataclass(frozen=True)
class JudgeItem:
    key: str
    question: str
    references: Sequence[str]
    answer: str


def parse_verdict(reply: str | None) -> float:
    """1.0 for a reply starting with "yes", 0.0 for "no", NaN otherwise."""
    word = _FIRST_WORD.search((reply or "").lower())
    return {"yes": 1.0, "no": 0.0}.get(word.group(0) if word else "", math.nan)


def judge_answers(generator: Generator, items: Sequence[JudgeItem]) -> dict[str, float]:
    """The verdict per item key (NaN for a failed request or an unparseable reply)."""
    requests = [GenerationRequest(item.key, JUDGE_USER_PROMPT.format(question=item.question,
                                                                     references=" | ".join(item.references),
                                                                     answer=item.answer), [], closed_book=True)
                for item in items]
    return {result.key: parse_verdict(result.answer) for result in generator.generate(requests)}


def judge_per_query(per_query: pd.DataFrame, references: dict[tuple[str, str], Sequence[str]],
                    generator: Generator) -> pd.DataFrame:
    """``per_query`` with a ``judge`` column: the verdict of every answered question with references
    (``references[(set, qid)]``), NaN elsewhere. Identical (question, references, answer) triples are
    one request (the generator sends each distinct prompt once)."""
    answered = per_query[per_query[schema.GENERATION_STATUS] == schema.ANSWERED]
    items = [JudgeItem(f"judge/{row[schema.QUESTION_SET]}/{row[schema.METHOD]}/{row[schema.QID]}", row[schema.QUESTION],
                       refs, row[schema.ANSWER])
             for row in answered.to_dict("records")
             if (refs := references.get((row[schema.QUESTION_SET], row[schema.QID])))]
    verdicts = judge_answers(generator, items) if items else {}
    keys = ("judge/" + per_query[schema.QUESTION_SET] + "/" + per_query[schema.METHOD] + "/" + per_query[schema.QID])
    return per_query.assign(**{JUDGE: keys.map(verdicts).astype(float)})


def agreement(per_query: pd.DataFrame, against: Sequence[str] = ("match", "em")) -> dict[str, dict[str, float | None]]:
    """Per metric in ``against``: answers where the judge and the metric are both defined (``n``), the
    share of equal verdicts (``agreement``) and Cohen's kappa (``kappa``); None where undefined (no
    answer judged by both; kappa also when both give one verdict only)."""
    from sklearn.metrics import cohen_kappa_score

    out = {}
    for metric in [m for m in against if m in per_query]:
        both = per_query[[JUDGE, metric]].dropna()
        judged, measured = both[JUDGE].astype(int), both[metric].astype(int)
        kappa = None
        if len(set(judged)) > 1 or len(set(measured)) > 1:
            kappa = float(cohen_kappa_score(judged, measured))
        out[metric] = {"n": len(both), "agreement": float((judged == measured).mean()) if len(both) else None,
                       "kappa": kappa}
    return out


def agreement_line(stats: dict[str, dict[str, float | None]]) -> str:
    """``LLM judge agreement with match 0.85 (kappa 0.62, n = 28); em ...``."""
    def show(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f}"

    parts = [f"{metric} {show(s['agreement'])} (kappa {show(s['kappa'])}, n = {s['n']})" for metric, s in stats.items()
             if s["n"]]
    return "LLM judge agreement with " + ("; ".join(parts) if parts else "match/EM: no answer judged by both")
