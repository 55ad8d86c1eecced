"""``--config documents --set dataset.path=DIR`` is what ``--docs DIR`` runs (issue 44, item 10b): a
folder-of-files config without ``dataset.questions`` makes questions from its documents, the same ones."""

from __future__ import annotations

from pathlib import Path

from rag.cli import main

FOLDER = Path(__file__).parents[1] / "fixtures" / "thirdparty" / "texinfo-libffi"


def test_config_documents_with_a_path_makes_the_questions_docs_makes(tmp_path, capsys):
    common = ["--n-questions", "4", "--methods", "bm25", "--no-generation", "--quiet",
              "--set", f"cache_dir={tmp_path / 'cache'}"]
    assert main(["run", "--docs", str(FOLDER), *common, "--output-dir", str(tmp_path / "docs")]) == 0
    by_docs = capsys.readouterr().out
    assert main(["run", "--config", "documents", "--set", f"dataset.path={FOLDER}", *common,
                 "--output-dir", str(tmp_path / "config")]) == 0
    by_config = capsys.readouterr().out
    assert "your documents" in by_docs and "(cached)" not in by_docs
    assert "your documents" in by_config and "(cached)" in by_config  # the same questions, from the same cache
    qrels = [(tmp_path / run / "runs" / "qrels.url.txt").read_text() for run in ("docs", "config")]
    assert qrels[0] == qrels[1] and qrels[0].startswith("template/")
