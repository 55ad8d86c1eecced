"""The report's sentence on a dense retriever's int8 fidelity (:mod:`rag.retrievers.precision_fidelity`)."""

from __future__ import annotations


def int8_fidelity_fact(name: str, record: dict) -> str:
    """One line: the record's top-k overlap, identical lists and cosine errors, with its sample sizes."""
    return (f"int8 vs float32 embeddings ({name}, {record['questions']} sampled questions, exact search over "
            f"{record['chunks']} sampled chunks): top-{record['k']} overlap {record['top_k_overlap']:.4f}, "
            f"identical top-{record['k']} lists {record['identical_top_k']:.1%}, query cosine error mean "
            f"{record['query_cosine_error_mean']:.1e} (max {record['query_cosine_error_max']:.1e}), chunk cosine "
            f"error mean {record['chunk_cosine_error_mean']:.1e}")
