"""Judgments -> the ground truth a run scores against (``rag-bench rescore``, ``run --judgments``).

Each question with at least one grade (:mod:`rag.judging.combine`) gets graded gold: at URL level
``{url: grade}`` (a page's grade is its page-level grade, else the highest grade of its judged
chunks; pages graded 0 are judged non-relevant), at chunk level the judged chunks' grades (and, for a
page graded as a whole, each of its chunks at the page's grade). Everything unjudged counts as
irrelevant (trec_eval's convention). In a set that had no gold, the questions nobody graded are left
out (counted), except those no grade can change a difference of (every method ranks the same units in
the same places of its top k: :meth:`rag.judging.pool.Pool.fixed_questions`); in a set with gold, a
judged question's judgments take the place of its gold. A judged question (:data:`JUDGED`) with nothing
relevant in the judged pool scores 0 on every retrieval metric for every method, where the engine
would call it undefined: it counts in the paired statistics with difference 0, as on the judging page
(:mod:`rag.judging.session`), instead of being left out (which would shrink n and inflate the mean
difference; :func:`rag.runner.stages.evaluate_stage`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rag.data.records import is_unjudged
from rag.errors import DataError
from rag.judging.combine import combine, counted, judges_of
from rag.io_utils import parse_json
from rag.judging.lines import LineRules
from rag.judging.pool import POOL_FILE, read_pool
from rag.judging.store import read_judgments
from rag.types import Chunk, Question


#: Question metadata: the question's gold comes from judgments (or no grade can change its differences),
#: so a method that finds nothing relevant scores 0, not "undefined" (module docstring).
JUDGED = "judged"


@dataclass
class JudgedSets:
    """The question sets with judged gold, and what that gold stands on."""

    question_sets: dict[str, list[Question]]
    judgments: int  # lines counted (the latest of each judge and item)
    judges: dict[str, str]  # judge -> kind, those counted
    unjudged_questions: dict[str, list[str]] = field(default_factory=dict)  # set -> ids left out (no grade)
    cant_tell: int = 0
    rejudged: int = 0

    def facts(self) -> dict:
        return {"judgments": self.judgments, "judges": self.judges, "cant_tell": self.cant_tell,
                "rejudged": self.rejudged,
                "questions_judged": {name: len(qs) for name, qs in self.question_sets.items()},
                "questions_left_out": {name: len(ids) for name, ids in self.unjudged_questions.items()}}


def apply_judgments(path: Path, question_sets: Mapping[str, Sequence[Question]], known_urls: Collection[str],
                    trust_llm: bool = False, judges: Sequence[str] | None = None,
                    fixed: Collection[tuple[str, str]] = frozenset()) -> JudgedSets:
    """``question_sets`` with the judgments of ``path`` as their gold (module docstring); a line the
    grade file's rules refuse (:mod:`rag.judging.lines`: an unknown question, a page not in the corpus)
    is one :class:`DataError` naming the file and line."""
    read = read_judgments(path)
    rules = LineRules({(name, q.qid): q.text for name, qs in question_sets.items() for q in qs}, known_urls)
    rules.check(path, read)
    lines = counted(read.judgments, trust_llm, judges)
    if judges is not None:
        missing = [name for name in judges if name not in judges_of(read.judgments)]
        if missing:
            raise DataError(path, f"no judgment by {missing[0]!r} (judges: {', '.join(judges_of(read.judgments))})")
    grades = combine(lines, trust_llm=trust_llm, judges=judges)
    judged_sets: dict[str, list[Question]] = {}
    left_out: dict[str, list[str]] = {}
    cant_tell = 0
    for name, questions in question_sets.items():
        unjudged_set = is_unjudged(questions)
        kept: list[Question] = []
        for q in questions:
            g = grades.get((name, q.qid))
            cant_tell += len(g.cant_tell) if g else 0
            if g is None or not (g.chunks or g.pages):
                if unjudged_set and (name, q.qid) in fixed:  # no grade can change a difference: counts, at 0
                    kept.append(replace(q, metadata={**q.metadata, JUDGED: True}))
                elif unjudged_set:
                    left_out.setdefault(name, []).append(q.qid)
                else:
                    kept.append(q)
                continue
            url_grades = g.url_grades()
            kept.append(replace(q, gold_urls=[[url] for url, grade in url_grades.items() if grade > 0],
                                relevance=url_grades, chunk_relevance=dict(g.chunks),
                                metadata={**q.metadata, "judged_pages": sorted(g.pages), JUDGED: True}))
        if kept:
            judged_sets[name] = kept
    if not judged_sets:
        raise DataError(path, "no question of this run has a grade yet: judge some first (rag-bench judge RUN_DIR)")
    counted_judges = judges_of(lines)
    return JudgedSets(judged_sets, len(lines), counted_judges, left_out, cant_tell,
                      sum(read.rejudged_by[name] for name in counted_judges))


def check_inputs(run_dir: Path, path: Path, judges: Sequence[str] | None) -> None:
    """What a verdict from judgments reads besides the plan, checked before any work (so a bad one
    leaves nothing written): the run's manifest (a JSON object), the grade file (every line by the
    grade file's rules, against the run's pool where it has one; a labelled set's lines once its
    questions are loaded, :func:`apply_judgments`) and the judges ``judges`` names."""
    manifest_path = run_dir / "manifest.json"
    try:
        manifest = parse_json(manifest_path.read_bytes())
    except FileNotFoundError:
        raise DataError(manifest_path, "missing: not a finished run directory") from None
    except ValueError as exc:
        raise DataError(manifest_path, f"not valid JSON: {exc}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("chunks", {}), dict):
        raise DataError(manifest_path, "not a run's manifest (expected a JSON object with a 'chunks' object)")
    if not path.is_file():
        raise DataError(path, f"no grades yet: judge the pool first (rag-bench judge {run_dir})")
    read = read_judgments(path)
    if (run_dir / POOL_FILE).is_file():
        LineRules.of_pool(read_pool(run_dir)).check(path, read, own_questions_only=True)
    present = judges_of(read.judgments)
    missing = [name for name in judges or () if name not in present]
    if missing:
        raise DataError(path, f"no judgment by {missing[0]!r} (judges: {', '.join(present)})")


def with_page_chunks(question_sets: Mapping[str, Sequence[Question]], chunks: Sequence[Chunk],
                     path: Path) -> dict[str, list[Question]]:
    """Each judged question's chunk grades completed with the chunks of the pages graded as a whole,
    and every judged chunk checked against the corpus' chunks (one :class:`DataError` naming the
    judgments file otherwise)."""
    known = {c.chunk_id for c in chunks}
    chunks_of: dict[str, list[str]] = {}
    for c in chunks:
        chunks_of.setdefault(c.url, []).append(c.chunk_id)
    out: dict[str, list[Question]] = {}
    for name, questions in question_sets.items():
        out[name] = []
        for q in questions:
            if not q.chunk_relevance and not q.metadata.get("judged_pages"):
                out[name].append(q)
                continue
            unknown = [c for c in q.chunk_relevance if c not in known]
            if unknown:
                raise DataError(path, f"chunk {unknown[0]!r} of question {name}/{q.qid} is not a chunk of this corpus "
                                      "as chunked now: were the documents or the chunking changed since the run?")
            grades = dict(q.chunk_relevance)
            for url in q.metadata.get("judged_pages", []):
                for chunk_id in chunks_of.get(url, []):
                    grades.setdefault(chunk_id, q.relevance.get(url, 0))
            out[name].append(replace(q, chunk_relevance=grades))
    return out
