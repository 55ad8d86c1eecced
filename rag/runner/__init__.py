"""The benchmark runner: run directory, stages, caches, manifest and summary (entry: rag.cli)."""
