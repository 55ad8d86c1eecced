"""The headline: what a reader must know before any number of a run — the first lines of the
terminal summary and the top of report.html, one list of sentences for both.

Two kinds of line, each stated with its cause:

* **Failed answers** (:class:`AnswerFailures`): any answer the generator failed to give. The rule
  (docs/evaluation.md, "Answers with failures"): a question set in which any requested answer failed
  has *all* its answer results withheld — means, tests, verdicts and lifts of em, f1, match and the
  judge, for every method — since methods compared on the questions each happened to answer are
  compared on different questions. The pooled lift covers only the sets without a failure. Retrieval
  results stand. When no answered set is left, the whole answer experiment failed
  (:attr:`AnswerFailures.experiment_failed`; ``rag-bench run`` exits with code 3).
* **Questions that cannot separate the methods** (:func:`cannot_judge`), per question set, when
  any of these holds (thresholds: the constants below, docs/evaluation.md, "Recommendation"):

  - *ceiling*: every method with a defined primary metric scores at least :data:`CEILING`, or all
    score the same: no method can show itself better;
  - *too few questions*: fewer than :data:`rag.results.recommendation.MIN_QUESTIONS` (10): below it nothing
    is decided (docs/evaluation.md, "Small sets"); from it on a set decides what its data support;
  - *leak*: more than :data:`LEAK_LIMIT` of the questions name their gold document (title, file or
    page name): the set measures whether a method matches a name;
  - *lexical bias*: the questions' mean share of content words copied from their chunk exceeds
    :data:`LEXICAL_BIAS_LIMIT`: the set favours exact term matching (BM25);
  - *unjudged*: the questions have no gold yet (a plain list of questions): every method retrieves
    them, nothing scores them until their pool is judged (``rag-bench judge``, :mod:`rag.judging`).

The set's own recommendation line is still printed, marked; the headline says it does not stand,
and the overall recommendation leaves the set out (:func:`rag.results.recommendation.recommend`,
``unjudged``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from rag.results import schema
from rag.results.recommendation import MIN_QUESTIONS

#: Every method's mean primary metric at or above this: the set is at its ceiling.
CEILING = 0.95
#: More than this share of questions naming their gold document: the set measures name matching.
LEAK_LIMIT = 0.5
#: A mean lexical bias above this: the questions copy their chunk's words.
LEXICAL_BIAS_LIMIT = 0.8
#: Characters of the first error kept in the headline.
CAUSE_CHARS = 200


def distinct_answers(per_query: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``per_query`` with each answer once: a derived ``<set>@sample`` set
    (:data:`schema.SAMPLE_SUFFIX`) shows again the answers of its base set, so rows are distinct by
    method, base set and question (the first kept)."""
    if not per_query[schema.QUESTION_SET].astype(str).str.endswith(schema.SAMPLE_SUFFIX).any():
        return per_query
    base = per_query[schema.QUESTION_SET].map(schema.base_set)
    return per_query[~pd.DataFrame({"m": per_query[schema.METHOD], "b": base, "q": per_query[schema.QID]}).duplicated()]


@dataclass(frozen=True)
class AnswerFailures:
    """Failed answers of a run (or of the runs of a comparison): counts, where, and the first cause."""

    requested: int  # answers sent to the generator (answered or failed)
    failed: int
    by_method: dict[str, int] = field(default_factory=dict)  # failed answers per method (methods with any)
    by_set: dict[str, int] = field(default_factory=dict)  # failed answers per question set (sets with any)
    answered_sets: list[str] = field(default_factory=list)  # sets with any requested answer
    cause: str = ""  # the first failed answer's error (already redacted in per_query)

    @classmethod
    def of(cls, per_query: pd.DataFrame) -> "AnswerFailures":
        """From a per-query table (its ``generation_status`` and ``error`` columns); each answer
        counted once (:func:`distinct_answers`), ``by_set`` counting it in every set that shows it."""
        status = per_query[schema.GENERATION_STATUS]
        requested = per_query[status != schema.NOT_REQUESTED]
        failed_rows = per_query[status == schema.FAILED]
        once = distinct_answers(per_query)
        failed = once[once[schema.GENERATION_STATUS] == schema.FAILED]
        errors = [str(e) for e in failed.get(schema.ERROR, pd.Series(dtype=str)) if isinstance(e, str) and e]
        cause = errors[0] if errors else ""
        return cls(
            requested=int((once[schema.GENERATION_STATUS] != schema.NOT_REQUESTED).sum()), failed=len(failed),
            by_method={str(k): int(v) for k, v in failed.groupby(schema.METHOD, sort=False).size().items()},
            by_set={str(k): int(v) for k, v in failed_rows.groupby(schema.QUESTION_SET, sort=False).size().items()},
            answered_sets=[str(s) for s in dict.fromkeys(requested[schema.QUESTION_SET])],
            cause=cause if len(cause) <= CAUSE_CHARS else cause[: CAUSE_CHARS - 1] + "…",
        )

    @property
    def withheld_sets(self) -> list[str]:
        """The sets whose answer results are withheld: every set with a failed answer."""
        return list(self.by_set)

    @property
    def experiment_failed(self) -> bool:
        """True when answers were requested and every answered set is withheld: no answer result stands."""
        return bool(self.answered_sets) and all(s in self.by_set for s in self.answered_sets)

    def as_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "failures": self.failed, "failures_by_method": self.by_method,
                "failures_by_set": self.by_set, "withheld_sets": self.withheld_sets,
                "experiment_failed": self.experiment_failed, "first_error": self.cause}

    def line(self) -> str | None:
        """``answers: 168 of 168 failed - answer results withheld; cause: ...`` (None without failures)."""
        if not self.failed:
            return None
        scope = ("answer results withheld" if self.experiment_failed
                 else f"answer results withheld for {', '.join(self.withheld_sets)} (every set with a failure; those of "
                      f"{', '.join(s for s in self.answered_sets if s not in self.by_set)} stand)")
        per_method = ", ".join(f"{m} {n}" for m, n in self.by_method.items())
        return (f"answers: {self.failed} of {self.requested} failed - {scope}; per method: {per_method}; "
                f"cause: {self.cause or 'not recorded'}")


