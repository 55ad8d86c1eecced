"""Optional backends import lazily (issue 43): ``import rag.retrievers`` loads neither pymilvus nor
our Milvus modules, nor sentence-transformers (the cross-encoder reranker's library); naming a Milvus
method in a config imports it then."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pymilvus", "milvus_lite", "rag.retrievers.milvus", "rag.retrievers.milvus_store", "sentence_transformers")


def loaded_after(code: str) -> list[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120).stdout
    modules = json.loads(out.splitlines()[-1])
    return [name for name in modules if any(name == h or name.startswith(h + ".") for h in HEAVY)]


def test_import_rag_retrievers_loads_no_optional_backend() -> None:
    assert loaded_after("import rag.retrievers") == []


def test_a_milvus_method_is_imported_when_named() -> None:
    loaded = loaded_after("from rag.retrievers import RETRIEVERS\nassert 'milvus_bm25' in RETRIEVERS.names()\n"
                          "RETRIEVERS.get('milvus_bm25')")
    assert "rag.retrievers.milvus" in loaded


def test_the_command_line_loads_no_statistics_library_until_a_command_needs_it() -> None:
    """``evaluation``'s names load on first use: ``rag-bench --help`` stays quick (0.15 s, not 1.05 s)."""
    script = ("import json, sys\nimport rag.cli, evaluation\nbefore = sorted(sys.modules)\n"
              "evaluation.compare_methods\nprint(json.dumps([before, sorted(sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120).stdout
    before, after = json.loads(out.splitlines()[-1])
    assert not {"pandas", "scipy", "scipy.stats"} & set(before)
    assert {"pandas", "scipy.stats", "evaluation.stats"} <= set(after)
