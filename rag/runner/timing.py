"""Wall-clock time per pipeline stage, recorded in the manifest and printed in the final summary."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class StageTimer:
    """Accumulates seconds per named stage (a stage entered twice adds up); ``on_stage_end`` is
    called with the timings after each stage (the runner uses it to keep the manifest current)."""

    def __init__(self, on_stage_end: Callable[[dict[str, float]], None] | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self.on_stage_end = on_stage_end

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            if self.on_stage_end is not None:
                self.on_stage_end(self.seconds)

    def discard(self, name: str) -> None:
        """Forget stage ``name``: a check that had nothing to check (no HNSW method, no int8 one) is
        not a stage of the run, and its 0.00 s would only be read as one."""
        self.seconds.pop(name, None)
