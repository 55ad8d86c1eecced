"""Seed 003's published table next to ours, and ours re-scored with the reference's metric defects
(:mod:`rag.results.seed003`).

Usage: ``python scripts/reproduce_seed003.py RUN_DIR [--set seed_style]`` where RUN_DIR holds the
``per_query.csv`` of a ``configs/wiki.yaml`` run. Prints Markdown. ``rag-bench reproduce seed003``
checks these numbers and prints the README's table from its last run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rag.results.seed003 import seed003_markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--set", dest="question_set", default="seed_style")
    args = parser.parse_args()
    print("\n".join(seed003_markdown(args.run_dir, args.question_set)))


if __name__ == "__main__":
    main()
