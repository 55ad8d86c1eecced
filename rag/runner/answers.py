"""The generation stage: which questions get answers, the requests, and collecting the results.

LLM answers can be limited to a seeded sample of ``questions_per_set`` questions per question set.
The sample is drawn once per set (``random.Random(f"{seed}:{set}")`` over the sorted question ids),
so every method answers the same questions and paired tests stay paired.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from evaluation.stats import pairs_needed, smallest_adjusted_p

from rag.progress import progress

from rag.config import RunConfig
from rag.generation.base import GenerationRequest, GenerationResult, Generator
from rag.types import Question


def answer_sample(questions: Sequence[Question], n: int | None, seed: int, question_set: str) -> set[str]:
    """Ids of the questions that get generated answers (all when ``n`` is None or >= the set size)."""
    qids = sorted(q.qid for q in questions)
    if n is None or n >= len(qids):
        return set(qids)
    return set(random.Random(f"{seed}:{question_set}").sample(qids, n))


def answered_questions(config: RunConfig, question_sets: Mapping[str, Sequence[Question]]) -> dict[str, set[str]]:
    """The ids of the questions that get generated answers, per set: a seeded sample of
    ``generation.questions_per_set`` in the sets of ``generation.question_sets`` (default every set)."""
    assert config.generation is not None
    chosen = config.generation.question_sets
    return {name: answer_sample(qs, config.generation.questions_per_set, config.seed, name)
            if chosen is None or name in chosen else set() for name, qs in question_sets.items()}


def answer_power_warning(answered: Mapping[str, int], answering_methods: int, has_control: bool, alpha: float,
                         n_resamples: int, correction: str | None) -> str | None:
    """One line when no answer verdict of the run can be significant, whatever the answers: every
    answer test's smallest attainable p after the correction is >= alpha. ``answered``: answered
    questions per set. With a no-context control the most powerful answer test is the lift over it
    pooled over the sets (``answering_methods - 1`` tests); without one, a set's all-pairs test.
    None when some verdict can be significant."""
    sets = {name: n for name, n in answered.items() if n > 0}
    if not sets or answering_methods < 2:
        return None
    if has_control:
        tests, n, label = answering_methods - 1, sum(sets.values()), "the lift over closed_book pooled over the sets"
    else:
        tests, n, label = math.comb(answering_methods, 2), max(sets.values()), "a set's pairwise answer tests"
    smallest = smallest_adjusted_p(n, tests, n_resamples, correction)
    if smallest < alpha:
        return None
    needed = pairs_needed(tests, alpha, n_resamples, correction)
    per_set = "no sample size" if needed is None else \
        f"generation.questions_per_set >= {math.ceil(needed / (len(sets) if has_control else 1))}"
    return (f"generation.questions_per_set: {max(sets.values())} answered questions per set can never give a significant "
            f"answer verdict ({label}: {tests} tests, n = {n}, smallest possible p after the correction "
            f"{smallest:.2g} >= alpha {alpha}); {per_set} needed")


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

