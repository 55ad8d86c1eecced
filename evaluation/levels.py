"""Chunk level -> document (URL) level, as docs/metrics-spec.md says: map each chunk to its document,
keep the first occurrence, so documents are ranked by their best chunk."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluation.runs import Run, ranked_ids, ranked_lists_to_run


def to_document_ranking(chunk_ids: Sequence[str], chunk_to_doc: Mapping[str, str], where: str = "retrieved") -> list[str]:
    """Document ids in rank order of their first (best-ranked) chunk, each once."""
    documents = []
    for chunk_id in chunk_ids:
        try:
            documents.append(chunk_to_doc[chunk_id])
        except KeyError:
            raise ValueError(f"{where}: chunk id {chunk_id!r} has no document in chunk_to_doc") from None
    return list(dict.fromkeys(documents))


def to_document_run(run: Run, chunk_to_doc: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """A chunk run turned into a document run. The chunks are ranked with the evaluator's rule
    (score descending, chunk id descending), each document keeps its first chunk's place, and the
    new scores (list length - position) preserve that order exactly."""
    return ranked_lists_to_run(
        {qid: to_document_ranking(ranked_ids(scores), chunk_to_doc, f"run[{qid!r}]") for qid, scores in run.items()}
    )
