"""Evaluation engine: exact retrieval metrics (trec_eval and AutoRAG conventions), answer metrics,
comparison statistics and TREC file I/O. See docs/evaluation.md for conventions and tie-breaking."""

from evaluation.answers import ANSWER_METRICS, answer_in_context, answer_in_context_at, answer_scores
from evaluation.evaluate import CONVENTIONS, evaluate_run, retrieval_scores
from evaluation.levels import to_document_ranking, to_document_run
from evaluation.metrics import RankedJudgments, parse_metric
from evaluation.runs import prepare_run, ranked_ids, ranked_lists_to_run
from evaluation.stats import (
    bootstrap_ci, compare_methods, compare_metrics, holm_adjust, minimum_detectable_difference, paired_randomization_test,
    paired_t_test, pairs_needed, questions_needed, randomization_interval, smallest_adjusted_p, smallest_p,
)
from evaluation.ties import TIE_RULES, ties_crossing
from evaluation.trec_io import decode_trec_id, encode_trec_id, read_qrels, read_run, write_qrels, write_run

__all__ = [
    "ANSWER_METRICS",
    "CONVENTIONS",
    "RankedJudgments",
    "TIE_RULES",
    "answer_in_context",
    "answer_in_context_at",
    "answer_scores",
    "bootstrap_ci",
    "compare_methods",
    "compare_metrics",
    "decode_trec_id",
    "encode_trec_id",
    "evaluate_run",
    "holm_adjust",
    "minimum_detectable_difference",
    "paired_randomization_test",
    "paired_t_test",
    "pairs_needed",
    "parse_metric",
    "questions_needed",
    "randomization_interval",
    "prepare_run",
    "ranked_ids",
    "ranked_lists_to_run",
    "read_qrels",
    "read_run",
    "retrieval_scores",
    "smallest_adjusted_p",
    "smallest_p",
    "ties_crossing",
    "to_document_ranking",
    "to_document_run",
    "write_qrels",
    "write_run",
]
