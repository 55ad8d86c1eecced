"""Chunk level -> document (URL) level, as docs/evaluation.md says: map each chunk to its document,
keep the first occurrence, so documents are ranked by their best chunk."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluation.runs import Run, ranked_ids, ranked_lists_to_run


def _document_of(chunk_id: str, chunk_to_doc: Mapping[str, str], where: str) -> str:
    try:
        return chunk_to_doc[chunk_id]
    except KeyError:
        raise ValueError(f"{where}: chunk id {chunk_id!r} has no document in chunk_to_doc") from None


def to_document_ranking(chunk_ids: Sequence[str], chunk_to_doc: Mapping[str, str], where: str = "retrieved") -> list[str]:
    """Document ids in rank order of their first (best-ranked) chunk, each once.

    Args:
        chunk_ids: chunk ids in rank order.
        chunk_to_doc: chunk id -> document id.
        where: what the ids are, named in the error for an unknown chunk.

    Returns:
        Document ids in rank order.
    """
    return list(dict.fromkeys(_document_of(chunk_id, chunk_to_doc, where) for chunk_id in chunk_ids))


def _best_chunk_scores(scores: Mapping[str, float], chunk_to_doc: Mapping[str, str], where: str) -> dict[str, float]:
    best: dict[str, float] = {}
    for chunk_id, score in scores.items():
        document = _document_of(chunk_id, chunk_to_doc, where)
        best[document] = max(score, best.get(document, score))
    return best


def to_document_run(run: Run, chunk_to_doc: Mapping[str, str], ties: str = "id") -> dict[str, dict[str, float]]:
    """A chunk run turned into a document run, each document ranked by its best chunk.

    ``ties="id"``: the chunks are ranked with the evaluator's rule (score descending, chunk id
    descending), each document keeps its first chunk's place, and the new scores (list length -
    position) preserve that order exactly. ``ties="expected"``: a document's score is its best
    chunk's score, so documents whose best chunks tie stay tied (the tie-aware metrics then
    average over their orders).

    Args:
        run: ``{qid: {chunk_id: score}}``.
        chunk_to_doc: chunk id -> document id.
        ties: ``id`` or ``expected``.

    Returns:
        ``{qid: {doc_id: score}}``.
    """
    if ties == "expected":
        return {qid: _best_chunk_scores(scores, chunk_to_doc, f"run[{qid!r}]") for qid, scores in run.items()}
    return ranked_lists_to_run(
        {qid: to_document_ranking(ranked_ids(scores), chunk_to_doc, f"run[{qid!r}]") for qid, scores in run.items()}
    )
