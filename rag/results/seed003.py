"""Seed 003's published table next to ours, and ours re-scored with the reference's metric defects.

The reference's evaluation (data/seed_repo, SOURCE.md) had three retrieval defects, emulated here
from our own per-query ranks so their effect can be measured on the same retrieval results:
its "Recall@10" was a binary hit over the top 5 *chunks*; its MRR used the rank of the first gold
*chunk* (no URL de-duplication); and any question with a list of gold URLs scored 0 on both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from rag.results.csv_files import read_csv

PUBLISHED = {  # evaluation_summary_chromadb.json of the reference (100 template questions)
    "dense": {"mrr": 0.3025, "recall": 0.33, "f1": 0.0},
    "bm25": {"mrr": 0.4392, "recall": 0.47, "f1": 0.0},
    "rrf": {"mrr": 0.3783, "recall": 0.43, "f1": 0.0},
}
STYLED_METRICS = ("seed003_mrr", "seed003_recall@10")  # the re-scored metrics' names in the reproduction matrix


def reference_style(row: pd.Series) -> tuple[float, float]:
    """(MRR, "Recall@10") as the reference computed them, from our ranks."""
    if len(json.loads(row["gold_urls"])) > 1:
        return 0.0, 0.0  # a list of URLs compared with a string never matched
    chunk_ranks = [rank for rank in json.loads(row["gold_chunk_ranks"]) if rank <= 10]  # its lists held 10 chunks
    mrr = 1.0 / chunk_ranks[0] if chunk_ranks else 0.0
    return mrr, float(any(rank <= 5 for rank in chunk_ranks))


def read_per_query(run_dir: Path) -> pd.DataFrame:
    return read_csv(run_dir / "per_query.csv", keep_default_na=False, na_values=[""])


def styled_means(per_query: pd.DataFrame, question_set: str, method: str) -> dict[str, float]:
    """The reference-style means of one method on one set (:data:`STYLED_METRICS`); empty without rows."""
    rows = per_query[(per_query["question_set"] == question_set) & (per_query["method"] == method)]
    if rows.empty:
        return {}
    styled = rows.apply(reference_style, axis=1, result_type="expand")
    return dict(zip(STYLED_METRICS, (float(styled[0].mean()), float(styled[1].mean()))))


def _fmt(mean: float, low: float | None = None, high: float | None = None) -> str:
    return f"{mean:.4f}" if low is None else f"{mean:.4f} [{low:.3f}, {high:.3f}]"


def seed003_markdown(run_dir: Path, question_set: str = "seed_style") -> list[str]:
    """The reproduction table (Markdown lines) of a ``configs/wiki.yaml`` run directory."""
    per_query = read_per_query(run_dir)
    table = read_csv(run_dir / "comparison.csv").set_index(["question_set", "method"])
    lines = ["| method | published MRR | published Recall@10 | published F1 | our MRR (URL level) [95% CI] "
             "| our Recall@10 (URL level) [95% CI] | our F1 (answered) [95% CI] | ours, reference-style MRR "
             "| ours, reference-style \"Recall@10\" |",
             "|---|---|---|---|---|---|---|---|---|"]
    for method, published in PUBLISHED.items():
        if (question_set, method) not in table.index:
            continue
        ours = table.loc[(question_set, method)]
        styled = styled_means(per_query, question_set, method)
        f1 = _fmt(ours["f1"], ours["f1_ci_low"], ours["f1_ci_high"]) if "f1" in ours and pd.notna(ours["f1"]) else "–"
        lines.append(f"| {method} | {published['mrr']:.4f} | {published['recall']:.2f} | {published['f1']:.1f} "
                     f"| {_fmt(ours['mrr@10'], ours['mrr@10_ci_low'], ours['mrr@10_ci_high'])} "
                     f"| {_fmt(ours['recall@10'], ours['recall@10_ci_low'], ours['recall@10_ci_high'])} | {f1} "
                     f"| {_fmt(styled['seed003_mrr'])} | {_fmt(styled['seed003_recall@10'])} |")
    rows = per_query[per_query["question_set"] == question_set].drop_duplicates("qid")
    multi = rows["gold_urls"].map(lambda g: len(json.loads(g)) > 1).mean()
    lines += ["", f"{len(rows)} questions in {question_set}; {multi:.0%} have more than one gold URL."]
    return lines
