"""What a grade line may name in a run: one rule for the page's POST, the grade file's reader
(``judge``, ``--export``), ``--import``, ``rescore`` and ``run --judgments``, so that a line is
accepted everywhere or refused everywhere, with the file and line.

A line (:class:`rag.judging.store.Judgment`, whose schema already holds: a grade 0-3 or null said
explicitly, a judge's name without a control character or a comma) names

* a question of the run, with that question's text when it gives one;
* a passage of *that question's* pool, on that passage's page when it gives a url (where the run has
  a pool; without one, as in ``run --judgments``, a passage is checked against the corpus' chunks once
  the documents are chunked: :func:`rag.judging.apply.with_page_chunks`);
* or, for a page graded as a whole (``chunk_id`` null), a page of the corpus.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from rag.errors import DataError
from rag.judging.pool import Pool, read_pool
from rag.judging.store import JUDGMENTS_FILE, Judgment, ReadJudgments, read_judgments


@dataclass(frozen=True)
class LineRules:
    """What the lines of one run may name (module docstring)."""

    questions: Mapping[tuple[str, str], str]  # (set, question id) -> the question's text
    pages: Collection[str]  # the corpus' pages
    passages: Mapping[tuple[str, str], Collection[str]] | None = None  # each question's pool; None: no pool
    chunk_url: Mapping[str, str] | None = None  # each pooled passage's page

    @classmethod
    def of_pool(cls, pool: Pool) -> "LineRules":
        """The rules of a run directory: its pool's questions and passages, the corpus' pages it records."""
        return cls({key: q.text for key, q in pool.questions.items()}, pool.pages,
                   {key: set(q.pooled()) for key, q in pool.questions.items()},
                   {c: chunk.url for c, chunk in pool.chunks.items()})

    def item_problem(self, question_set: str, qid: str, chunk_id: str | None, url: str | None = None) -> str | None:
        """Why the passage (or page, ``chunk_id`` None) cannot be graded for the question, or None."""
        key = (question_set, qid)
        if key not in self.questions:
            sets = ", ".join(dict.fromkeys(s for s, _ in self.questions))
            where = "this run's pool" if self.passages is not None else "this run"
            return f"question {question_set}/{qid} is not in {where} (sets: {sets})"
        if chunk_id is None:
            if url not in self.pages:
                return f"page {url!r} is not a page of this run's corpus"
            return None
        if self.passages is None:
            return None
        if chunk_id not in self.passages[key]:
            return f"passage {chunk_id!r} is not in this run's pool of question {question_set}/{qid}"
        page = self.chunk_url[chunk_id] if self.chunk_url is not None else None
        if url is not None and page is not None and url != page:
            return f"passage {chunk_id!r} is on page {page!r}, not {url!r}"
        return None

    def problem(self, j: Judgment) -> str | None:
        """Why the line cannot stand in this run, or None."""
        if problem := self.item_problem(j.question_set, j.question_id, j.chunk_id, j.url):
            return problem
        text = self.questions[(j.question_set, j.question_id)]
        if j.question is not None and j.question != text:
            return (f"question {j.question_set}/{j.question_id} reads {j.question!r} here but {text!r} in the run: "
                    "judgments of another question file?")
        return None

    def check(self, path: Path, read: ReadJudgments, own_questions_only: bool = False) -> None:
        """Every counted line of ``read`` (of the file ``path``) stands; else one :class:`DataError`
        naming the file and line. ``own_questions_only``: lines of questions these rules do not hold
        are left to a later check (rescore checks the pooled questions' lines before it loads the
        data, and a labelled set's lines once its questions are loaded)."""
        for number, j in zip(read.numbers, read.judgments):
            if own_questions_only and (j.question_set, j.question_id) not in self.questions:
                continue
            if problem := self.problem(j):
                raise DataError(path, problem, number)


def check_grade_file(run_dir: Path) -> tuple[Pool, ReadJudgments]:
    """The run's pool and grade file, every line checked (:class:`LineRules`), before a command uses
    them: a bad line is one error naming the file and line, before anything is served, written or sent."""
    pool = read_pool(run_dir)
    path = run_dir / JUDGMENTS_FILE
    read = read_judgments(path)
    LineRules.of_pool(pool).check(path, read)
    return pool, read
