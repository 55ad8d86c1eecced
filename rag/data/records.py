"""Our JSONL formats: reading them line by line with precise errors, and writing them.

Corpus record (one JSON object per line; ``.gz`` files are read transparently)::

    {"doc_id": "Paris", "url": "https://en.wikipedia.org/wiki/Paris", "title": "Paris",
     "text": "Paris is the capital ...", "topic": "Geography", ...}

``doc_id`` and ``text`` are required non-empty strings; ``url`` defaults to ``doc_id``; ``title``
defaults to ``""``; every other field goes to ``Document.metadata``.

Question record::

    {"id": "known_item-0001", "question": "Who is the ...?",
     "gold_urls": ["https://...A"] | [["https://...A", "https://...A2"], ["https://...B"]],
     "answers": ["..."], "type": "known_item", ...}

``id`` and ``question`` are required; ``gold_urls`` holds groups (OR inside a group,
AND across groups, docs/evaluation.md); a plain string element is a group of one, so a flat list
means "all of these". A graded object ``{"https://...A": 2, "https://...B": 1, "https://...C": 0}``
gives relevance grades (integers, as TREC qrels; grade > 0 is relevant and required, nDCG uses the
grade as gain; grade <= 0 is judged non-relevant). A set whose every question lacks ``gold_urls``
(or has it empty) is *unjudged*: retrieved by every method, never scored until judged
(``rag-bench judge``); a set mixing both is an error naming the first line that differs. A plain
text file (``.txt``) holds one unjudged question a line, its id ``q`` + the first 8 hex digits of the
SHA-256 of its text (so judgments stay with their question when lines move). ``answers`` defaults
to ``[]``, ``type`` to the question set's name; every
other field goes to ``Question.metadata``.

Every problem is reported through a :class:`ProblemLog`: it raises :class:`rag.errors.DataError`
(file, 1-based line, problem) or, with ``skip_invalid``, counts the record as skipped by kind.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, Union

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from rag.errors import DataError
from rag.io_utils import atomic_write_bytes, parse_json
from rag.types import Document, Question

INVALID_JSON = "invalid_json"
NON_UTF8 = "non_utf8"
MISSING_FIELD = "missing_field"
WRONG_TYPE = "wrong_type"
DUPLICATE_ID = "duplicate_id"
EMPTY_TEXT = "empty_text"
NO_GROUND_TRUTH = "no_ground_truth"
UNKNOWN_URL = "unknown_url"
MALFORMED_LINE = "malformed_line"
UNKNOWN_QUERY = "unknown_query"


@dataclass
class ProblemLog:
    """Raises on the first bad record, or (``skip_invalid``) counts skipped records by kind."""

    skip_invalid: bool = False
    max_examples: int = 20
    counts: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def report(self, path: str | Path, line: int | None, kind: str, message: str) -> None:
        error = DataError(path, message, line)
        if not self.skip_invalid:
            raise error
        self.counts[kind] += 1
        if len(self.examples) < self.max_examples:
            self.examples.append(str(error))


def open_binary(path: Path) -> io.BufferedIOBase:
    """Open a file for reading bytes, gunzipping ``*.gz``; a missing file is a :class:`DataError`."""
    if not path.is_file():
        raise DataError(path, "not a regular file (a device, pipe or socket)" if path.exists() else "file not found")
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def iter_text_lines(path: Path, problems: ProblemLog) -> Iterator[tuple[int, str]]:
    """``(line number, decoded line)`` for each non-blank line, a byte-order mark before the first
    removed; undecodable lines are problems."""
    with open_binary(path) as handle:
        try:
            for number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    problems.report(path, number, NON_UTF8, f"not valid UTF-8 (byte {exc.start}): {exc.reason}")
                    continue
                if number == 1:
                    line = line.removeprefix("\ufeff")  # a byte-order mark (Notepad's UTF-8) is no text
                if line.strip():
                    yield number, line
        except (OSError, EOFError) as exc:  # corrupt gzip stream
            raise DataError(path, f"cannot read file: {exc}") from exc


def iter_json_objects(path: Path, problems: ProblemLog) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each JSON-object line of a JSONL file."""
    for number, line in iter_text_lines(path, problems):
        try:
            value = parse_json(line)
        except json.JSONDecodeError as exc:  # nested too deeply included
            problems.report(path, number, INVALID_JSON, f"invalid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}")
            continue
        if not isinstance(value, dict):
            problems.report(path, number, WRONG_TYPE, f"expected a JSON object, got {type(value).__name__}")
            continue
        yield number, value


class JsonRecord(BaseModel):
    """Base of the line schemas: strict types (no coercion), unknown fields kept as metadata."""

    model_config = ConfigDict(extra="allow", strict=True)

    def extras(self) -> dict[str, Any]:
        """Unknown fields; a nested ``"metadata"`` object is merged in (BEIR files have one)."""
        extras = dict(self.__pydantic_extra__ or {})
        if isinstance(extras.get("metadata"), dict):
            nested = extras.pop("metadata")
            extras = {**nested, **extras}
        return extras


