"""Run the benchmark: ``python scripts/run_benchmark.py --config configs/wiki.yaml`` (see rag.cli)."""

import sys

from rag.cli import main

if __name__ == "__main__":
    sys.exit(main())
