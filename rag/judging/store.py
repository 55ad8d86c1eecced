"""The grade file: ``RUN_DIR/judgments.jsonl``, one JSON object a line::

    {"question_set": "mine", "question_id": "q3f2a9c1d", "question": "How do I ...?",
     "chunk_id": "doc.html#4", "url": "doc.html", "grade": 2, "judge": "ana",
     "time": "2026-11-27T12:00:00+00:00"}

``grade`` is 0..3 (TREC Deep Learning / UMBRELA: 0 irrelevant, 1 related, 2 answers it partly,
3 answers it), or null with ``"cant_tell": true`` (counted, never read as 0). ``chunk_id`` may be
null for a page-level grade (``url`` only: an imported Quepid or qrels row of a page). Optional:
``kind`` (``person`` or ``llm``), ``source``.

Every judgment is appended and flushed to disk (``fsync``) before the page hears it was stored, so
a server or browser killed mid-way loses at most the judgment in flight. A write cut by a kill
leaves a last line without its newline: it is moved aside to ``judgments.jsonl.partial`` when the
file is next opened for writing, and read as nothing (counted) until then. The same judge grading
the same chunk again: the latest line counts (counted as re-judged). The file can be written by
hand or by another tool; every other problem is one error naming the file and line.
"""

from __future__ import annotations

import getpass
import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError, model_validator

from rag.errors import DataError

JUDGMENTS_FILE = "judgments.jsonl"
GRADES = {0: "irrelevant", 1: "related", 2: "answers it partly", 3: "answers it"}
GRADE_DEFINITIONS = {
    0: "The passage has nothing to do with the question.",
    1: "The passage is on the question's topic but does not answer it.",
    2: "The passage answers part of the question, or answers it unclearly or among other things.",
    3: "The passage is dedicated to the question and holds its exact answer.",
}
CANT_TELL = "The passage or the question is unclear to me (counted, never read as 0)."


class Judgment(BaseModel):
    """One line of the grade file."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    question_set: StrictStr = Field(min_length=1)
    question_id: StrictStr = Field(min_length=1)
    chunk_id: StrictStr | None = None
    url: StrictStr | None = None
    grade: StrictInt | None = Field(default=None, ge=0, le=3)
    cant_tell: StrictBool = False
    judge: StrictStr = Field(min_length=1)
    time: StrictStr = ""
    question: StrictStr | None = None
    kind: Literal["person", "llm"] = "person"

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
    rejudged: int = 0
    cut_last_line: bool = False


def read_judgments(path: Path) -> ReadJudgments:
    """Every judgment of ``path`` (none if it does not exist); a malformed line is a
    :class:`DataError` naming the file and line, except a last line cut by a kill (module docstring)."""
    result = ReadJudgments()
    if not path.exists():
        return result
    data = path.read_bytes()
    raw_lines = data.split(b"\n")
    latest: dict[tuple[str, tuple[str, str, str]], tuple[int, Judgment]] = {}
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        last = number == len(raw_lines)  # no newline after it: the write was cut
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if last:
                result.cut_last_line = True
                continue
            raise DataError(path, f"not a JSON object: {exc}", number) from None
        if not isinstance(obj, dict):
            raise DataError(path, f"expected a JSON object, got {type(obj).__name__}", number)
        try:
            judgment = Judgment.model_validate(obj)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise DataError(path, f"{where + ': ' if where else ''}{error['msg']}", number) from None
        result.lines += 1
        key = (judgment.judge, judgment.item)
        if key in latest:
            result.rejudged += 1
            del latest[key]  # the latest counts, in its own place in the order
        latest[key] = (number, judgment)
    result.numbers = [number for number, _ in latest.values()]
    result.judgments = [judgment for _, judgment in latest.values()]
    return result


class JudgmentLog:
    """Appends judgments to the grade file, each flushed and fsynced before :meth:`append` returns."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()
        self._repair()

    def _repair(self) -> None:
        """Move a last line cut by a kill aside (``.partial``), so the next line starts clean."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if not data or data.endswith(b"\n"):
            return
        keep = data.rfind(b"\n") + 1
        with open(self.path.with_name(self.path.name + ".partial"), "ab") as aside:
            aside.write(data[keep:] + b"\n")
        with open(self.path, "r+b") as handle:
            handle.truncate(keep)

    def append(self, judgments: Iterable[Judgment]) -> int:
        lines = "".join(json.dumps(j.record(), ensure_ascii=False) + "\n" for j in judgments).encode("utf-8")
        with self.lock, open(self.path, "ab") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())
        return lines.count(b"\n")
