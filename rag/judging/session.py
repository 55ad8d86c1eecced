"""The judging state of one judge on a run's pool: which chunk to grade next, and whether the
recommendation on the primary metric is decided (:mod:`evaluation.mtc`).

"Decided" on the page is the statement ``rag-bench rescore`` will print from the same grades: after every
grade the set's verdict is made by the recommendation's own rule (:func:`rag.results.comparison.compare`,
the run's statistics settings, costs and margin) from the per-question nDCG the grades give (unjudged =
irrelevant; the questions with a grade, and those no grade can change, counted with difference 0), and
the page says "decided" when that verdict is a winner, a non-inferior cheaper method or an equivalence
and the confidence model says the rest of the pool keeps it so (the winner: the leader stays ahead; an
equivalence: every difference stays inside ±margin; non-inferiority: the chosen method's difference stays
above -margin; each at the model's Bonferroni level, or for certain by the bounds), or when the verdict is
undecided and no grade left in this pool can move it (then it says how many questions would decide;
before that, when the verdict so far needs more questions than the set has, it says so as a warning,
not as "decided": early grades leave most differences at 0, so that figure is not yet reliable). It
estimates the grades left from the model (:meth:`JudgingSession.grades_left`) and the time at this
judge's own pace (the median gap between their grades, gaps over :data:`IDLE_SECONDS` left out).

Each judge judges the pool on their own (their order and their "decided" read their own grades
only), so that two judges on the same pool can be compared; the verdict combines them
(:mod:`rag.judging.combine`). Within a run, the question sets are judged one after another: a set's
chunks by MTC's priority until its recommendation is decided (then, if the judge goes on, the rest
of its pool in depth order), or question by question with ``order="depth"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import t as student

from evaluation.agreement import weighted_kappa
from evaluation.mtc import JudgingOrder, PoolDecision, probability_between
from evaluation.stats import paired_randomization_test
from rag.errors import DataError
from rag.io_utils import parse_json
from rag.results import schema
from rag.results.comparison import StatisticsSettings, compare
from rag.results.format import set_line
from rag.results.recommendation import EQUIVALENT, NON_INFERIOR, UNDECIDED, WINNER, SetRecommendation
from rag.judging.combine import judges_of, shared_grades
from rag.judging.lines import LineRules
from rag.judging.pool import Pool, PoolQuestion, read_pool
from rag.judging.store import JUDGMENTS_FILE, Judgment, JudgmentLog, ReadJudgments, now, read_judgments

ORDERS = ("mtc", "depth")
TEST_RESAMPLES = 2000
#: A gap between two grades longer than this is a pause, not the judge's pace.
IDLE_SECONDS = 300.0


def run_statistics(run_dir: Path, margin: float | None = None) -> tuple[StatisticsSettings, dict]:
    """The run's statistics settings (comparison.json's, the margin replaced by ``margin`` when given)
    and each (set, method)'s cost and cost noise, which the verdict's cheaper-choice rule reads."""
    path = run_dir / "comparison.json"
    data = parse_json(path.read_bytes()) if path.is_file() else {}
    known = {f.name for f in fields(StatisticsSettings)}
    settings = StatisticsSettings(**{k: v for k, v in (data.get("statistics") or {}).items() if k in known})
    if margin is not None:
        settings = StatisticsSettings(**{**vars(settings), "margin": margin})
    costs = {(r["question_set"], r["method"]): (_number(r.get("retrieval_ms_per_query")),
                                                _number(r.get("retrieval_ms_noise")))
             for r in data.get("rows") or [] if isinstance(r, dict) and "question_set" in r and "method" in r}
    return settings, costs


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


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
    margin: float | None = None  # None: the run's own (comparison.json)
    pool: Pool = field(init=False)
    log: JudgmentLog = field(init=False)
    sets: dict[str, SetState] = field(init=False)
    skipped: set[tuple[str, str, str]] = field(init=False, default_factory=set)
    history: list[tuple[str, str, str]] = field(init=False, default_factory=list)
    read: ReadJudgments = field(init=False)
    rules: LineRules = field(init=False)
    settings: StatisticsSettings = field(init=False)  # the run's, the margin as given
    costs: dict = field(init=False)  # (set, method) -> (ms per question, noise)

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise DataError("--order", f"{self.order!r}: expected one of {', '.join(ORDERS)}")
        self.pool = read_pool(self.run_dir)
        path = self.run_dir / JUDGMENTS_FILE
        self.read = read_judgments(path)
        self.rules = LineRules.of_pool(self.pool)
        self.rules.check(path, self.read)  # the one rule for a grade line (rag.judging.lines)
        self.log = JudgmentLog(path)
        self.settings, self.costs = run_statistics(self.run_dir, self.margin)
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
        if problem := self.rules.item_problem(question_set, qid, chunk):
            raise DataError("judgment", problem)
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

    @property
    def metric(self) -> str:
        return f"{'chunk:' if self.pool.level == 'chunk' else ''}ndcg@{self.pool.k}"

    def verdict(self, state: SetState) -> SetRecommendation | None:
        """The set's verdict from this judge's grades, by the recommendation's rule (module docstring);
        None before two questions count."""
        decision = state.decision
        rows = np.flatnonzero(decision.judged_questions() | decision.fixed_questions())
        if len(rows) < 2:
            return None
        records = []
        for i in rows:
            for m, method in enumerate(decision.methods):
                ms, noise = self.costs.get((state.name, method), (math.nan, math.nan))
                records.append({schema.QUESTION_SET: state.name, schema.METHOD: method, schema.QID: decision.qids[i],
                                self.metric: float(decision.values[i, m]), schema.RETRIEVAL_MS: ms,
                                schema.RETRIEVAL_MS_NOISE: noise, schema.GENERATION_STATUS: schema.NOT_REQUESTED,
                                schema.GENERATION_S: math.nan, schema.PROMPT_TOKENS: 0, schema.COMPLETION_TOKENS: 0})
        comparison = compare(pd.DataFrame(records), [self.metric], self.settings, primary=self.metric)
        return comparison.recommendation.sets[0] if comparison.recommendation else None

    def _model(self, state: SetState, verdict: SetRecommendation, method: str) -> tuple[float, float, int] | None:
        """The model's distribution of mean(method - best) once the pool is judged."""
        model = state.decision.distribution()
        if (method, verdict.best) in model:
            return model[(method, verdict.best)]
        if (verdict.best, method) in model:
            mean, var, df = model[(verdict.best, method)]
            return -mean, var, df
        return None

    def _holds(self, state: SetState, verdict: SetRecommendation, method: str, low: float, high: float) -> bool:
        """mean(method - best) lies in (low, high) for certain (the bounds) or with the model's confidence."""
        pair = state.decision.pair_state(method, verdict.best)
        if low < pair.lower and pair.upper < high:
            return True
        return probability_between(self._model(state, verdict, method), low, high) >= state.decision.pair_confidence

    def decided(self, state: SetState, verdict: SetRecommendation | None) -> bool:
        """The page's "decided" (module docstring); also marks the pairs the margin has settled, so
        that MTC's order stops asking for them."""
        decision, delta = state.decision, self.settings.margin
        decision.margin_decided = set()  # settled anew from this verdict: a verdict that moved on frees them
        if verdict is None:
            return False
        top = [m for m in verdict.top_group if m != verdict.best]
        if verdict.outcome == WINNER:
            d = decision.decision()
            return d.confident and d.leader == verdict.best
        if verdict.outcome == EQUIVALENT:
            settled = {m for m in top if self._holds(state, verdict, m, -delta, delta)}
            decision.margin_decided = settled if decision.decision().leader == verdict.best else set()
            return settled == set(top)
        if verdict.outcome == NON_INFERIOR:
            return self._holds(state, verdict, verdict.method, -delta, math.inf)
        return not decision.open_chunks() or not decision.chunk_weights().any()

    def grades_left(self, state: SetState, verdict: SetRecommendation | None) -> int | None:
        """About how many more grades until decided, from the model: for each undecided comparison of
        the best, how many judged questions bring the sampling part of its variance down to where it
        clears the nearest bound it can reach (0 for better, ±margin for equivalent and non-inferior)
        at the model's level, times this judge's grades per judged question so far, plus the open
        passages of the questions already judged that can still move a comparison (grading them takes
        off the rest of the variance). None: not estimable yet (fewer judged questions than the model
        needs, or no open comparison with a bound it can reach)."""
        decision, delta = state.decision, self.settings.margin
        judged = decision.judged_questions()
        count = int(judged.sum())
        if verdict is None or count == 0 or not decision.distribution():
            return None
        z = float(student.ppf(decision.pair_confidence, max(count - 1, 1)))
        needed, reachable = 0.0, False
        for method in (m for m in verdict.top_group if m != verdict.best):
            if method in decision.margin_decided:
                continue
            mean, _, _ = self._model(state, verdict, method)
            spread, _, total = decision.sampling_spread(method, verdict.best)
            distances = [d for d in (-mean, delta - abs(mean), mean + delta) if d > 0]
            if not distances or not math.isfinite(spread):
                continue
            reachable = True
            if spread > 0:
                target = (max(distances) / z) ** 2  # the sampling variance that clears the nearest bound
                needed = max(needed, 1.0 / (target / spread + 1.0 / total) - count)
        if not reachable:
            return None
        weights = decision.chunk_weights()
        open_in_judged = sum(1 for (qid, _), w in zip(decision.chunk_items, weights) if w > 0 and judged[decision.row[qid]])
        return max(1, math.ceil(max(needed, 0.0) * state.judged / count) + open_in_judged)

    def pace(self) -> float | None:
        """This judge's median seconds between two grades, pauses over :data:`IDLE_SECONDS` left out."""
        times = sorted(datetime.fromisoformat(j.time) for j in self.read.judgments if j.judge == self.judge and j.time)
        gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
        gaps = [g for g in gaps if 0 < g <= IDLE_SECONDS]
        return float(np.median(gaps)) if gaps else None

    def status(self) -> dict:
        """Per set, where judging stands (what the page shows after every judgment)."""
        sets = []
        pace = self.pace()
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
            verdict = self.verdict(state)
            decided = self.decided(state, verdict)
            left = 0 if decided else self.grades_left(state, verdict)
            pooled = sum(len(q.pooled()) for q in state.questions)
            sets.append({
                "name": name, "questions": len(state.questions), "pooled": pooled, "judged": state.judged,
                "open": len(state.decision.open_chunks()), "leader": d.leader, "means": d.means,
                "decided": decided, "decision": verdict.outcome if verdict is not None else None,
                "verdict": set_line(verdict, self.settings.correction is not None) if verdict is not None else None,
                "questions_needed": verdict.questions_needed if verdict is not None else None,
                "cannot_decide": decided and verdict is not None and verdict.outcome == UNDECIDED,
                "grades_left": left, "seconds_left": left * pace if left is not None and pace is not None else None,
                "estimable": bool(state.decision.distribution()),
                "too_few": verdict is not None and verdict.outcome == UNDECIDED and (
                    verdict.questions_needed is None or verdict.questions_needed > len(state.questions)),
                "margin": self.settings.margin, "confident": d.confident,
                "decided_at": state.decided_at if d.confident else None,
                "certain": d.decided, "certain_at": state.certain_at if d.decided else None,
                "confidence_needed": state.decision.pair_confidence,
                "tied_with": d.tied_with, "pairs": tests, "metric": self.metric,
            })
        return {"judge": self.judge, "order": self.order, "sets": sets, "agreement": self.agreement(), "pace": pace}

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
