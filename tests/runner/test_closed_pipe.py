"""Issue 44, item 3: a reader that closes standard output early (``rag-bench -h | head -1``) is no
file-system error: the command exits 0 and prints nothing more (no "Broken pipe", no exit 74).

Real pipes, real processes: the oracle is the exit status the shell sees (``PIPESTATUS``) and the
standard error of the writer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rag.cli import SUBCOMMANDS

RAG_BENCH = Path(sys.executable).with_name("rag-bench")
WRITER = """
import sys
from rag.cli.common import quiet_on_closed_pipe

def command():
    for n in range(20000):  # far more than a pipe holds: the writer is still writing when the reader leaves
        print(f"line {n}")
    return 5

sys.exit(quiet_on_closed_pipe(command))
"""


def pipeline(writer: str, reader: str) -> tuple[int, str, str]:
    """(the writer's exit status, what the reader printed, the writer's standard error)."""
    done = subprocess.run(["bash", "-c", f"{writer} 2>writer.err | {reader}; echo \"status=${{PIPESTATUS[0]}}\""],
                          capture_output=True, text=True, timeout=120, cwd=Path.cwd())
    *printed, status = done.stdout.splitlines()
    return int(status.removeprefix("status=")), "\n".join(printed), Path("writer.err").read_text()


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_a_closed_pipe_is_a_quiet_exit_0(tmp_path: Path, monkeypatch, reader: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "writer.py").write_text(WRITER)
    status, printed, err = pipeline(f"{sys.executable} writer.py", reader)
    assert (status, err) == (0, "")
    assert printed == ("line 0" if reader == "head -1" else "")


def test_a_pipe_read_to_the_end_keeps_the_exit_code(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "writer.py").write_text(WRITER)
    status, printed, err = pipeline(f"{sys.executable} writer.py", "tail -1")
    assert (status, printed, err) == (5, "line 19999", "")


def test_a_broken_pipe_elsewhere_is_raised_on() -> None:
    from rag.cli.common import quiet_on_closed_pipe

    def command() -> int:
        raise BrokenPipeError(32, "Broken pipe")  # a socket's, say: standard output is fine

    with pytest.raises(BrokenPipeError):
        quiet_on_closed_pipe(command)


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_rag_bench_help_into_a_closed_pipe(tmp_path: Path, monkeypatch, reader: str) -> None:
    monkeypatch.chdir(tmp_path)
    status, printed, err = pipeline(f"{RAG_BENCH} -h", reader)
    assert (status, err) == (0, "")
    assert printed == (f"usage: rag-bench [run] --config C [options] | rag-bench {{{','.join(SUBCOMMANDS[1:])}}} ... "
                       "| rag-bench --version" if reader == "head -1" else "")
