"""Evaluation engine: exact retrieval metrics (trec_eval and AutoRAG conventions), answer metrics,
comparison statistics and TREC file I/O. See docs/evaluation.md for conventions and tie-breaking.

The names below load on first use (PEP 562): importing one module of the engine, or running a
command that needs none of it, does not load pandas and scipy.stats (0.8 s of a 1.05 s
``rag-bench --help`` before).
"""

import importlib

_EXPORTS = {
    **dict.fromkeys(["ANSWER_METRICS", "answer_in_context", "answer_in_context_at", "answer_scores"], "evaluation.answers"),
    **dict.fromkeys(["CONVENTIONS", "evaluate_run", "retrieval_scores"], "evaluation.evaluate"),
    **dict.fromkeys(["to_document_ranking", "to_document_run"], "evaluation.levels"),
    **dict.fromkeys(["RankedJudgments", "parse_metric"], "evaluation.metrics"),
    **dict.fromkeys(["prepare_run", "ranked_ids", "ranked_lists_to_run"], "evaluation.runs"),
    **dict.fromkeys(["bootstrap_ci", "compare_methods", "compare_metrics", "holm_adjust", "minimum_detectable_difference",
                     "paired_randomization_test", "paired_t_test", "pairs_needed", "questions_needed",
                     "randomization_interval", "smallest_adjusted_p", "smallest_p"], "evaluation.stats"),
    **dict.fromkeys(["TIE_RULES", "ties_crossing"], "evaluation.ties"),
    **dict.fromkeys(["decode_trec_id", "encode_trec_id", "read_qrels", "read_run", "write_qrels", "write_run"], "evaluation.trec_io"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'evaluation' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
