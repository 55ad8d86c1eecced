"""Print the README's / docs' result tables and verdicts from a run directory
(:mod:`rag.results.markdown`), so that every result statement in them is a run's own verdict, not prose.

Usage: ``python scripts/results_markdown.py RUN_DIR [--metrics mrr@10,recall@10,ndcg@10,complete@10,f1]``.
``rag-bench reproduce --readme README.md`` writes the same lines into the README's marked blocks
from the reproduction matrix's last run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rag.results.markdown import DEFAULT_METRICS, results_markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--metrics", default=",".join(DEFAULT_METRICS))
    args = parser.parse_args()
    print("\n".join(results_markdown(args.run_dir, args.metrics.split(","))))


if __name__ == "__main__":
    main()
