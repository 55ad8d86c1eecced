"""The judging state of one judge on a run's pool: which chunk to grade next, and whether the
recommendation on the primary metric is decided (:mod:`evaluation.mtc`).

Each judge judges the pool on their own (their order and their "decided" read their own grades
only), so that two judges on the same pool can be compared; the verdict combines them
(:mod:`rag.judging.combine`). Within a run, the question sets are judged one after another: a set's
chunks by MTC's priority until its recommendation is decided (then, if the judge goes on, the rest
of its pool in depth order), or question by question with ``order="depth"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evaluation.agreement import weighted_kappa
from evaluation.mtc import JudgingOrder, PoolDecision
from evaluation.stats import paired_randomization_test
from rag.errors import DataError
from rag.judging.combine import judges_of, shared_grades
from rag.judging.pool import Pool, PoolQuestion, read_pool
from rag.judging.store import JUDGMENTS_FILE, Judgment, JudgmentLog, ReadJudgments, now, read_judgments

ORDERS = ("mtc", "depth")
TEST_RESAMPLES = 2000


def check_against_pool(path: Path, read: ReadJudgments, pool: Pool) -> None:
    """Every judgment names a question of the pool, with that question's text when it gives one;
    otherwise one :class:`DataError` naming the file and line."""
    for number, j in zip(read.numbers, read.judgments):
        question = pool.questions.get((j.question_set, j.question_id))
        if question is None:
            raise DataError(path, f"question {j.question_set}/{j.question_id} is not in this run's pool "
                                  f"(sets: {', '.join(pool.sets())})", number)
        if j.question is not None and j.question != question.text:
            raise DataError(path, f"question {j.question_set}/{j.question_id} reads {j.question!r} here but "
                                  f"{question.text!r} in the run: judgments of another question file?", number)
        if j.chunk_id is not None and j.chunk_id not in pool.chunks and j.url is None:
            raise DataError(path, f"chunk {j.chunk_id!r} is not in the pool of {j.question_set}/{j.question_id} "
                                  "and the line gives no url", number)


@dataclass
class SetState:
    name: str
    questions: list[PoolQuestion]
    decision: PoolDecision
    order: JudgingOrder
    judged: int = 0
    decided_at: int | None = None  # judgments when first decided with confidence
    certain_at: int | None = None  # ... and for certain (the bounds)


@dataclass
class JudgingSession:
    """One judge's session on ``run_dir`` (see the module docstring)."""

    run_dir: Path
    judge: str
    order: str = "mtc"
    kind: str = "person"
    pool: Pool = field(init=False)
    log: JudgmentLog = field(init=False)
    sets: dict[str, SetState] = field(init=False)
    skipped: set[tuple[str, str, str]] = field(init=False, default_factory=set)
    history: list[tuple[str, str, str]] = field(init=False, default_factory=list)
    read: ReadJudgments = field(init=False)

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise DataError("--order", f"{self.order!r}: expected one of {', '.join(ORDERS)}")
        self.pool = read_pool(self.run_dir)
        path = self.run_dir / JUDGMENTS_FILE
        self.read = read_judgments(path)
        check_against_pool(path, self.read, self.pool)
        self.log = JudgmentLog(path)
        self.sets = {}
        for name in self.pool.sets():
            questions = self.pool.set_questions(name)
            decision, order = self.pool.judging(questions, self.order)
            self.sets[name] = SetState(name, questions, decision, order)
        for j in self.read.judgments:
            if j.judge == self.judge and j.chunk_id is not None:
                self._apply(j)

    def _apply(self, j: Judgment) -> None:
        state = self.sets[j.question_set]
        key = (j.question_set, j.question_id, j.chunk_id)
        if j.chunk_id in state.decision.pools[j.question_id].chunk_unit:
            state.decision.judge(j.question_id, j.chunk_id, j.grade)
        if key not in self.history:
            state.judged += 1
        else:
            self.history.remove(key)
        self.history.append(key)
        if state.decided_at is None or state.certain_at is None:
            d = state.decision.decision()
            if state.decided_at is None and d.confident:
                state.decided_at = state.judged
            if state.certain_at is None and d.decided:
                state.certain_at = state.judged

    def grade_of(self, question_set: str, qid: str, chunk: str) -> int | str | None:
        """This judge's grade of the chunk, ``"cant_tell"``, or None when not judged."""
        decision = self.sets[question_set].decision
        if chunk in decision.grades[qid]:
            return decision.grades[qid][chunk]
        return "cant_tell" if chunk in decision.settled[qid] else None

    def record(self, question_set: str, qid: str, chunk: str, grade: int | None) -> Judgment:
        """Store one judgment (flushed to disk before this returns), then update the state."""
        if (question_set, qid) not in self.pool.questions or chunk not in self.pool.chunks:
            raise DataError("judgment", f"{question_set}/{qid} chunk {chunk!r} is not in this run's pool")
        if grade is not None and grade not in (0, 1, 2, 3):
            raise DataError("judgment", f"grade {grade!r}: expected 0, 1, 2, 3 or can't tell")
        question = self.pool.questions[(question_set, qid)]
        judgment = Judgment(question_set=question_set, question_id=qid, question=question.text, chunk_id=chunk,
                            url=self.pool.chunks[chunk].url, grade=grade, cant_tell=grade is None,
                            judge=self.judge, time=now(), kind=self.kind)
        self.log.append([judgment])
        self.read.judgments.append(judgment)  # the latest counts (shared_grades keeps the last of each item)
        self.skipped.discard((question_set, qid, chunk))
        self._apply(judgment)
        return judgment

    def skip(self, question_set: str, qid: str, chunk: str) -> None:
        """Put the chunk aside for this session (not stored: it comes back when the page is reopened)."""
        self.skipped.add((question_set, qid, chunk))

    def next_item(self) -> tuple[str, str, str] | None:
        """The next (set, question id, chunk) to grade, None when the whole pool is graded or skipped."""
        for name, state in self.sets.items():
            skip = {(q, c) for s, q, c in self.skipped if s == name}
            item = state.order.next(skip)
            if item is not None:
                return name, *item
        return None

    def item(self, question_set: str, qid: str, chunk: str) -> dict:
        """What the page shows of one pooled chunk: the question, the passage, its page and section,
        and this judge's grade so far; never a method, rank or score."""
        question, passage = self.pool.questions[(question_set, qid)], self.pool.chunks[chunk]
        blind = self.pool.blind_order(question)
        return {"question_set": question_set, "question_id": qid, "question": question.text, "chunk_id": chunk,
                "url": passage.url, "section": passage.section, "text": passage.text,
                "position": blind.index(chunk) + 1, "pool_size": len(blind),
                "grade": self.grade_of(question_set, qid, chunk)}

    def previous(self, current: tuple[str, str, str] | None) -> tuple[str, str, str] | None:
        """The judgment made before ``current`` (or the last one), for going back."""
        if not self.history:
            return None
        if current in self.history:
            index = self.history.index(current)
            return self.history[index - 1] if index > 0 else None
        return self.history[-1]

    def status(self) -> dict:
        """Per set, where judging stands (what the page shows after every judgment)."""
        sets = []
        for name, state in self.sets.items():
            d = state.decision.decision()
            values = state.decision.values
            tests = []
            for pair in d.pairs:
                a, b = (state.decision.methods.index(m) for m in (pair.a, pair.b))
                p = paired_randomization_test(values[:, a], values[:, b], TEST_RESAMPLES, self.pool.seed) \
                    if len(values) else float("nan")
                tests.append({"a": pair.a, "b": pair.b, "lower": pair.lower, "point": pair.point, "upper": pair.upper,
                              "fixed": pair.fixed, "p": p, "confidence": d.confidence.get(pair.b)})
            pooled = sum(len(q.pooled()) for q in state.questions)
            sets.append({
                "name": name, "questions": len(state.questions), "pooled": pooled, "judged": state.judged,
                "open": len(state.decision.open_chunks()), "leader": d.leader, "means": d.means,
                "decided": d.confident, "decided_at": state.decided_at if d.confident else None,
                "certain": d.decided, "certain_at": state.certain_at if d.decided else None,
                "confidence_needed": state.decision.pair_confidence,
                "tied_with": d.tied_with, "pairs": tests,
                "metric": f"{'chunk:' if self.pool.level == 'chunk' else ''}ndcg@{self.pool.k}",
            })
        return {"judge": self.judge, "order": self.order, "sets": sets, "agreement": self.agreement()}

    def agreement(self) -> list[dict]:
        """Weighted kappa of every pair of judges on the chunks both graded, with the base rates."""
        judgments = self.read.judgments  # every judge's lines read at start, and this judge's since
        names = list(judges_of(judgments))
        rows = []
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                x, y = shared_grades(judgments, a, b)
                if not x:
                    continue
                k = weighted_kappa(x, y)
                rows.append({"a": a, "b": b, "shared": k.n, "kappa": None if np.isnan(k.kappa) else k.kappa,
                             "observed": k.observed, "base_rate_a": k.base_rate_a, "base_rate_b": k.base_rate_b})
        return rows
