"""The "autorag" convention: AutoRAG's documented retrieval metrics (seed 001), per query.

Ground truth is a list of groups (OR inside a group, AND across groups); a graded or flat ground
truth is one group per relevant id. With ``k`` the ranked list is first cut to its top k.

- precision = retrieved ids that belong to any group / length of the (cut) list (0 for an empty list)
- recall    = groups with at least one retrieved id / number of groups
- f1        = harmonic mean of precision and recall (0 when both are 0)
- hit       = 1 if any retrieved id belongs to a group (our addition; AutoRAG has no hit metric)
- mrr       = mean over groups of 1 / rank of the group's first retrieved id (0 for a missed group)
- map       = mean over groups of the group's AP; AP = mean of precision@i at the group's hit
  ranks i, precision@i counting only that group's ids among the first i (0 for a missed group)
- ndcg      = binary relevance (id in any group); DCG = Σ rel_i / log2(i + 1); IDCG over an ideal
  list of min(|ids in all groups|, list length) ones (0 for an empty list)
- complete  = 1 if every group has a retrieved id, else 0 (= recall == 1; our addition)

Undefined ground truth -> every metric None (NaN in a table; the query is left out of means), as
AutoRAG's ``autorag_metric`` decorator does when ``MetricInput.is_fields_notnone(["retrieval_gt",
...])`` fails: no group, an empty group, or any id that is empty or only white space (see
:attr:`GroundTruth.blank`). AutoRAG also returns None for an empty *retrieved* list; here that list
scores 0, as in the trec convention, so a method that retrieves nothing is never left out.

Seed 001's example: gt
[["test-1","test-2"],["test-3"]], list ["test-1","pred-1","test-2","pred-3"] -> precision 0.5,
recall 0.5, f1 0.5, mrr 0.5, map 5/12, ndcg 0.7039180890341347.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from evaluation.ground_truth import GroundTruth


def _harmonic_mean(a: float, b: float) -> float:
    return 2 * a * b / (a + b) if a + b > 0 else 0.0


def autorag_scores(truth: GroundTruth, ranked: Sequence[str], k: int | None) -> dict[str, float | None]:
    """All autorag metrics of one query, keyed by canonical metric name (p, recall, f1, hit, mrr, map, ndcg, complete)."""
    names = ("p", "recall", "f1", "hit", "mrr", "map", "ndcg", "complete")
    if truth.blank:
        return dict.fromkeys(names)
    top = list(ranked if k is None else ranked[:k])
    rank_of = {doc_id: position + 1 for position, doc_id in enumerate(top)}
    relevant = frozenset().union(*truth.groups)
    relevant_ranks = [rank for doc_id, rank in rank_of.items() if doc_id in relevant]
    group_hit_ranks = [sorted(rank_of[doc_id] for doc_id in group if doc_id in rank_of) for group in truth.groups]

    precision = len(relevant_ranks) / len(top) if top else 0.0
    groups_found = sum(1 for ranks in group_hit_ranks if ranks)
    recall = groups_found / len(truth.groups)
    reciprocal_ranks = [1 / ranks[0] if ranks else 0.0 for ranks in group_hit_ranks]
    group_aps = [
        sum((found + 1) / rank for found, rank in enumerate(ranks)) / len(ranks) if ranks else 0.0
        for ranks in group_hit_ranks
    ]
    dcg = sum(1 / math.log2(rank + 1) for rank in relevant_ranks)
    idcg = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(relevant), len(top)) + 1))
    return {
        "p": precision,
        "recall": recall,
        "f1": _harmonic_mean(precision, recall),
        "hit": 1.0 if relevant_ranks else 0.0,
        "mrr": sum(reciprocal_ranks) / len(truth.groups),
        "map": sum(group_aps) / len(truth.groups),
        "ndcg": dcg / idcg if idcg > 0 else 0.0,
        "complete": 1.0 if groups_found == len(truth.groups) else 0.0,
    }
