"""Progress bars for long work: a live tqdm bar on a terminal, an occasional plain line when stderr
is a file or a pipe (a log keeps one line every 30 s, not a line of carriage returns), nothing with
``--quiet``.

The mode comes from the environment variable ``RAG_BENCH_PROGRESS`` (``auto`` default, or ``off``),
which the CLI sets for the duration of a run, so third-party bars (transformers' weight loading)
follow it too (:func:`library_bars_enabled`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from tqdm.auto import tqdm

PROGRESS_ENV = "RAG_BENCH_PROGRESS"
PLAIN_INTERVAL_S = 30.0


class _LineWriter:
    """A file for tqdm that turns its carriage-return redraws into whole lines."""

    def __init__(self, stream: Any):
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").strip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress_enabled() -> bool:
    return os.environ.get(PROGRESS_ENV, "auto") != "off"


def library_bars_enabled() -> bool:
    """Whether libraries may draw their own bars: only live, on a terminal."""
    return progress_enabled() and sys.stderr.isatty()


def progress(iterable: Iterable | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
             enabled: bool = True) -> tqdm:
    """A tqdm bar following the mode above (``enabled=False`` silences this one bar)."""
    if not (enabled and progress_enabled()):
        return tqdm(iterable, total=total, disable=True)
    if sys.stderr.isatty():
        return tqdm(iterable, total=total, desc=desc, unit=unit)
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=_LineWriter(sys.stderr), mininterval=PLAIN_INTERVAL_S,
                ascii=True, dynamic_ncols=False, ncols=100)
