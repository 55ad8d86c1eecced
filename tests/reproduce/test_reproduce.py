"""``rag-bench reproduce``: the cheap conditions of the matrix pass on this code (the smoke run, end to
end, and the AutoRAG metric cases, whose expected values are hand-computed closed forms); an edited
expected value fails, naming its cell; ``--update-expected`` writes the measured value back and keeps
the rest of the file; the README blocks come from the last run; a bad condition file is one line
naming the file and the key, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rag.cli import EXIT_OK, EXIT_USER_ERROR, main
from rag.cli.common import EXIT_NOT_REPRODUCED
from rag.resources import reproduce_dir
from rag.results.markdown import compact_markdown, results_markdown

REPO = Path(__file__).resolve().parents[2]


def copy_matrix(tmp_path: Path, *names: str) -> Path:
    matrix = tmp_path / "matrix"
    matrix.mkdir()
    for name in names:
        shutil.copy(reproduce_dir() / f"{name}.yaml", matrix / f"{name}.yaml")
    return matrix


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``rag-bench reproduce smoke autorag`` once, in a fresh working directory (its runs and cache)."""
    cwd = tmp_path_factory.mktemp("reproduce")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        assert main(["reproduce", "smoke", "autorag"]) == EXIT_OK
    return cwd


def test_checkout_links_to_the_packaged_matrix() -> None:
    assert (REPO / "reproduce").resolve() == reproduce_dir().resolve()
    assert {"autorag", "seed003", "smoke", "wiki"} <= {p.stem for p in reproduce_dir().glob("*.yaml")}


