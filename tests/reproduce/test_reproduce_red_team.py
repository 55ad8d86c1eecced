"""Issue 44, items 6 and 7: ``rag-bench reproduce`` on hostile but valid condition files.

- ``--update-expected`` with two rows sharing a YAML anchor (``&e`` / ``*e``) replaced the same span
  twice: the file became invalid and a row was lost. Now an alias that measured one value keeps the
  anchor, and one that measured two values is refused with one line (the file left alone);
- ``true`` and ``"0.5"`` were read as numbers (a 0.4 miss passed with ``abs: "0.5"``);
- a row expecting a text column of comparison.json gave a traceback;
- ``--readme`` after a one-method condition gave a KeyError (no verdicts), turned a 0600 file into
  0644 and replaced a symbolic link by a regular file; the seed003 printer over a run without
  mrr@10 gave a KeyError.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from rag.cli import EXIT_OK, EXIT_USER_ERROR, main
from rag.cli.common import EXIT_NOT_REPRODUCED

CASE = "ground_truth: [[a, b], [c]]\n    retrieved: [c, x, b, a]\n    convention: autorag\n    tolerance: exact\n"
HEADER = "title: t\nsource: metric_cases\ntolerances:\n  exact:\n    abs: {abs}\n    why: closed forms\nrows:\n"


def cases_matrix(tmp_path: Path, rows: str, abs_: str = "5.0e-7") -> Path:
    matrix = tmp_path / "matrix"
    matrix.mkdir(exist_ok=True)
    (matrix / "cases.yaml").write_text(HEADER.format(abs=abs_) + rows)
    return matrix


def test_update_expected_keeps_an_anchor_that_measured_one_value(tmp_path, monkeypatch, capsys) -> None:
    rows = (f"  - case: one\n    {CASE}    expected: &e {{precision: 0.75, mrr: 0.5}}\n"
            f"  - case: two\n    {CASE}    expected: *e\n")
    matrix = cases_matrix(tmp_path, rows)
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--matrix", str(matrix), "--update-expected"]) == EXIT_OK
    text = (matrix / "cases.yaml").read_text()
    assert text == HEADER.format(abs="5.0e-7") + rows.replace("mrr: 0.5}", "mrr: 0.666667}")
    loaded = yaml.safe_load(text)
    assert [row["expected"] for row in loaded["rows"]] == [{"precision": 0.75, "mrr": 0.666667}] * 2


def test_update_expected_refuses_an_anchor_that_measured_two_values(tmp_path, monkeypatch, capsys) -> None:
    rows = (f"  - case: one\n    {CASE}    expected: &e {{mrr: 0.5}}\n"
            "  - case: two\n    ground_truth: [[a]]\n    retrieved: [a]\n    convention: autorag\n    tolerance: exact\n"
            "    expected: *e\n")
    matrix = cases_matrix(tmp_path, rows)
    before = (matrix / "cases.yaml").read_text()
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--matrix", str(matrix), "--update-expected"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "rows.1.expected.mrr: shares its YAML node (an &anchor / *alias) with rows.0.expected.mrr" in err
    assert (matrix / "cases.yaml").read_text() == before


@pytest.mark.parametrize("abs_, expected, key", [
    ('"0.5"', "{mrr: 0.666667}", "tolerances.exact.abs"),
    ("5.0e-7", '{mrr: "0.666667"}', "rows.0.expected.mrr"),
    ("5.0e-7", "{mrr: true}", "rows.0.expected.mrr"),
    ("true", "{mrr: 0.666667}", "tolerances.exact.abs"),
])
def test_numbers_must_be_numbers(tmp_path, monkeypatch, capsys, abs_, expected, key) -> None:
    matrix = cases_matrix(tmp_path, f"  - case: one\n    {CASE}    expected: {expected}\n", abs_)
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--matrix", str(matrix), "--list"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{key}: " in err and "expected a number" in err


def test_a_string_tolerance_no_longer_passes_a_miss(tmp_path, monkeypatch, capsys) -> None:
    """mrr is 2/3: 0.266667 misses by 0.4, which abs: "0.5" let pass."""
    matrix = cases_matrix(tmp_path, f"  - case: one\n    {CASE}    expected: {{mrr: 0.266667}}\n", '"0.5"')
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--matrix", str(matrix)]) == EXIT_USER_ERROR


TINY = {"Volcano": "A volcano is a rupture in the crust of a planet that lets hot lava, ash and gases escape.",
        "Saturn": "Saturn is the sixth planet from the Sun and the second largest planet in the Solar System.",
        "Espresso": "Espresso is a coffee beverage brewed by forcing hot water through finely ground coffee beans."}


def one_method_condition(tmp_path: Path, expected: str, printer: str = "{printer: results, metrics: [mrr]}") -> Path:
    """A ``run`` condition over a BM25-only run of three documents and two questions, printing a README block."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "corpus.jsonl").write_text("".join(json.dumps({"doc_id": t, "url": f"https://x/{t}", "title": t, "text": x}) + "\n"
                                               for t, x in TINY.items()))
    (data / "questions.jsonl").write_text("".join(json.dumps({"id": q, "question": text, "gold_urls": [[f"https://x/{g}"]],
                                                              "answers": [g], "type": "factual"}) + "\n"
                                                  for q, text, g in [("q1", "What lets lava escape?", "Volcano"),
                                                                     ("q2", "Which is the sixth planet?", "Saturn")]))
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({
        "name": "tiny", "dataset": {"format": "jsonl", "corpus": str(data / "corpus.jsonl"),
                                    "questions": str(data / "questions.jsonl")},
        "chunking": {"max_tokens": 64, "overlap_tokens": 8, "min_tokens": 4},
        "retrievers": [{"name": "bm25", "type": "bm25", "params": {}}], "top_k": 3,
        "evaluation": {"metrics": ["mrr", "hit@3"], "n_resamples": 200}, "cache_dir": str(tmp_path / "cache")}))
    matrix = tmp_path / "matrix"
    matrix.mkdir()
    (matrix / "tiny.yaml").write_text(
        f"title: tiny\nsource: run\ncommand: rag-bench run --config {config} --no-generation\n"
        "tolerances:\n  exact:\n    abs: 5.0e-7\n    why: deterministic\n"
        f"rows:\n  - {{set: questions, method: bm25, tolerance: exact, expected: {expected}}}\n"
        f"readme:\n  tiny-table: {printer}\n")
    return matrix