@dataclass(frozen=True)
class StageFailures:
    """Failed stages of a run: questions on which a method's query transform or reranker gave nothing
    usable (``stage_error``, :class:`rag.types.Ranking`'s ``failed``). The rule (docs/evaluation.md,
    "Failed stages"): a method with a failed stage on any question of a set has *all* its results on
    that set withheld (its rows leave the comparison: no mean, test or verdict), as failed answers
    are; never its input's ranking under its name. Other methods and sets stand."""

    by_method_set: dict[tuple[str, str], int] = field(default_factory=dict)  # failed questions per (method, set)
    questions: dict[tuple[str, str], int] = field(default_factory=dict)  # questions per (method, set) withheld
    causes: dict[str, str] = field(default_factory=dict)  # each failed method's first reason (redacted in per_query)

    @classmethod
    def of(cls, per_query: pd.DataFrame) -> "StageFailures":
        """From a per-query table's ``stage_error`` column (none: no failure; NaN or "" : the stage gave a result)."""
        if schema.STAGE_ERROR not in per_query or per_query.empty:
            return cls()
        errors = per_query[schema.STAGE_ERROR]
        failed = per_query[errors.notna() & (errors.astype(str) != "")]
        if failed.empty:
            return cls()
        counts = failed.groupby([schema.METHOD, schema.QUESTION_SET], sort=False).size()
        sizes = per_query.groupby([schema.METHOD, schema.QUESTION_SET], sort=False).size()
        causes = {str(m): str(errors.iloc[0]) for m, errors in failed.groupby(schema.METHOD, sort=False)[schema.STAGE_ERROR]}
        return cls({(str(m), str(q)): int(n) for (m, q), n in counts.items()},
                   {(str(m), str(q)): int(sizes[(m, q)]) for (m, q) in counts.index},
                   {m: c if len(c) <= CAUSE_CHARS else c[: CAUSE_CHARS - 1] + "…" for m, c in causes.items()})

    def withheld(self, per_query: pd.DataFrame) -> pd.Series:
        """A mask of ``per_query``'s rows that are withheld: every row of a failed (method, set)."""
        pairs = list(zip(per_query[schema.METHOD].astype(str), per_query[schema.QUESTION_SET].astype(str)))
        return pd.Series([pair in self.by_method_set for pair in pairs], index=per_query.index, dtype=bool)

    def as_dict(self) -> dict[str, Any]:
        return {"failed_questions": sum(self.by_method_set.values()),
                "withheld": [{"method": m, "question_set": q, "failed": n, "questions": self.questions[(m, q)]}
                             for (m, q), n in self.by_method_set.items()],
                "first_error": self.causes}

    def line(self) -> str | None:
        """``stages: bm25_mq failed on 30 of 30 questions of smoke (cause) - ... withheld ...``."""
        if not self.by_method_set:
            return None
        parts, named = [], set()
        for (m, q), n in self.by_method_set.items():
            cause = f" ({self.causes.get(m) or 'not recorded'})" if m not in named else ""
            named.add(m)
            parts.append(f"{m} failed on {n} of {self.questions[(m, q)]} questions of {q}{cause}")
        return (f"stages: {'; '.join(parts)} - those methods' results on those sets withheld, never their input's "
                "ranking under their name")


