"""BEIR-format data sets (SciFact, NFCorpus, ... downloaded by the user).

Layout (https://github.com/beir-cellar/beir): ``corpus.jsonl`` lines ``{"_id", "title", "text"}``,
``queries.jsonl`` lines ``{"_id", "text"}``, ``qrels/<split>.tsv`` with a header line and rows
``query-id <TAB> corpus-id <TAB> score``.

Mapping to our types: a document's ``url`` is its corpus ``_id`` (so document-level metrics work on
BEIR ids); its text is ``"title text"`` when ``title_in_text`` (as BEIR's SentenceBERT models
encode it). The questions are the queries with at least one qrel of score > 0 in the split, in
``queries.jsonl`` order, each relevant document its own group (all required: trec recall); the
graded judgements go to ``Question.relevance`` (``{doc id: score}``, every judged document, so
nDCG uses the grades as gains exactly as pytrec_eval on the original qrels). Question set name: the split; ``qtype``: ``"beir"``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pydantic import Field, StrictStr, field_validator

from rag.data.config import BeirDatasetConfig
from rag.data.loaders import DATASET_LOADERS, Dataset, DatasetLoader, require_questions, resolve_path
from rag.data.records import (
    EMPTY_TEXT, MALFORMED_LINE, UNKNOWN_QUERY, UNKNOWN_URL, JsonRecord, ProblemLog, iter_records, iter_text_lines,
    non_blank, question_from_parts,
)
from rag.errors import DataError
from rag.types import Document, Question


class BeirCorpusRecord(JsonRecord):
    doc_id: StrictStr = Field(alias="_id")
    title: StrictStr = ""
    text: StrictStr

    _check_id = field_validator("doc_id")(non_blank)


class BeirQueryRecord(JsonRecord):
    query_id: StrictStr = Field(alias="_id")
    text: StrictStr

    _check_id = field_validator("query_id")(non_blank)
    _check_text = field_validator("text")(non_blank)


def read_beir_corpus(path: Path, title_in_text: bool, problems: ProblemLog) -> list[Document]:
    documents: list[Document] = []
    for line, record in iter_records(BeirCorpusRecord, path, problems, {}, "doc_id"):
        text = f"{record.title} {record.text}".strip() if title_in_text else record.text.strip()
        if text:
            documents.append(Document(record.doc_id, record.doc_id, record.title, text, record.extras()))
        else:
            problems.report(path, line, EMPTY_TEXT, f"document {record.doc_id!r} has no text")
    return documents


def read_beir_qrels(path: Path, problems: ProblemLog) -> dict[str, dict[str, tuple[int, int]]]:
    """``{query id: {doc id: (score, line)}}`` from a qrels TSV (the header line is skipped)."""
    qrels: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for line, text in iter_text_lines(path, problems):
        columns = text.rstrip("\r\n").split("\t")
        if line == 1 and columns[0].strip().lower() in {"query-id", "query_id", "qid"}:
            continue
        if len(columns) != 3 or not columns[0] or not columns[1]:
            problems.report(path, line, MALFORMED_LINE, f"expected 'query-id<TAB>corpus-id<TAB>score', got {text.strip()!r}")
            continue
        try:
            score = int(columns[2])
        except ValueError:
            problems.report(path, line, MALFORMED_LINE, f"score {columns[2].strip()!r} is not an integer")
            continue
        qrels[columns[0]][columns[1]] = (score, line)
    return qrels


@DATASET_LOADERS.register("beir")
class BeirLoader(DatasetLoader):
    def load(self, config: BeirDatasetConfig, base_dir: Path, problems: ProblemLog) -> Dataset:
        root = resolve_path(config.path, base_dir)
        corpus_path, queries_path = root / "corpus.jsonl", root / "queries.jsonl"
        qrels_path = root / "qrels" / f"{config.split}.tsv"
        if not root.is_dir():
            raise DataError(root, "BEIR data set directory not found")
        documents = read_beir_corpus(corpus_path, config.title_in_text, problems)
        if not documents:
            raise DataError(corpus_path, "the corpus holds no valid document")
        known = {document.url for document in documents}
        qrels = read_beir_qrels(qrels_path, problems)
        questions: list[Question] = []
        for line, record in iter_records(BeirQueryRecord, queries_path, problems, {"text": EMPTY_TEXT}, "query_id"):
            judged = qrels.pop(record.query_id, None)
            if judged is None:
                continue
            # Non-relevant judgements of documents outside the corpus change no metric: dropped.
            relevance = {doc_id: score for doc_id, (score, _) in judged.items() if score > 0 or doc_id in known}
            if not any(score > 0 for score in relevance.values()):
                continue
            unknown = next((doc_id for doc_id in relevance if doc_id not in known), None)
            if unknown is not None:
                problems.report(qrels_path, judged[unknown][1], UNKNOWN_URL, f"corpus-id {unknown!r} is not in {corpus_path.name}")
                continue
            question = question_from_parts(
                queries_path, line, problems, known, qid=record.query_id, text=record.text,
                groups=[[doc_id] for doc_id, score in relevance.items() if score > 0], answers=[], qtype="beir",
                question_set=config.split, metadata=record.extras(), relevance=relevance,
            )
            if question is not None:
                questions.append(question)
        for query_id, judged in qrels.items():
            first_line = min(line for _, line in judged.values())
            problems.report(qrels_path, first_line, UNKNOWN_QUERY, f"query-id {query_id!r} is not in {queries_path.name}")
        require_questions(config.split, questions, queries_path, problems)
        return Dataset(config.name or root.name, documents, {config.split: questions},
                       source_files=[corpus_path, queries_path, qrels_path])
