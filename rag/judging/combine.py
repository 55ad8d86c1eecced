"""Several judges -> one grade per judged item, and the qrels a verdict stands on.

The rule (docs/judging.md, "Two judges"):

* a person's grades stand before an LLM's: an LLM judge's grade counts only with ``trust_llm``, and
  then only for items no person graded;
* several grades of one item: the median, rounded down (for two judges, the lower grade: a passage
  "answers it" only if both say so);
* "can't tell" is no grade: an item whose every judge said it is settled as unjudged (irrelevant
  under trec_eval's convention, left out of the condensed list);
* a page's grade (URL level) is its own page-level grade if one was given, else the highest grade of
  its judged chunks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rag.judging.store import Judgment

PAGE_PREFIX = "url:"


def median_down(grades: list[int]) -> int:
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]


@dataclass
class QuestionGrades:
    """One question's combined grades: per chunk, per page-level item, and the URL of each chunk."""

    chunks: dict[str, int] = field(default_factory=dict)
    pages: dict[str, int] = field(default_factory=dict)
    cant_tell: set[str] = field(default_factory=set)
    chunk_url: dict[str, str] = field(default_factory=dict)

    def url_grades(self) -> dict[str, int]:
        grades: dict[str, int] = {}
        for chunk, grade in self.chunks.items():
            url = self.chunk_url[chunk]
            grades[url] = max(grade, grades.get(url, 0))
        grades.update(self.pages)
        return grades


def judges_of(judgments: Iterable[Judgment]) -> dict[str, str]:
    """Every judge's kind (``person`` or ``llm``), in the order they first appear."""
    return {j.judge: j.kind for j in judgments}


def counted(judgments: Iterable[Judgment], trust_llm: bool = False,
            judges: Iterable[str] | None = None) -> list[Judgment]:
    """The lines a verdict reads: only ``judges``' when given (an LLM judge named there counts),
    else every person's, and the LLM judges' too with ``trust_llm``."""
    wanted = set(judges) if judges is not None else None
    return [j for j in judgments
            if (j.judge in wanted if wanted is not None else trust_llm or j.kind == "person")]


def combine(judgments: Iterable[Judgment], trust_llm: bool = False,
            judges: Iterable[str] | None = None) -> dict[tuple[str, str], QuestionGrades]:
    """(question set, question id) -> :class:`QuestionGrades` by the rule of the module docstring;
    ``judges`` keeps only those judges' lines."""
    by_item: dict[tuple[str, str, str], dict[str, list[Judgment]]] = defaultdict(lambda: defaultdict(list))
    for j in counted(judgments, trust_llm, judges):
        by_item[j.item][j.kind].append(j)
    combined: dict[tuple[str, str], QuestionGrades] = defaultdict(QuestionGrades)
    for (question_set, qid, key), kinds in by_item.items():
        lines = kinds.get("person") or kinds.get("llm") or []
        target = combined[(question_set, qid)]
        graded = [j.grade for j in lines if j.grade is not None]
        if not graded:
            target.cant_tell.add(key)
            continue
        grade = median_down(graded)
        if key.startswith(PAGE_PREFIX) and lines[0].chunk_id is None:
            target.pages[key.removeprefix(PAGE_PREFIX)] = grade
        else:
            target.chunks[key] = grade
            target.chunk_url[key] = lines[-1].url or ""
    return dict(combined)


def shared_grades(judgments: Iterable[Judgment], a: str, b: str) -> tuple[list[int], list[int]]:
    """The grades judges ``a`` and ``b`` both gave (can't-tell left out), item by item."""
    grades: Mapping[str, dict[tuple[str, str, str], int]] = defaultdict(dict)
    for j in judgments:
        if j.grade is not None and j.judge in (a, b):
            grades[j.judge][j.item] = j.grade
    shared = [item for item in grades[a] if item in grades[b]]
    return [grades[a][i] for i in shared], [grades[b][i] for i in shared]