@dataclass(frozen=True)
class QuestionFigures:
    """What is known of one question set's quality (None where not measured)."""

    questions: int  # questions in the run
    asked: int | None = None  # questions the generator was asked to make (made sets)
    leak: float | None = None  # share naming their gold document
    lexical_bias: float | None = None  # mean share of content words copied from the chunk
    gold_overlap: float | None = None  # mean share of content words found in the gold pages (any set with gold)

    @classmethod
    def of(cls, questions: int, provenance: Mapping[str, Any] | None, leak: float | None = None,
           gold_overlap: float | None = None) -> "QuestionFigures":
        """From a question set's provenance sidecar (:mod:`rag.data.questions.provenance`), if any:
        ``requested``, ``leak`` (a share, or a mapping with ``share``) and ``lexical_bias.mean``; a
        ``leak`` measured on the set itself (given sets have no sidecar) wins over the sidecar's."""
        made = provenance or {}
        if leak is None:
            leak = made.get("leak")
        if isinstance(leak, Mapping):
            leak = leak.get("share")
        bias = made.get("lexical_bias") or {}
        return cls(questions, made.get("requested"), _share(leak), _share(bias.get("mean") if bias.get("questions") else None),
                   _share(gold_overlap))

    def text(self, ceiling: bool | None = None) -> str:
        """``50 questions (50 kept of 60 asked), leak 12%, lexical bias 0.43, ceiling no``."""
        parts = [f"{self.questions} questions" + (f" ({self.questions} kept of {self.asked} asked)"
                                                  if self.asked is not None else "")]
        parts.append(f"leak {self.leak:.0%}" if self.leak is not None else "leak n/a")
        if self.lexical_bias is not None:
            parts.append(f"lexical bias {self.lexical_bias:.2f}")
        elif self.gold_overlap is not None:  # a given set: shown, not a reason (pages hold more words than chunks)
            parts.append(f"overlap with gold pages {self.gold_overlap:.2f}")
        else:
            parts.append("lexical bias n/a")
        if ceiling is not None:
            parts.append(f"ceiling {'yes' if ceiling else 'no'}")
        return ", ".join(parts)


def _share(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def at_ceiling(table: pd.DataFrame, question_set: str, primary: str) -> bool:
    """Every method of the set with a defined ``primary`` at or above :data:`CEILING`, or all equal
    (two methods or more; otherwise there is nothing to separate)."""
    if primary not in table:
        return False
    means = table.loc[(table["question_set"] == question_set) & table[primary].notna(), primary]
    return len(means) >= 2 and (bool((means >= CEILING).all()) or means.nunique() == 1)


UNJUDGED = "no gold yet: retrieved by every method, scored by none until judged (rag-bench judge RUN_DIR)"


def cannot_judge(table: pd.DataFrame, primary: str | None, figures: Mapping[str, QuestionFigures],
                 unjudged: Sequence[str] = ()) -> dict[str, list[str]]:
    """Per question set, the reasons its questions cannot separate the methods (module docstring);
    sets without a reason are left out. An ``unjudged`` set has that one reason."""
    found: dict[str, list[str]] = {}
    for question_set in dict.fromkeys(table["question_set"]):
        if question_set in unjudged:
            found[question_set] = [UNJUDGED]
            continue
        figure = figures.get(question_set)
        n = figure.questions if figure else int(table.loc[table["question_set"] == question_set, "questions"].max())
        reasons = []
        if primary is not None and at_ceiling(table, question_set, primary):
            reasons.append(f"every method at the ceiling of {primary} (all >= {CEILING} or all equal)")
        if n < MIN_QUESTIONS:
            reasons.append(f"too few questions ({n} < {MIN_QUESTIONS})")
        if figure and figure.leak is not None and figure.leak > LEAK_LIMIT:
            reasons.append(f"{figure.leak:.0%} of the questions name their gold document (leak > {LEAK_LIMIT:.0%})")
        if figure and figure.lexical_bias is not None and figure.lexical_bias > LEXICAL_BIAS_LIMIT:
            reasons.append(f"lexical bias {figure.lexical_bias:.2f} > {LEXICAL_BIAS_LIMIT} (questions copy their "
                           "chunk's words, favouring BM25)")
        if reasons:
            found[question_set] = reasons
    return found


def headline(failures: AnswerFailures | None, judged: Mapping[str, Sequence[str]],
             stages: StageFailures | None = None) -> list[str]:
    """The headline sentences, failures first (stages, then answers); empty when there is nothing to warn about."""
    lines = [line] if stages is not None and (line := stages.line()) else []
    if failures is not None and (line := failures.line()):
        lines.append(line)
    for question_set, reasons in judged.items():
        lines.append(f"{question_set}: its questions cannot separate the methods - {'; '.join(reasons)}; "
                     "the recommendation below does not stand on this set")
    return [f"WARNING {line}" for line in lines]


def figure_lines(table: pd.DataFrame, primary: str | None, figures: Mapping[str, QuestionFigures]) -> list[str]:
    """One line per question set with its figures, printed next to the recommendation."""
    lines = []
    for question_set in dict.fromkeys(table["question_set"]):
        figure = figures.get(question_set) or QuestionFigures(
            int(table.loc[table["question_set"] == question_set, "questions"].max()))
        ceiling = at_ceiling(table, question_set, primary) if primary is not None else None
        lines.append(f"{question_set}: {figure.text(ceiling)}")
    return lines