def non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


class DocumentRecord(JsonRecord):
    doc_id: StrictStr
    text: StrictStr
    url: StrictStr | None = None
    title: StrictStr = ""

    _check_id = field_validator("doc_id")(non_blank)
    _check_text = field_validator("text")(non_blank)


class QuestionRecord(JsonRecord):
    id: StrictStr
    question: StrictStr
    gold_urls: Union[list[Union[StrictStr, list[StrictStr]]], dict[StrictStr, StrictInt], None] = None

    @field_validator("gold_urls", mode="wrap")
    @classmethod
    def _gold_shape(cls, value: Any, handler: Any) -> Any:
        """One message for every wrong shape (pydantic would name the union member it tried last)."""
        try:
            return handler(value)
        except ValidationError:
            raise PydanticCustomError("wrong_shape", "expected a list of URLs, a list of URL groups (lists), "
                                      "or an object {url: integer grade}") from None
    answers: list[StrictStr] = []
    type: StrictStr | None = None

    _check_id = field_validator("id")(non_blank)
    _check_question = field_validator("question")(non_blank)

    def groups(self) -> list[list[str]]:
        """``gold_urls`` normalized to groups; empty groups and blank URLs are dropped. A graded
        object gives one group per URL of grade > 0."""
        if self.gold_urls is None:
            return []
        if isinstance(self.gold_urls, dict):
            return [[url] for url, grade in self.gold_urls.items() if grade > 0 and url.strip()]
        groups = [[item] if isinstance(item, str) else list(item) for item in self.gold_urls]
        return [kept for group in groups if (kept := [url for url in group if url.strip()])]

    def relevance(self) -> dict[str, int]:
        """The graded judgements of a graded ``gold_urls`` object (``{}`` for lists and groups)."""
        return {url: grade for url, grade in self.gold_urls.items() if url.strip()} if isinstance(self.gold_urls, dict) else {}


RecordT = TypeVar("RecordT", bound=JsonRecord)


def _problem_kind(error: dict[str, Any], empty_kind: str) -> str:
    if error["type"] == "missing":
        return MISSING_FIELD
    if error["type"] == "value_error":
        return empty_kind
    return WRONG_TYPE


def validate_record(
    model: type[RecordT], obj: dict[str, Any], path: Path, line: int, problems: ProblemLog,
    empty_kinds: dict[str, str],
) -> RecordT | None:
    """Validate one JSON object against ``model``; report the first problem and return None if bad."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(str(part) for part in error["loc"])
        kind = _problem_kind(error, empty_kinds.get(str(error["loc"][0]), MISSING_FIELD))
        detail = "missing required field" if kind == MISSING_FIELD and error["type"] == "missing" else error["msg"]
        problems.report(path, line, kind, f"field {name!r}: {detail}")
        return None


def iter_records(
    model: type[RecordT], path: Path, problems: ProblemLog, empty_kinds: dict[str, str], id_field: str,
) -> Iterator[tuple[int, RecordT]]:
    """Valid records of a JSONL file whose ``id_field`` is unique (a repeat is a ``duplicate_id`` problem)."""
    seen: set[str] = set()
    field_name = model.model_fields[id_field].alias or id_field
    for line, obj in iter_json_objects(path, problems):
        record = validate_record(model, obj, path, line, problems, empty_kinds)
        if record is None:
            continue
        record_id = getattr(record, id_field)
        if record_id in seen:
            problems.report(path, line, DUPLICATE_ID, f"duplicate {field_name} {record_id!r}")
            continue
        seen.add(record_id)
        yield line, record


def read_corpus_jsonl(path: Path, problems: ProblemLog) -> list[Document]:
    """Documents of a corpus JSONL file; duplicate ``doc_id`` or ``url`` values are problems."""
    documents: list[Document] = []
    seen_urls: set[str] = set()
    for line, record in iter_records(DocumentRecord, path, problems, {"text": EMPTY_TEXT}, "doc_id"):
        url = record.url if record.url is not None else record.doc_id
        if url in seen_urls:
            problems.report(path, line, DUPLICATE_ID, f"duplicate url {url!r}")
            continue
        seen_urls.add(url)
        documents.append(Document(record.doc_id, url, record.title, record.text, record.extras()))
    return documents


def read_questions_jsonl(path: Path, set_name: str, known_urls: set[str], problems: ProblemLog,
                         aliases: Mapping[str, str] | None = None) -> list[Question]:
    """Questions of a question JSONL file, checked against the corpus URLs ``known_urls``; a gold URL
    in ``aliases`` (a file left out as a copy -> the file kept) is read as the file kept."""
    if path.suffix == ".txt":
        return read_questions_text(path, set_name, problems)
    questions: list[Question] = []
    judged: tuple[int, bool] | None = None  # the first record's line, and whether it has gold
    for line, record in iter_records(QuestionRecord, path, problems, {"question": EMPTY_TEXT}, "id"):
        groups, relevance = record.groups(), record.relevance()
        has_gold = bool(record.gold_urls)
        if judged is None:
            judged = (line, has_gold)
        elif judged[1] != has_gold:
            problems.report(path, line, NO_GROUND_TRUTH, f"question {record.id!r} has "
                            f"{'gold URLs' if has_gold else 'no ground-truth URL'} while line {judged[0]} has "
                            f"{'none' if has_gold else 'some'}: a question set is all judged (gold for every "
                            "question) or all unjudged (judged later: rag-bench judge)")
            continue
        if not has_gold:
            questions.append(Question(qid=record.id, text=record.question, gold_urls=[], answers=list(record.answers),
                                      qtype=record.type or set_name, question_set=set_name, metadata=record.extras()))
            continue
        if aliases:
            groups = [list(dict.fromkeys(aliases.get(url, url) for url in group)) for group in groups]
            relevance = aliased_grades(relevance, aliases)
        question = question_from_parts(
            path, line, problems, known_urls,
            qid=record.id, text=record.question, groups=groups, answers=record.answers,
            qtype=record.type or set_name, question_set=set_name, metadata=record.extras(),
            relevance=relevance,
        )
        if question is not None:
            questions.append(question)
    return questions


def text_question_id(text: str) -> str:
    """The id of a question read from a plain text file: ``q`` + 8 hex digits of its text's SHA-256."""
    return "q" + hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:8]


