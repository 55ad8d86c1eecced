"""A run's questions as TREC topics, so any system can answer them: ``questions.tsv`` in the run
directory, one question a line, its TREC query id, a tab, its text.

The query id is the one every TREC file of the run uses (``runs/*.trec``, ``runs/qrels.*.txt``):
``<set>/<qid>`` written with :func:`evaluation.encode_trec_id`. A run file made from these ids can be
brought back into a run with ``rag-bench run ... --run NAME=FILE`` (:mod:`rag.retrievers.run_file`).
The text is the question with each run of white space (tabs and line breaks included) written as
one space, so that a line is always one question. A leaf module: the runner writes the file, the
result writers and the run-file reader name the ids with :func:`trec_query_id`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from evaluation.trec_io import encode_trec_id
from rag.io_utils import atomic_write_text
from rag.types import Question

QUESTIONS_FILE = "questions.tsv"


def trec_query_id(set_name: str, qid: str) -> str:
    """The TREC query id of question ``qid`` of ``set_name``: ``<set>/<qid>``, encoded."""
    return encode_trec_id(f"{set_name}/{qid}")


def topic_text(text: str) -> str:
    """A question's text as one line of ``questions.tsv`` (white space runs become one space)."""
    return " ".join(text.split())


def question_ids(question_sets: Mapping[str, Sequence[Question]]) -> dict[str, str]:
    """``{TREC query id: question text}`` of every question of ``question_sets``, in order."""
    return {trec_query_id(name, q.qid): q.text for name, questions in question_sets.items() for q in questions}


def write_questions(path: Path, question_sets: Mapping[str, Sequence[Question]]) -> Path:
    """``questions.tsv`` (module docstring) at ``path``, written atomically."""
    lines = [f"{qid}\t{topic_text(text)}\n" for qid, text in question_ids(question_sets).items()]
    return atomic_write_text(path, "".join(lines))