@pytest.mark.slow
def test_smoke_and_autorag_reproduce(smoke_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = json.loads((smoke_run / "runs" / "reproduce" / "result.json").read_text())
    by_name = {condition["name"]: condition for condition in result["conditions"]}
    assert set(by_name) == {"smoke", "autorag"}
    assert all(cell["passed"] for condition in by_name.values() for cell in condition["cells"])
    assert len(by_name["smoke"]["cells"]) == 24 and len(by_name["autorag"]["cells"]) == 27
    run_dir = Path(by_name["smoke"]["run_dir"])
    assert (smoke_run / run_dir / "comparison.json").is_file()
    page = (smoke_run / "runs" / "reproduce" / "index.html").read_text()
    assert "reproduced: all 51 cells of 2 conditions" in page and "rag-bench run --config smoke" in page


@pytest.mark.slow
def test_an_edited_expected_value_fails_naming_its_cell(smoke_run: Path, tmp_path: Path, monkeypatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """smoke's bm25 mrr@10 is 1 (every first result is gold): 0.99 is outside its exact bound. The run
    reads every stage from the first run's cache."""
    matrix = copy_matrix(tmp_path, "smoke")
    path = matrix / "smoke.yaml"
    text = path.read_text()
    row = "{set: questions, method: bm25, tolerance: exact, expected: {mrr@10: 1.0,"
    assert row in text
    path.write_text(text.replace(row, row.replace("mrr@10: 1.0,", "mrr@10: 0.99,")))
    monkeypatch.chdir(smoke_run)
    assert main(["reproduce", "--matrix", str(matrix), "--output-dir", str(tmp_path / "out")]) == EXIT_NOT_REPRODUCED
    captured = capsys.readouterr()
    assert captured.err.strip() == ("error: NOT reproduced: 1 of 24 cells outside their tolerances: "
                                    "smoke:questions/bm25:mrr@10")
    assert "1.000000 FAIL (expected 0.990000 ± 5e-07)" in captured.out


def test_autorag_edit_fails_then_update_expected_restores_it(tmp_path: Path, monkeypatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The seed 001 nDCG (0.7039180890341347, hand-computed) edited to 0.70 fails; --update-expected
    writes back 0.703918, prints the diff, keeps comments and tolerances, and the cells then pass."""
    matrix = copy_matrix(tmp_path, "autorag")
    path = matrix / "autorag.yaml"
    original = path.read_text()
    path.write_text(original.replace("map: 0.416667, ndcg: 0.703918,", "map: 0.416667, ndcg: 0.70,", 1))
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--matrix", str(matrix)]) == EXIT_NOT_REPRODUCED
    assert capsys.readouterr().err.strip().endswith("cells outside their tolerances: autorag:seed001-autorag:ndcg")
    assert main(["reproduce", "--matrix", str(matrix), "--update-expected"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "-    expected: {precision: 0.5, recall: 0.5, f1: 0.5, hit: 1.0, mrr: 0.5, map: 0.416667, ndcg: 0.70," in out
    assert "+    expected: {precision: 0.5, recall: 0.5, f1: 0.5, hit: 1.0, mrr: 0.5, map: 0.416667, ndcg: 0.703918," in out
    assert path.read_text() == original  # every other character kept; 0.5 stays 0.5
    result = json.loads((tmp_path / "runs" / "reproduce" / "result.json").read_text())
    assert all(cell["passed"] for cell in result["conditions"][0]["cells"])


@pytest.mark.slow
def test_readme_blocks_come_from_the_last_run(smoke_run: Path, tmp_path: Path, monkeypatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    matrix = copy_matrix(tmp_path, "smoke")
    with (matrix / "smoke.yaml").open("a") as file:
        file.write("readme:\n  smoke-table: {printer: results, metrics: [mrr@10, ndcg@10]}\n"
                   "  smoke-compact: {printer: compact}\n")
    readme = tmp_path / "README.md"
    compact = "\n\n<!-- reproduce:smoke-compact -->\nold\n<!-- /reproduce:smoke-compact -->"
    readme.write_text("# Title\n\n<!-- reproduce:smoke-table -->\ntyped by hand\n<!-- /reproduce:smoke-table -->"
                      f"{compact}\n\nEnd.\n")
    monkeypatch.chdir(smoke_run)
    output = smoke_run / "runs" / "reproduce"
    assert main(["reproduce", "--matrix", str(matrix), "--output-dir", str(output), "--readme", str(readme)]) == EXIT_OK
    run_dir = Path(json.loads((output / "result.json").read_text())["conditions"][1]["run_dir"])
    table = "\n".join(results_markdown(run_dir, ["mrr@10", "ndcg@10"])).strip("\n")
    short = "\n".join(compact_markdown(run_dir)).strip("\n")
    assert readme.read_text() == (f"# Title\n\n<!-- reproduce:smoke-table -->\n{table}\n"
                                  "<!-- /reproduce:smoke-table -->\n\n"
                                  f"<!-- reproduce:smoke-compact -->\n{short}\n<!-- /reproduce:smoke-compact -->\n\nEnd.\n")
    assert "**Recommendation**" in short and "| question set | dense (a) | bm25 (b) |" in short  # one table, no baselines
    assert "closed_book" not in short.split("| question set")[1]
    assert "|  | bm25 (b) | **1.000 [1.000, 1.000]** | **1.000 [1.000, 1.000]** |" in table.split("\n")


def test_readme_block_without_a_run_is_refused(tmp_path: Path, monkeypatch, capsys) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("<!-- reproduce:wiki -->\nold\n<!-- /reproduce:wiki -->\n")
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--readme", str(readme)]) == EXIT_USER_ERROR
    err = capsys.readouterr().err.strip()
    assert err == (f"error: {readme}: reproduce:wiki: condition wiki has no run yet; run 'rag-bench reproduce wiki' "
                   "(and --update-expected when a change moved it) first")
    assert readme.read_text() == "<!-- reproduce:wiki -->\nold\n<!-- /reproduce:wiki -->\n"


@pytest.mark.parametrize("edit, message", [
    (("  exact:\n    abs: 5.0e-7", "  exact:\n    abs: -1"), "tolerances.exact.abs: Input should be greater than or equal to 0"),
    (("    tolerance: exact\n", "    tolerance: close\n"), "rows.0.tolerance: 'close': expected one of the tolerances (exact)"),
    (("    convention: autorag\n", "    convention: autorag\n    depth: 3\n"), "rows.0.depth: unknown key; expected one of:"),
    (("source: metric_cases", "source: cases"), "source: 'cases': expected one of: run, metric_cases"),
    (("rows:\n", "rows: [\n"), ": not valid YAML:"),
])
def test_bad_condition_file_is_one_line_naming_file_and_key(edit, message, tmp_path: Path, monkeypatch, capsys) -> None:
    matrix = copy_matrix(tmp_path, "autorag")
    path = matrix / "autorag.yaml"
    old, new = edit
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--matrix", str(matrix), "--list"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"error: {path}") and message in err


def test_unknown_condition_names_the_known_ones(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "nope"]) == EXIT_USER_ERROR
    assert "unknown condition 'nope'; expected one of: autorag, seed003, smoke, wiki" in capsys.readouterr().err