def read_questions_text(path: Path, set_name: str, problems: ProblemLog) -> list[Question]:
    """One unjudged question per non-blank line of a plain text file (module docstring); the same
    question twice is a ``duplicate_id`` problem naming both lines."""
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for line, text in iter_text_lines(path, problems):
        text = text.strip()
        qid = text_question_id(text)
        if qid in seen:
            problems.report(path, line, DUPLICATE_ID, f"the question of line {seen[qid]} again: {text[:80]!r}")
            continue
        seen[qid] = line
        questions.append(Question(qid=qid, text=text, gold_urls=[], answers=[], qtype=set_name,
                                  question_set=set_name, metadata={"line": line}))
    return questions


def is_unjudged(questions: Iterable[Question]) -> bool:
    """No question of the set has gold (URLs or graded judgments): an unjudged set."""
    return not any(q.gold_urls or q.relevance or q.chunk_relevance for q in questions)


def aliased_grades(relevance: Mapping[str, int], aliases: Mapping[str, str]) -> dict[str, int]:
    """Graded relevance with each aliased URL read as its target; where two name one document, the higher grade."""
    grades: dict[str, int] = {}
    for url, grade in relevance.items():
        target = aliases.get(url, url)
        grades[target] = max(grade, grades.get(target, grade))
    return grades


def question_from_parts(path: Path, line: int, problems: ProblemLog, known_urls: set[str], **fields: Any) -> Question | None:
    """Build a :class:`Question` after the ground-truth checks every format shares."""
    qid, groups = fields["qid"], fields["groups"]
    if not groups and not fields.get("relevance"):
        problems.report(path, line, NO_GROUND_TRUTH, f"question {qid!r} has no ground-truth URL")
        return None
    relevance = fields.get("relevance", {})
    unknown = [url for url in [*(url for group in groups for url in group), *relevance] if url not in known_urls]
    if unknown:
        from rag.data.url_hints import unknown_url_message
        problems.report(path, line, UNKNOWN_URL, unknown_url_message(qid, unknown[0], known_urls))
        return None
    return Question(
        qid=qid, text=fields["text"], gold_urls=groups, answers=list(fields["answers"]), qtype=fields["qtype"],
        question_set=fields["question_set"], metadata=fields["metadata"], relevance=dict(relevance),
    )


def document_record(document: Document) -> dict[str, Any]:
    """The corpus JSONL object of a document (inverse of :func:`read_corpus_jsonl`)."""
    return {"doc_id": document.doc_id, "url": document.url, "title": document.title, "text": document.text,
            **document.metadata}


def question_record(question: Question) -> dict[str, Any]:
    """The question JSONL object of a question (inverse of :func:`read_questions_jsonl`)."""
    gold = question.relevance if question.relevance else question.gold_urls
    return {"id": question.qid, "question": question.text, "gold_urls": gold,
            "answers": question.answers, "type": question.qtype, **question.metadata}


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> Path:
    """Write one JSON object per line, atomically; ``*.gz`` is gzipped with a fixed mtime (stable bytes)."""
    path = Path(path)
    payload = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")
    if path.suffix == ".gz":
        payload = gzip.compress(payload, compresslevel=9, mtime=0)
    return atomic_write_bytes(path, payload)