@pytest.mark.slow
def test_a_row_expecting_a_text_column_fails_its_condition_naming_the_cell(tmp_path, monkeypatch, capsys) -> None:
    matrix = one_method_condition(tmp_path, "{mrr: 1.0, method: 1.0}")
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--matrix", str(matrix)]) == EXIT_NOT_REPRODUCED
    result = json.loads((tmp_path / "runs" / "reproduce" / "result.json").read_text())
    assert result["conditions"][0]["error"].startswith("rows.0.expected.method: the measured value is not a number "
                                                       "(str 'bm25'); expected a metric column")


@pytest.mark.slow
def test_readme_after_a_one_method_condition_keeps_the_files_mode_and_link(tmp_path, monkeypatch, capsys) -> None:
    matrix = one_method_condition(tmp_path, "{mrr: 1.0, hit@3: 1.0}")
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--matrix", str(matrix)]) == EXIT_OK
    real = tmp_path / "docs" / "README.md"
    real.parent.mkdir()
    real.write_text("# T\n\n<!-- reproduce:tiny-table -->\nold\n<!-- /reproduce:tiny-table -->\n")
    os.chmod(real, 0o600)
    link = tmp_path / "README.md"
    link.symlink_to(real)
    assert main(["reproduce", "--matrix", str(matrix), "--readme", str(link)]) == EXIT_OK, capsys.readouterr().err
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    text = real.read_text()
    assert "old" not in text and "| questions (2) | bm25 (a) | **1.000" in text


@pytest.mark.slow
def test_the_seed003_printer_over_a_run_without_its_metrics_is_one_line(tmp_path, monkeypatch, capsys) -> None:
    matrix = one_method_condition(tmp_path, "{mrr: 1.0, hit@3: 1.0}", "{printer: seed003, set: questions}")
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--matrix", str(matrix)]) == EXIT_OK
    readme = tmp_path / "README.md"
    readme.write_text("# T\n\n<!-- reproduce:tiny-table -->\nold\n<!-- /reproduce:tiny-table -->\n")
    capsys.readouterr()
    assert main(["reproduce", "--matrix", str(matrix), "--readme", str(readme)]) == EXIT_USER_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reproduce:tiny-table" in err[0] and "mrr@10, recall@10" in err[0], err
    assert "old" in readme.read_text()
