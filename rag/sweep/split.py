"""The held-out split of a sweep: each question set is split, seeded, into ``dev`` and ``test``.

``dev`` gets round(fraction * n) questions (at least 1, at most n - 1): a sample drawn with
``random.Random(f"sweep:{seed}:{set}")`` from the sorted question ids, so the split depends only on
the seed, the set's name and its ids (not on the grid, the methods or the order of the file). The
best grid point is chosen on ``dev``; ``test`` reports it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from rag.errors import ConfigError
from rag.types import Question

DEV, TEST = "dev", "test"
DEFAULT_DEV_FRACTION = 0.3


def dev_test_split(questions: Sequence[Question], fraction: float, seed: int, question_set: str) -> dict[str, str]:
    """{question id: "dev" | "test"} for one question set."""
    if not 0 < fraction < 1:
        raise ConfigError("--dev-fraction", f"expected a number strictly between 0 and 1, got {fraction}")
    qids = sorted({q.qid for q in questions})
    if len(qids) < 2:
        raise ConfigError("--dev-fraction", f"question set {question_set!r} has {len(qids)} question(s); a dev/test "
                          "split needs at least 2")
    n_dev = min(max(round(fraction * len(qids)), 1), len(qids) - 1)
    dev = set(random.Random(f"sweep:{seed}:{question_set}").sample(qids, n_dev))
    return {qid: DEV if qid in dev else TEST for qid in qids}


def split_all(question_sets: Mapping[str, Sequence[Question]], fraction: float, seed: int) -> dict[str, dict[str, str]]:
    """:func:`dev_test_split` of every question set."""
    return {name: dev_test_split(questions, fraction, seed, name) for name, questions in question_sets.items()}
