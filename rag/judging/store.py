"""The grade file: ``RUN_DIR/judgments.jsonl``, one JSON object a line::

    {"question_set": "mine", "question_id": "q3f2a9c1d", "question": "How do I ...?",
     "chunk_id": "doc.html#4", "url": "doc.html", "grade": 2, "judge": "ana",
     "time": "2026-11-27T12:00:00+00:00"}

``grade`` is required: 0..3 (TREC Deep Learning / UMBRELA: 0 irrelevant, 1 related, 2 answers it
partly, 3 answers it), or null with ``"cant_tell": true`` (counted, never read as 0). ``chunk_id``
may be null for a page-level grade (``url`` only: an imported Quepid or qrels row of a page). A
judge's name holds no control character and no comma (``rescore --judges a,b`` names judges).
Optional: ``kind`` (``person`` or ``llm``), ``source`` and ``source_sha256`` (an imported file).
What a line may name in a run (its pool's passages, the corpus' pages) is checked by
:mod:`rag.judging.lines`.

Every judgment is appended and flushed to disk (``fsync``) before the page hears it was stored, so
a server or browser killed mid-way loses at most the judgment in flight. Lines end in LF; CRLF and
CR-only files (an editor's) read the same. A complete, valid last line without its newline (an
editor that strips it, ``printf`` without ``\\n``) is a judgment like any other: the newline is
added before the next append. A last line that does not parse (a write cut by a kill) is read as
nothing (counted) and moved aside to ``judgments.jsonl.partial`` when the file is next opened for
writing, which one warning line says. The same judge grading the same chunk again: the latest line
counts (counted as re-judged). The file can be written by hand or by another tool; every other
problem is one error naming the file and line.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError, field_validator, model_validator,
)

from rag.errors import DataError
from rag.io_utils import parse_json

JUDGMENTS_FILE = "judgments.jsonl"
GRADES = {0: "irrelevant", 1: "related", 2: "answers it partly", 3: "answers it"}
GRADE_DEFINITIONS = {
    0: "The passage has nothing to do with the question.",
    1: "The passage is on the question's topic but does not answer it.",
    2: "The passage answers part of the question, or answers it unclearly or among other things.",
    3: "The passage is dedicated to the question and holds its exact answer.",
}
CANT_TELL = "The passage or the question is unclear to me (counted, never read as 0)."
log = logging.getLogger(__name__)


def judge_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a judge's name, or None: empty, a control character (a newline splits a
    printed line) or a comma (``--judges a,b`` could not name it)."""
    if not name:
        return "a judge's name cannot be empty"
    if "," in name:
        return f"judge {name!r}: a name cannot hold a comma (--judges takes comma-separated names)"
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name):
        return f"judge {name!r}: a name cannot hold a control character or a line break"
    return None


class Judgment(BaseModel):
    """One line of the grade file."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    question_set: StrictStr = Field(min_length=1)
    question_id: StrictStr = Field(min_length=1)
    chunk_id: StrictStr | None = None
    url: StrictStr | None = None
    grade: StrictInt | None = Field(ge=0, le=3)  # required: null (can't tell) is said, never implied
    cant_tell: StrictBool = False
    judge: StrictStr = Field(min_length=1)
    time: StrictStr = ""
    question: StrictStr | None = None
    kind: Literal["person", "llm"] = "person"

    @field_validator("judge")
    @classmethod
    def _judge_name(cls, name: str) -> str:
        if problem := judge_name_problem(name):
            raise ValueError(problem)
        return name

    @model_validator(mode="after")
    def _graded_or_cant_tell(self) -> "Judgment":
        if self.cant_tell == (self.grade is not None):
            raise ValueError("expected a grade 0-3, or grade null with cant_tell true")
        if self.chunk_id is None and self.url is None:
            raise ValueError("expected a chunk_id or a url")
        return self

    @property
    def item(self) -> tuple[str, str, str]:
        """What is judged: (question set, question id, chunk id or ``url:<url>`` for a page)."""
        return self.question_set, self.question_id, self.chunk_id if self.chunk_id is not None else f"url:{self.url}"

    def record(self) -> dict:
        return self.model_dump(mode="json", exclude_none=False)


def default_judge() -> str:
    """The OS user's name, else ``judge``."""
    try:
        return getpass.getuser() or "judge"
    except Exception:  # noqa: BLE001 - no user database (a container): any name will do
        return "judge"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class ReadJudgments:
    """What a grade file holds: the latest judgment of each (judge, item), in file order, and counts."""

    judgments: list[Judgment] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)  # the line of each judgment
    lines: int = 0
    rejudged_by: Counter = field(default_factory=Counter)  # judge -> lines a later line of theirs replaced
    cut_last_line: bool = False

    @property
    def rejudged(self) -> int:
        return sum(self.rejudged_by.values())


