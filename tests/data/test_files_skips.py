"""Files that cannot be read are skipped with one line each, counted and listed (manifest, report), or
with ``--strict`` the first is a one-line error, exit 2; no absolute path of the machine is printed."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from rag.cli import main
from rag.data import load_dataset
from rag.errors import DataError

from .conftest import CHROMIUM

EXPECTED = {
    "binary.txt": "binary", "empty.md": "empty", "latin1.txt": "non_utf8", "huge.md": "too_large",
    "damaged.pdf": "unreadable", "damaged.docx": "unreadable", "loop_a.md": "symlink_loop",
    "loop_b.md": "symlink_loop", "loop_dir": "symlink_loop", "outside.md": "link_outside",
    **({"encrypted.pdf": "encrypted", "scan.pdf": "no_text"} if CHROMIUM else {}),
}


def files_config(folder: Path, **extra) -> dict:
    return {"format": "files", "path": str(folder), "max_file_mb": 0.15, **extra}


def test_each_bad_file_is_skipped_with_its_reason(bad_folder, caplog):
    with caplog.at_level(logging.WARNING, logger="rag.data.files"):
        dataset = load_dataset(files_config(bad_folder))
    assert sorted(d.url for d in dataset.documents) == ["good.md"]
    assert dataset.duplicates == {"inside.md": "good.md"}  # a link inside the folder: the same bytes, read once
    expected_counts: dict[str, int] = {}
    for kind in EXPECTED.values():
        expected_counts[kind] = expected_counts.get(kind, 0) + 1
    assert dataset.skipped == expected_counts
    assert dataset.files_read == 1 and dataset.files_skipped == len(EXPECTED)
    listed = {example.split(":")[0]: example for example in dataset.skipped_examples}
    assert sorted(listed) == sorted(EXPECTED)
    warnings = [record.getMessage() for record in caplog.records if record.name == "rag.data.files"]
    assert len(warnings) == len(EXPECTED)
    assert sorted(w.split()[1].rstrip(":") for w in warnings) == sorted(EXPECTED)
    for line in [*warnings, *dataset.skipped_examples]:
        assert "\n" not in line and str(bad_folder) not in line and str(bad_folder.parent) not in line
    assert "outside the folder" in listed["outside.md"] and "Secret" not in json.dumps([d.text for d in dataset.documents])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_strict_makes_each_bad_file_a_one_line_error(bad_folder, tmp_path, name):
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nFine.\n", encoding="utf-8")
    source = bad_folder / name
    target = folder / name
    if source.is_symlink() and name != "outside.md":  # re-create the link (loop) inside this folder
        target.symlink_to(folder / Path(source.readlink()).name if name != "loop_dir" else folder,
                          target_is_directory=name == "loop_dir")
        if name == "loop_a.md":
            (folder / "loop_b.md").symlink_to(target)
    elif name == "outside.md":
        target.symlink_to(source.resolve())
    else:
        target.write_bytes(source.read_bytes())
    assert len(load_dataset(files_config(folder)).documents) == 1
    with pytest.raises(DataError) as error:
        load_dataset(files_config(folder, strict=True))
    message = str(error.value)
    assert message.startswith(f"{name}: ") and "\n" not in message and str(tmp_path) not in message
    assert "strict" in message


def run_config(tmp_path: Path, folder: Path) -> Path:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "Which file is the good one?", "gold_urls": ["good.md"]})
                         + "\n", encoding="utf-8")
    config = tmp_path / "run.yaml"
    config.write_text(json.dumps({
        "name": "files-skips", "seed": 0,
        "dataset": {**files_config(folder), "questions": str(questions)},
        "chunking": {"max_tokens": 64, "overlap_tokens": 8},
        "retrievers": [{"name": "bm25", "type": "bm25", "params": {"k1": 1.5, "b": 0.75}}],
        "top_k": 5, "generation": None,
        "evaluation": {"metrics": ["mrr@5", "hit@5"], "levels": ["url", "chunk"], "n_resamples": 100},
        "output_dir": str(tmp_path / "runs"), "cache_dir": str(tmp_path / "cache"),
    }), encoding="utf-8")
    return config


def test_cli_strict_is_one_line_exit_2_and_a_run_lists_skipped_files(bad_folder, tmp_path, capsys):
    config = run_config(tmp_path, bad_folder)
    assert main(["run", "--config", str(config), "--strict", "--quiet"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "binary.txt: binary content" in lines[0] and str(bad_folder) not in err  # the first bad file, sorted
    assert not (tmp_path / "runs").exists()  # nothing was started

    out_dir = tmp_path / "run"
    assert main(["run", "--config", str(config), "--quiet", "--output-dir", str(out_dir)]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line.startswith("WARNING rag.data.files: skipped ")]
    assert len(warnings) == len(EXPECTED)
    assert "Files: 1 read, " + str(len(EXPECTED)) + " skipped" in captured.out
    manifest = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))
    data = manifest["data"]
    assert data["files"] == {"read": 1, "skipped": len(EXPECTED)}
    assert data["duplicates"] == {"inside.md": "good.md"}
    questions = Path(os.path.relpath(tmp_path / "questions.jsonl", bad_folder)).as_posix()
    assert sorted(data["source_files"]) == sorted([questions, "good.md"])  # relative to the folder
    assert sum(data["skipped_invalid"].values()) == len(EXPECTED)
    assert str(bad_folder) not in json.dumps(data)
    report = (out_dir / "report.html").read_text(encoding="utf-8")
    assert f"files: 1 read, {len(EXPECTED)} skipped" in report and "skipped: outside.md:" in report
    assert str(bad_folder) not in report
