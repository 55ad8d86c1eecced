"""Issue 44, item 5: two cold runs of the smoke config's retrieval (``--no-generation``, each with a
fresh cache) write byte-identical TREC runs, and the manifest states how each dense method searches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.cli import main

from .conftest import SMOKE_CONFIG

pytestmark = pytest.mark.slow


def test_two_cold_runs_write_byte_identical_trec_files(tmp_path: Path) -> None:
    written = []
    for cold in ("first", "second"):
        root = tmp_path / cold
        assert main(["--config", str(SMOKE_CONFIG), "--output-dir", str(root / "run"), "--no-generation", "--quiet",
                     "--set", f"cache_dir={root / 'cache'}", "--set", f"output_dir={root / 'runs'}"]) == 0
        runs = root / "run" / "runs"
        written.append({path.name: path.read_bytes() for path in sorted(runs.glob("*.trec"))})
        manifest = json.loads((root / "run" / "manifest.json").read_text())
        assert manifest["dense_search"]["dense"].startswith("exact: every chunk scored")
        assert manifest["hnsw_vs_exact"] == {}  # no approximate search left to measure
    assert {"dense.trec", "bm25.trec", "rrf.trec", "convex.trec"} <= set(written[0])
    assert written[0] == written[1]