def parse_line(raw: bytes, path: Path, number: int) -> Judgment:
    """One line of the grade file as a judgment; a :class:`DataError` naming the file, line and key
    otherwise (not UTF-8, not JSON, nested too deeply, not an object, or against the schema)."""
    try:
        obj = parse_json(raw)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError both
        raise DataError(path, f"not a JSON object: {exc}", number) from None
    if not isinstance(obj, dict):
        raise DataError(path, f"expected a JSON object, got {type(obj).__name__}", number)
    try:
        return Judgment.model_validate(obj)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        raise DataError(path, f"{where + ': ' if where else ''}{message}", number) from None


def read_judgments(path: Path) -> ReadJudgments:
    """Every judgment of ``path`` (none if it does not exist); a malformed line is a
    :class:`DataError` naming the file and line, except a last line cut by a kill (module docstring)."""
    result = ReadJudgments()
    if not path.exists():
        return result
    raw_lines = path.read_bytes().splitlines(keepends=True)  # LF, CRLF and CR alike
    latest: dict[tuple[str, tuple[str, str, str]], tuple[int, Judgment]] = {}
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            judgment = parse_line(raw, path, number)
        except DataError:
            if number == len(raw_lines) and not raw.endswith((b"\n", b"\r")) and not _parses(raw):
                result.cut_last_line = True  # no newline after it and no JSON: the write was cut
                continue
            raise
        result.lines += 1
        key = (judgment.judge, judgment.item)
        if key in latest:
            result.rejudged_by[judgment.judge] += 1
            del latest[key]  # the latest counts, in its own place in the order
        latest[key] = (number, judgment)
    result.numbers = [number for number, _ in latest.values()]
    result.judgments = [judgment for _, judgment in latest.values()]
    return result


def _parses(raw: bytes) -> bool:
    """Whether ``raw`` is JSON at all (a line cut mid-write is not)."""
    try:
        parse_json(raw)
    except ValueError:
        return False
    return True


class JudgmentLog:
    """Appends judgments to the grade file, each flushed and fsynced before :meth:`append` returns."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()
        self._repair()

    def _repair(self) -> None:
        """End the file with a newline, so the next line starts clean: after a complete, valid last
        line the newline is added; a last line that does not parse (cut by a kill) is moved aside
        (``.partial``), with one warning line naming the file and how much moved."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if not data or data.endswith((b"\n", b"\r")):
            return
        keep = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        if _parses(data[keep:]):
            with open(self.path, "ab") as handle:
                handle.write(b"\n")
            return
        aside = self.path.with_name(self.path.name + ".partial")
        with open(aside, "ab") as handle:
            handle.write(data[keep:] + b"\n")
        with open(self.path, "r+b") as handle:
            handle.truncate(keep)
        log.warning(f"{self.path}: its last line was cut ({len(data) - keep} bytes, not JSON); moved to {aside}")

    def append(self, judgments: Iterable[Judgment]) -> int:
        lines = "".join(json.dumps(j.record(), ensure_ascii=False) + "\n" for j in judgments).encode("utf-8")
        with self.lock, open(self.path, "ab") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())
        return lines.count(b"\n")
