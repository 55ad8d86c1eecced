"""Ctrl-C tests must not depend on how the test run was started. A background job of a shell without
job control (``pytest ... &`` in a script) inherits SIGINT ignored, and so does every process it
starts; the interruption test then waited 120 s on a run that never saw its Ctrl-C (issue 44)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rag.testing import StandInProcess

from .conftest import start_foreground

PRINT_SIGINT = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"


@contextmanager
def sigint_ignored() -> Iterator[None]:
    """This process as a background job of a non-interactive shell starts it: SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_child_started_in_the_foreground_takes_ctrl_c_even_from_a_parent_that_ignores_it() -> None:
    with sigint_ignored():
        process = start_foreground([sys.executable, "-c", PRINT_SIGINT])
        out, err = process.communicate(timeout=60)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # the parent's own disposition is back
    assert out.strip() == "True", err


def test_the_stand_in_process_stops_on_ctrl_c_and_reports_its_counters_even_when_started_in_the_background() -> None:
    with sigint_ignored(), StandInProcess() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
    assert server.stats is not None and server.stats["requests"] == 0
