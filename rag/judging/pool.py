"""What a run leaves for judging: ``RUN_DIR/pool.json``.

For every question set of the run (a set without gold to judge, and a labelled set too, so that a
person can grade what its gold did not cover: TREC judges a pool to find the gold's holes), each
question's text and every retrieval method's top-k chunk ids (k = the run's ``top_k``: what a
generator sees), and the text, page and section of every pooled chunk, so that judging needs the
run directory alone (not the documents, the config or the caches); and every page of the corpus
(``pages``), which a page graded as a whole may name (:mod:`rag.judging.lines`; a pool without the
list, of an earlier run, allows its pooled pages). The pool of a question is the union of the
methods' top-k, shown to a judge *blind*: in a seeded order that follows no method
(:meth:`Pool.blind_order`), with no method, rank or score.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluation.metrics import parse_metric
from evaluation.mtc import MAX_GRADE, JudgingOrder, PoolDecision, QuestionPool, ranks_alike
from rag.errors import DataError
from rag.io_utils import atomic_write_json, parse_json

POOL_FILE = "pool.json"
POOL_FORMAT = 1
CHUNK_PREFIX = "chunk:"


@dataclass(frozen=True)
class PoolQuestion:
    question_set: str
    qid: str
    text: str
    lists: dict[str, list[str]]  # method -> top-k chunk ids, rank order

    def pooled(self) -> list[str]:
        return list(dict.fromkeys(c for ranked in self.lists.values() for c in ranked))


@dataclass(frozen=True)
class PoolChunk:
    chunk_id: str
    url: str
    section: str
    text: str


@dataclass(frozen=True)
class Pool:
    """A run's judging pool (module docstring)."""

    top_k: int
    primary: str
    seed: int
    methods: list[str]
    questions: dict[tuple[str, str], PoolQuestion]
    chunks: dict[str, PoolChunk]
    pages: frozenset[str] = frozenset()  # every page of the corpus (module docstring)

    @property
    def level(self) -> str:
        """``chunk`` when the primary metric is chunk-level, else ``url``."""
        return "chunk" if self.primary.startswith(CHUNK_PREFIX) else "url"

    @property
    def k(self) -> int:
        """The cut-off of the judged comparison: the primary metric's, else ``top_k``."""
        try:
            return parse_metric(self.primary.removeprefix(CHUNK_PREFIX)).k or self.top_k
        except ValueError:
            return self.top_k

    def sets(self) -> list[str]:
        return list(dict.fromkeys(s for s, _ in self.questions))

    def set_questions(self, question_set: str) -> list[PoolQuestion]:
        return [q for (s, _), q in self.questions.items() if s == question_set]

    def unit(self, chunk_id: str) -> str:
        return chunk_id if self.level == "chunk" else self.chunks[chunk_id].url

    def question_pool(self, question: PoolQuestion) -> QuestionPool:
        """The question's pool for :mod:`evaluation.mtc`: each method's top-k units (pages in the
        order of their best chunk at URL level) and each pooled chunk's unit."""
        lists = {m: list(dict.fromkeys(self.unit(c) for c in ranked)) for m, ranked in question.lists.items()}
        return QuestionPool(lists, {c: self.unit(c) for c in question.pooled()})

    def fixed_questions(self) -> frozenset[tuple[str, str]]:
        """The (set, question id) of the questions no grade can change a difference of: every method
        ranks the same units in the same places of its top k (:meth:`evaluation.mtc.PoolDecision.fixed_questions`)."""
        return frozenset(key for key, question in self.questions.items()
                         if ranks_alike(self.question_pool(question), self.methods, self.k))

    def judging(self, questions: Sequence[PoolQuestion], order: str = "mtc", max_grade: int = MAX_GRADE,
                seed: int | None = None) -> tuple[PoolDecision, JudgingOrder]:
        """The judging state of ``questions`` (:class:`evaluation.mtc.PoolDecision`) and its order,
        the depth order going through each question's pool blind (:meth:`blind_order`)."""
        decision = PoolDecision({q.qid: self.question_pool(q) for q in questions}, self.methods, self.k, max_grade)
        return decision, JudgingOrder(decision, order, self.seed if seed is None else seed,
                                      {q.qid: self.blind_order(q) for q in questions})

    def blind_order(self, question: PoolQuestion) -> list[str]:
        """The question's pooled chunks in a seeded order that follows no method: sorted by id, then
        shuffled by a generator seeded with the run's seed, the set and the question id."""
        digest = hashlib.sha256(f"{self.seed}\0{question.question_set}\0{question.qid}".encode()).digest()
        order = sorted(question.pooled())
        random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
        return order


def write_pool(path: Path, top_k: int, primary: str, seed: int, methods: Sequence[str],
               questions: Sequence[PoolQuestion], chunks: Mapping[str, PoolChunk], pages: Sequence[str] = ()) -> Path:
    pooled = dict.fromkeys(c for q in questions for c in q.pooled())
    record = {
        "format": POOL_FORMAT, "top_k": top_k, "primary": primary, "seed": seed, "methods": list(methods),
        "pages": sorted({*pages, *(chunks[c].url for c in pooled)}),
        "questions": [{"question_set": q.question_set, "id": q.qid, "question": q.text, "lists": q.lists}
                      for q in questions],
        "chunks": {c: {"url": chunks[c].url, "section": chunks[c].section, "text": chunks[c].text} for c in pooled},
    }
    return atomic_write_json(path, record, indent=None)


def read_pool(run_dir: Path) -> Pool:
    """The pool of ``run_dir``; one :class:`DataError` naming the file when it is missing, of another
    format version, or inconsistent."""
    path = run_dir / POOL_FILE
    if not run_dir.is_dir():
        raise DataError(run_dir, "not a run directory")
    if not path.is_file():
        raise DataError(path, "missing: this run directory holds no pool to judge (a run of this version writes one "
                              "for every question set; run the benchmark again with this version)")
    try:
        raw = parse_json(path.read_bytes())
    except ValueError as exc:  # not UTF-8, not JSON, nested too deeply
        raise DataError(path, f"not valid JSON: {exc}") from None
    if not isinstance(raw, dict) or raw.get("format") != POOL_FORMAT:
        found = raw.get("format") if isinstance(raw, dict) else None
        raise DataError(path, f"pool format {found!r}, this version reads format {POOL_FORMAT}: a run directory of "
                              "another version; run the benchmark again with this version")
    try:
        chunks = {c: PoolChunk(c, v["url"], v["section"], v["text"]) for c, v in raw["chunks"].items()}
        questions = {}
        for q in raw["questions"]:
            question = PoolQuestion(q["question_set"], q["id"], q["question"], {m: list(r) for m, r in q["lists"].items()})
            missing = [c for c in question.pooled() if c not in chunks]
            if missing:
                raise DataError(path, f"question {question.qid!r} pools chunk {missing[0]!r}, which the file does not hold")
            questions[(question.question_set, question.qid)] = question
        methods = raw["methods"]
        if not isinstance(methods, list) or not methods or not all(isinstance(m, str) and m for m in methods):
            raise DataError(path, f"methods: expected a non-empty list of method names, got {methods!r}")
        pages = frozenset(raw.get("pages") or ()) | {c.url for c in chunks.values()}
        return Pool(int(raw["top_k"]), str(raw["primary"]), int(raw["seed"]), methods, questions, chunks, pages)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DataError(path, f"malformed pool ({type(exc).__name__}: {exc})") from None
