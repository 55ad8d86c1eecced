"""The generation stage: which questions get answers, the requests, and collecting the results.

LLM answers can be limited to a seeded sample of ``questions_per_set`` questions per question set.
The sample is drawn once per set (``random.Random(f"{seed}:{set}")`` over the sorted question ids),
so every method answers the same questions and paired tests stay paired.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from rag.progress import progress

from rag.generation.base import GenerationRequest, GenerationResult, Generator
from rag.types import Question


def answer_sample(questions: Sequence[Question], n: int | None, seed: int, question_set: str) -> set[str]:
    """Ids of the questions that get generated answers (all when ``n`` is None or >= the set size)."""
    qids = sorted(q.qid for q in questions)
    if n is None or n >= len(qids):
        return set(qids)
    return set(random.Random(f"{seed}:{question_set}").sample(qids, n))


def request_key(method: str, question_set: str, qid: str) -> str:
    return f"{method}/{question_set}/{qid}"


def generate_answers(
    generator: Generator, requests: Sequence[GenerationRequest], show_progress: bool = True
) -> dict[str, GenerationResult]:
    """Run every request through the generator (which caches and never raises per request), with a
    progress bar that counts failures as they happen."""
    bar = progress(total=len(requests), desc="generate", unit="answer", enabled=show_progress)
    failures = 0

    def on_result(result: GenerationResult) -> None:
        nonlocal failures
        failures += result.failed
        bar.update(1)
        if failures:
            bar.set_postfix(failed=failures)

    try:
        results = generator.generate(list(requests), on_result=on_result)
    finally:
        bar.close()
    return {result.key: result for result in results}

