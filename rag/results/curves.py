"""URL-level recall@k and nDCG@k for every k = 1..depth, from the deep ranked lists.

Same meaning as the URL level of the tables (:mod:`rag.runner.scoring`): at k, the pages among the
first k chunks, each at the rank of its best chunk. For a gold page p of grade g_p > 0 let c_p be
the position of its first chunk and u_p its rank among the distinct pages; then

- recall@k = |{p : c_p <= k}| / |R|
- nDCG@k   = Σ_{p : c_p <= k} g_p / log2(u_p + 1)  /  Σ_{i <= min(k, |R|)} g_(i) / log2(i + 1)

(g_(i) the grades sorted descending: trec_eval's ``ndcg_cut``). Questions without a relevant page
are left out. Curves at k = top_k equal the tables' recall@k and ndcg@k (tested).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rag.types import Question, gold_grades


def question_curves(chunk_ids: Sequence[str], chunk_url: Mapping[str, str], grades: Mapping[str, float],
                    depth: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(recall, ndcg) at k = 1..depth for one question; None without a relevant page."""
    relevant = {url: g for url, g in grades.items() if g > 0}
    if not relevant:
        return None
    recall, dcg = np.zeros(depth), np.zeros(depth)
    url_rank: dict[str, int] = {}
    for position, chunk_id in enumerate(chunk_ids[:depth], start=1):
        url = chunk_url[chunk_id]
        if url in url_rank:
            continue
        url_rank[url] = len(url_rank) + 1
        if url in relevant:
            recall[position - 1:] += 1.0 / len(relevant)
            dcg[position - 1:] += relevant[url] / np.log2(url_rank[url] + 1)
    ideal = np.sort(np.fromiter(relevant.values(), dtype=float))[::-1]
    ideal_dcg = np.cumsum(ideal / np.log2(np.arange(2, len(ideal) + 2)))
    idcg = ideal_dcg[np.minimum(np.arange(depth), len(ideal) - 1)]
    return recall, dcg / idcg


def curves(question_sets: Mapping[str, Sequence[Question]], rankings: Mapping[str, Mapping[str, Mapping[str, object]]],
           chunk_url: Mapping[str, str], depth: int) -> pd.DataFrame:
    """Long table: question_set, method, k, recall, ndcg (means over questions with a relevant page)."""
    frames = []
    for method, by_set in rankings.items():
        for set_name, questions in question_sets.items():
            if set_name not in by_set:  # an LLM-backed method runs on the sampled sets only
                continue
            per_question = [question_curves(by_set[set_name][q.qid].chunk_ids, chunk_url, gold_grades(q), depth)
                            for q in questions]
            defined = [c for c in per_question if c is not None]
            if not defined:
                continue
            frames.append(pd.DataFrame({
                "question_set": set_name, "method": method, "k": np.arange(1, depth + 1),
                "recall": np.mean([c[0] for c in defined], axis=0), "ndcg": np.mean([c[1] for c in defined], axis=0),
            }))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["question_set", "method", "k", "recall", "ndcg"])
