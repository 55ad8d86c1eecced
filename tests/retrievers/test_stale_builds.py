"""Issue 44, item 9: a SIGKILL during the ONNX (int8) build left its ``.building-*`` directory (87 MB)
behind for good. The next build removes every build directory whose build is not running, and keeps
the one of a build that is (its model's lock is held)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time

from rag.ort import build as ort_build

KILLED_BUILD = """
import os, signal, sys
from pathlib import Path
import rag.ort.build as b
def build(model, directory, precision, signed=False):
    directory.mkdir()
    (directory / "model.onnx").write_bytes(b"0" * 100_000)
    os.kill(os.getpid(), signal.SIGKILL)
b.build = build
b.onnx_model("all-MiniLM-L6-v2", "int8", Path(sys.argv[1]))
"""


def fake_build(model, directory, precision, signed=False):
    directory.mkdir()
    (directory / ort_build.MODEL_FILE).write_bytes(b"onnx")


def test_the_next_build_removes_what_a_killed_build_left(tmp_path, monkeypatch) -> None:
    cache = tmp_path / "models"
    done = subprocess.run([sys.executable, "-c", KILLED_BUILD, str(cache)], capture_output=True, timeout=300)
    assert done.returncode == -9
    [left] = list(cache.glob(".building-*"))
    assert (left / "model" / "model.onnx").is_file()
    running = cache / ".building-float32-0123456789abcdef01234567-xyz"  # a build of another model, running
    running.mkdir()
    unnamed_old, unnamed_new = cache / ".building-abc123", cache / ".building-def456"  # the older naming
    unnamed_old.mkdir()
    unnamed_new.mkdir()
    week_ago = time.time() - 7 * 24 * 3600
    os.utime(unnamed_old, (week_ago, week_ago))
    monkeypatch.setattr(ort_build, "build", fake_build)
    with open(cache / "float32-0123456789abcdef01234567.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        target = ort_build.onnx_model("all-MiniLM-L6-v2", "int8", cache)
    assert (target / ort_build.MODEL_FILE).read_bytes() == b"onnx"
    assert not left.exists()  # what the killed build of this model left, removed
    assert target.name in left.name
    assert sorted(p.name for p in cache.glob(".building-*")) == sorted([running.name, unnamed_new.name])
