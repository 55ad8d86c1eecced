"""``run_file``: an external system's rankings, brought in as a TREC run file, as one more method.

Config shape (``rag-bench run ... --run prod=FILE`` adds exactly this entry)::

    {name: prod, type: run_file, params: {path: runs/prod.trec}}

The file is a TREC run (``qid Q0 docid rank score tag``, white space between fields), answering the
questions of the run's ``questions.tsv`` (:mod:`rag.topics`): ``qid`` is the question's TREC id
(``<set>/<qid>``), ``docid`` either a chunk id of this run (its ``runs/*.trec`` hold them) or a page
URL as the tool names pages (a folder's file path relative to the folder; the data's ``url``
otherwise), written with :func:`evaluation.encode_trec_id` when it holds white space. Which of the
two is detected from the ids (every one a chunk id: chunk level; every one a page: page level) and
said in one line. A page stands for **the page's first passage** (its chunk at the lowest position:
its opening, title and lead): that passage is pooled and judged, and it carries the page's score, so
URL-level metrics are those of the page list as written. Order follows the scores, as in trec_eval
(the rank column is checked, not read): float32 score descending, then chunk id descending (page id
descending at page level, trec_eval's rule on the file as written). A question the file does not
answer gets an empty list (every metric 0, as ``trec_eval -c``); questions with the same text get the
ranking of the first of them that the file answers.

A bad file stops the run with one line naming the file and line (exit 2): a line without six fields,
a rank that is not an integer, a score that is not a finite number, an id that is not an encoded TREC
id, a rank or a document given twice for one question, question ids that are no question of this run
(counted and named; none known at all: a run for another question file), document ids that are no
chunk or page of this corpus (counted, the first few named), chunk ids and pages mixed, or no line.

Cost: the file was made elsewhere, so the method has **no measured cost** (``measures_cost``: NaN
ms per question, NaN noise): its cost separates it from no other method in the recommendation's
cheaper-choice rule, and a fusion over it costs NaN too. The file's sha256 is part of its rankings'
cache key, so an edited file is read again.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from evaluation.runs import ranked_ids
from evaluation.trec_io import decode_trec_id, encode_trec_id
from rag.errors import ConfigError, DataError
from rag.io_utils import sha256_file
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, RetrieverParams
from rag.retrievers.ranking import ranking_from_pairs
from rag.services import StageServices
from rag.types import Chunk, Ranking

log = logging.getLogger(__name__)
FIELDS = "qid Q0 docid rank score tag"
SHOWN = 5  # ids named in an error line before "..."


class RunFileParams(RetrieverParams):
    """``path``: the TREC run file (relative to the config file, or the working directory for ``--run``)."""

    path: Path = Field(description="a TREC run file answering the run's questions.tsv")

    def source_fingerprint(self) -> dict[str, str]:
        if not self.path.is_file():
            raise DataError(self.path, "run file not found; expected a TREC run file (qid Q0 docid rank score tag)")
        return {"sha256": sha256_file(self.path)}

    def measures_cost(self) -> bool:
        return False


def run_file_entries(given: Sequence[str]) -> list[dict]:
    """The retriever entry of each ``--run NAME=FILE`` (a ``run_file`` method, its path absolute); a
    :class:`ConfigError` keyed ``--run`` for a value that is not NAME=FILE or names no file."""
    entries = []
    for item in given:
        name, sep, file = (part.strip() for part in item.partition("="))
        if not sep or not name or not file:
            raise ConfigError("--run", f"{item!r}: expected NAME=FILE (a method name and a TREC run file)")
        path = Path(file).expanduser().resolve()
        if not path.is_file():
            raise ConfigError("--run", f"{name}: {file}: file not found; expected a TREC run file ({FIELDS})")
        entries.append({"name": name, "type": "run_file", "params": {"path": path}})
    return entries


def first_passages(chunks: Sequence[Chunk]) -> dict[str, Chunk]:
    """Each page's first passage (its chunk at the lowest position, then the first given): the
    passage that stands for a page named by a run file or an endpoint (module docstring)."""
    first: dict[str, Chunk] = {}
    for chunk in chunks:
        if chunk.url not in first or chunk.position < first[chunk.url].position:
            first[chunk.url] = chunk
    return first


def named(items: Sequence[str], limit: int = SHOWN) -> str:
    """The first ``limit`` of ``items``, quoted, and "..." when there are more."""
    return ", ".join(repr(item) for item in items[:limit]) + (", ..." if len(items) > limit else "")


@dataclass
class ExternalRun:
    """A run file as read and checked (:func:`read_run_file`): each question id's (doc id, score)
    pairs, the level of its doc ids (``chunk`` or ``url``)."""

    level: str
    lists: dict[str, list[tuple[str, float]]] = field(default_factory=dict)


def read_run_file(path: Path, questions: Mapping[str, str], chunks: Sequence[Chunk]) -> ExternalRun:
    """The run file at ``path``, checked against the data set's ``questions`` (TREC query id -> text)
    and the corpus' ``chunks``; a :class:`DataError` naming the file and line for the first problem
    (module docstring)."""
    lists: dict[str, list[tuple[str, float]]] = {}
    first_line: dict[str, int] = {}  # question id -> its first line
    ranks: dict[tuple[str, int], int] = {}
    docs: dict[tuple[str, str], int] = {}
    doc_lines: dict[str, int] = {}  # doc id -> its first line
    try:
        handle = open(path, encoding="utf-8")
    except OSError as exc:
        raise DataError(path, f"cannot be read ({exc.strerror or exc}); expected a TREC run file ({FIELDS})") from None
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) != 6:
                    raise DataError(path, f"expected 6 fields ({FIELDS}), got {len(fields)}", number)
                qid_text, _q0, doc_text, rank_text, score_text, _tag = fields
                try:
                    qid, doc = decode_trec_id(qid_text), decode_trec_id(doc_text)
                except ValueError as exc:
                    raise DataError(path, str(exc), number) from None
                try:
                    rank = int(rank_text)
                except ValueError:
                    raise DataError(path, f"rank must be an integer, got {rank_text!r}", number) from None
                try:
                    score = float(score_text)
                except ValueError:
                    raise DataError(path, f"score must be a number, got {score_text!r}", number) from None
                if not math.isfinite(score):
                    raise DataError(path, f"score must be a finite number, got {score_text!r}", number)
                if (qid, rank) in ranks:
                    raise DataError(path, f"rank {rank} of question {qid!r} appears twice (first on line "
                                          f"{ranks[qid, rank]}); expected one document per rank", number)
                if (qid, doc) in docs:
                    raise DataError(path, f"document {doc!r} appears twice for question {qid!r} (first on line "
                                          f"{docs[qid, doc]})", number)
                ranks[qid, rank] = docs[qid, doc] = number
                first_line.setdefault(qid, number)
                doc_lines.setdefault(doc, number)
                lists.setdefault(qid, []).append((doc, score))
        except UnicodeDecodeError as exc:
            raise DataError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not lists:
        raise DataError(path, f"holds no ranking; expected lines '{FIELDS}' answering the run's questions.tsv")
    unknown = [qid for qid in lists if qid not in questions]
    if len(unknown) == len(lists):
        raise DataError(path, f"a run for another question file: none of its {len(lists)} question ids is a question "
                              f"of this run ({named(unknown)}); expected the ids of the run's questions.tsv "
                              "(<set>/<qid>)", first_line[unknown[0]])
    if unknown:
        raise DataError(path, f"{len(unknown)} of its {len(lists)} question ids are no question of this run: "
                              f"{named(unknown, 20)}; expected the ids of the run's questions.tsv (<set>/<qid>)",
                        first_line[unknown[0]])
    chunk_ids = {chunk.chunk_id for chunk in chunks}
    pages = {chunk.url for chunk in chunks}
    if all(doc in chunk_ids for doc in doc_lines):
        return ExternalRun("chunk", lists)
    if all(doc in pages for doc in doc_lines):
        return ExternalRun("url", lists)
    strangers = [doc for doc in doc_lines if doc not in chunk_ids and doc not in pages]
    if strangers:
        raise DataError(path, f"{len(strangers)} of its {len(doc_lines)} document ids are no chunk or page of this "
                              f"corpus: {named(strangers)}; expected this run's chunk ids (as in its runs/*.trec) or "
                              "page URLs (as in its runs/*.url.trec)", doc_lines[strangers[0]])
    second = next(doc for doc in doc_lines if (doc in chunk_ids) != (next(iter(doc_lines)) in chunk_ids))
    raise DataError(path, "mixes chunk ids and page URLs; expected one kind of document id in a file", doc_lines[second])


@RETRIEVERS.register("run_file")
class RunFileRetriever(Retriever):
    """Serves a run file's rankings by question text (module docstring)."""

    Params = RunFileParams
    params: RunFileParams

    def __init__(self, name: str, params: RunFileParams):
        super().__init__(name, params)
        self.questions: Mapping[str, str] = {}
        self.by_text: dict[str, Ranking] = {}

    def use(self, services: StageServices) -> None:
        self.questions = services.questions

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        """Reads and checks the file (nothing is stored: reading it is the index)."""
        run = read_run_file(self.params.path, self.questions, chunks)
        first = first_passages(chunks) if run.level == "url" else {}
        self.by_text = {}
        for qid, text in self.questions.items():
            pairs = run.lists.get(qid)
            if pairs is None or text in self.by_text:
                continue
            if run.level == "chunk":
                self.by_text[text] = ranking_from_pairs(pairs, len(pairs))
                continue
            # pages in trec_eval's order of the file as written (score, then encoded page id descending),
            # each page standing for its first passage
            written = {encode_trec_id(page): score for page, score in pairs}
            page_rank = {decode_trec_id(page): rank for rank, page in enumerate(ranked_ids(written))}
            passage_rank = {first[page].chunk_id: page_rank[page] for page, _ in pairs}
            self.by_text[text] = ranking_from_pairs(((first[page].chunk_id, score) for page, score in pairs),
                                                    len(pairs), tie_break=passage_rank.__getitem__)
        kind = ("chunk ids (this run's chunks)" if run.level == "chunk"
                else "page URLs (each page stands for its first passage)")
        log.warning("run file %s (%s): %s, %d questions answered; no measured cost (made elsewhere)",
                    self.name, self.params.path.name, kind, len(run.lists))

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        found = [self.by_text.get(query) for query in queries]
        return [Ranking(r.chunk_ids[:k], r.scores[:k]) if r is not None else Ranking([], []) for r in found]
