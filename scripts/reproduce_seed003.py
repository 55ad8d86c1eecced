"""Seed 003's published table next to ours, and ours re-scored with the reference's metric defects.

Usage: ``python scripts/reproduce_seed003.py RUN_DIR [--set seed_style]`` where RUN_DIR holds the
``per_query.csv`` of a ``configs/wiki.yaml`` run. Prints Markdown.

The reference's evaluation (data/seed_repo, SOURCE.md) had three retrieval defects, emulated here
from our own per-query ranks so their effect can be measured on the same retrieval results:
its "Recall@10" was a binary hit over the top 5 *chunks*; its MRR used the rank of the first gold
*chunk* (no URL de-duplication); and any question with a list of gold URLs scored 0 on both.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from rag.results.csv_files import read_csv

PUBLISHED = {  # evaluation_summary_chromadb.json of the reference (100 template questions)
    "dense": {"mrr": 0.3025, "recall": 0.33, "f1": 0.0},
    "bm25": {"mrr": 0.4392, "recall": 0.47, "f1": 0.0},
    "rrf": {"mrr": 0.3783, "recall": 0.43, "f1": 0.0},
}


def reference_style(row: pd.Series) -> tuple[float, float]:
    """(MRR, "Recall@10") as the reference computed them, from our ranks."""
    if len(json.loads(row["gold_urls"])) > 1:
        return 0.0, 0.0  # a list of URLs compared with a string never matched
    chunk_ranks = [rank for rank in json.loads(row["gold_chunk_ranks"]) if rank <= 10]  # its lists held 10 chunks
    mrr = 1.0 / chunk_ranks[0] if chunk_ranks else 0.0
    return mrr, float(any(rank <= 5 for rank in chunk_ranks))


def fmt(mean: float, low: float | None = None, high: float | None = None) -> str:
    return f"{mean:.4f}" if low is None else f"{mean:.4f} [{low:.3f}, {high:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--set", dest="question_set", default="seed_style")
    args = parser.parse_args()
    per_query = read_csv(args.run_dir / "per_query.csv", keep_default_na=False, na_values=[""])
    table = read_csv(args.run_dir / "comparison.csv").set_index(["question_set", "method"])
    rows = per_query[per_query["question_set"] == args.question_set]
    print(f"| method | published MRR | published Recall@10 | published F1 | our MRR (URL level) [95% CI] "
          f"| our Recall@10 (URL level) [95% CI] | our F1 (answered) [95% CI] | ours, reference-style MRR "
          f"| ours, reference-style \"Recall@10\" |")
    print("|---|---|---|---|---|---|---|---|---|")
    for method, published in PUBLISHED.items():
        if (args.question_set, method) not in table.index:
            continue
        ours = table.loc[(args.question_set, method)]
        styled = rows[rows["method"] == method].apply(reference_style, axis=1, result_type="expand")
        f1 = fmt(ours["f1"], ours["f1_ci_low"], ours["f1_ci_high"]) if "f1" in ours and pd.notna(ours["f1"]) else "–"
        print(f"| {method} | {published['mrr']:.4f} | {published['recall']:.2f} | {published['f1']:.1f} "
              f"| {fmt(ours['mrr@10'], ours['mrr@10_ci_low'], ours['mrr@10_ci_high'])} "
              f"| {fmt(ours['recall@10'], ours['recall@10_ci_low'], ours['recall@10_ci_high'])} | {f1} "
              f"| {fmt(styled[0].mean())} | {fmt(styled[1].mean())} |")
    multi = rows.drop_duplicates("qid")["gold_urls"].map(lambda g: len(json.loads(g)) > 1).mean()
    print(f"\n{len(rows.drop_duplicates('qid'))} questions in {args.question_set}; {multi:.0%} have more than one gold URL.")


if __name__ == "__main__":
    main()
