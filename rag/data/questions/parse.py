"""Reading a question and its answer out of an LLM's reply, whatever shape the model chose.

Accepted shapes, tried in this order:

1. a JSON object (alone, inside a ```` ``` ```` fence, or embedded in prose) with keys ``question``
   (or ``q``) and ``answer`` (or ``a``), case-insensitive;
2. labelled lines: ``Question: ...`` / ``Q: ...`` and ``Answer: ...`` / ``A: ...`` (labels
   case-insensitive, optionally bold ``**Question:**`` or numbered ``1. Question:``); the answer is
   the rest of its line, or the next non-empty line when the label stands alone; an answer after the
   question is read first, else the last answer line before it (an answer-first reply
   ``Answer: ... / Question: ...``);
3. a reply whose first line is a question (ends with ``?``) and whose next non-empty line is the
   answer.

Anything else is a :class:`ParseFailure` with a reason, never dropped silently:

``refusal``       the reply declines ("I'm sorry", "I cannot", "As an AI", "I don't know")
``no_question``   no question could be found
``no_answer``     a question, but no answer after it
``empty``         the reply is blank

Both fields are cleaned: surrounding quotes, Markdown emphasis, code backticks (a code span's text
kept as it is) and white-space runs are removed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from rag.data.questions.common import plain

REFUSAL = "refusal"
NO_QUESTION = "no_question"
NO_ANSWER = "no_answer"
EMPTY = "empty"
PARSE_FAILURES = (EMPTY, REFUSAL, NO_QUESTION, NO_ANSWER)

_REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry,|i can(?:'|no)t|i cannot|i am unable|i'm unable|as an ai|i don'?t know|"
    r"i do not know|unfortunately)", re.IGNORECASE)
_LABEL = r"^\s*(?:\d+[.)]\s*)?[*_#\s]*{names}[*_\s]*[:：][*_\s]*(?P<rest>.*)$"
_QUESTION_LABEL = re.compile(_LABEL.format(names=r"(?:question|q)"), re.IGNORECASE)
_ANSWER_LABEL = re.compile(_LABEL.format(names=r"(?:answer|a)"), re.IGNORECASE)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


@dataclass(frozen=True)
class ParsedQuestion:
    question: str
    answer: str
    shape: str  # "json", "labels" or "lines"


@dataclass(frozen=True)
class ParseFailure:
    reason: str


def clean(text: str) -> str:
    """One line of text without Markdown emphasis and code backticks (:func:`plain`: a code span's text
    kept as it is, so `__init__` stays a name), surrounding quotes or repeated white space."""
    text = plain(text)
    while len(text) >= 2 and text[0] in "\"'“‘`" and text[-1] in "\"'”’`":
        text = text[1:-1].strip()
    return text


def _from_json(reply: str) -> ParsedQuestion | ParseFailure | None:
    candidates = [m.group(1) for m in _FENCE.finditer(reply)] + [reply] + [m.group(0) for m in _OBJECT.finditer(reply)]
    for candidate in candidates:
        try:
            value = json.loads(candidate.strip())
        except json.JSONDecodeError:
            continue
        if not isinstance(value, dict):
            continue
        fields = {str(key).strip().lower(): item for key, item in value.items()}
        question = next((fields[k] for k in ("question", "q") if isinstance(fields.get(k), str)), None)
        answer = next((fields[k] for k in ("answer", "a") if isinstance(fields.get(k), (str, int, float))), None)
        if question is not None and clean(question):
            if answer is not None and clean(str(answer)):
                return ParsedQuestion(clean(question), clean(str(answer)), "json")
            return ParseFailure(NO_ANSWER)
    return None


def _from_lines(lines: list[str]) -> ParsedQuestion | ParseFailure | None:
    """Labelled lines; None when no line carries a question label."""
    for index, line in enumerate(lines):
        match = _QUESTION_LABEL.match(line)
        if match is None:
            continue
        question = clean(match.group("rest"))
        rest = lines[index + 1:]
        if not question and rest and not _ANSWER_LABEL.match(rest[0]):
            question, rest = clean(rest[0]), rest[1:]
        if not question:
            return ParseFailure(NO_QUESTION)
        for position, following in enumerate(rest):
            answer_match = _ANSWER_LABEL.match(following)
            if answer_match is None:
                continue
            answer = clean(answer_match.group("rest"))
            if not answer:
                answer = next((clean(line) for line in rest[position + 1:] if clean(line)), "")
            return ParsedQuestion(question, answer, "labels") if answer else ParseFailure(NO_ANSWER)
        before = [clean(m.group("rest")) for line in lines[:index] if (m := _ANSWER_LABEL.match(line))]
        return ParsedQuestion(question, before[-1], "labels") if before and before[-1] else ParseFailure(NO_ANSWER)
    return None


def parse_reply(reply: str | None) -> ParsedQuestion | ParseFailure:
    """The question and answer in ``reply`` (see the module docstring for the shapes and failures)."""
    if reply is None or not reply.strip():
        return ParseFailure(EMPTY)
    parsed = _from_json(reply)
    if parsed is not None:
        return parsed
    lines = [line for line in reply.splitlines() if line.strip()]
    labelled = _from_lines(lines)
    if labelled is not None:
        return labelled
    if _REFUSAL.match(reply):
        return ParseFailure(REFUSAL)
    first = clean(lines[0])
    if first.endswith("?"):
        answer = clean(lines[1]) if len(lines) > 1 else ""
        return ParsedQuestion(first, answer, "lines") if answer else ParseFailure(NO_ANSWER)
    return ParseFailure(NO_QUESTION)
