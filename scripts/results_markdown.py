"""Print the README's / docs' result tables and verdicts from a run directory, so that every result
statement in them is a run's own verdict, not prose.

Usage: ``python scripts/results_markdown.py RUN_DIR [--metrics mrr@10,recall@10,ndcg@10,complete@10,f1]``.
Prints Markdown: per question set, the methods with the chosen metrics (mean [95% CI] and the
superscript letters of the methods each beats), then the verdict lines.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from rag.results.format import interval, marks, number, verdict_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--metrics", default="mrr@10,recall@10,ndcg@10,complete@10,f1")
    args = parser.parse_args()
    data = json.loads((args.run_dir / "comparison.json").read_text(encoding="utf-8"))
    table = pd.DataFrame(data["rows"])
    metrics = [m for m in args.metrics.split(",") if m in table and table[m].notna().any()]
    letters = data["letters"]
    print("| question set | method | " + " | ".join(metrics) + " |")
    print("|---|---|" + "---|" * len(metrics))
    for question_set, part in table.groupby("question_set", sort=False):
        best = {m: part[m].max() for m in metrics}
        for i, row in enumerate(part.to_dict("records")):
            cells = []
            for m in metrics:
                if row[m] is None or pd.isna(row[m]):
                    cells.append("–")
                    continue
                text = f"{number(row[m])} {interval(row[f'{m}_ci_low'], row[f'{m}_ci_high'])}{marks(row.get(f'{m}_beats') or '')}"
                cells.append(f"**{text}**" if row[m] == best[m] else text)
            label = f"{question_set} ({row['questions']})" if i == 0 else ""
            print(f"| {label} | {row['method']} ({letters[row['method']]}) | " + " | ".join(cells) + " |")
    print()
    for question_set, part in pd.DataFrame(data["verdict"]).groupby("question_set", sort=False):
        print(f"- **{question_set}**: " + "; ".join(verdict_line(v) for v in part.to_dict("records")
                                                   if v["metric"] in metrics))


if __name__ == "__main__":
    main()
