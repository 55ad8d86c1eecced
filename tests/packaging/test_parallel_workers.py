"""The suite's parallel run (tests/conftest.py): each pytest-xdist worker is pinned to every N-th CPU
from its own index, so the thread pools it starts size themselves to its share."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def load_conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest_copy", CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_worker_gets_every_nth_cpu_from_its_index(monkeypatch) -> None:
    conftest = load_conftest()
    pinned: list[list[int]] = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4})
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cpus: pinned.append(list(cpus)))

    def worker(name: str, count: int):
        return conftest.pin_this_worker({"PYTEST_XDIST_WORKER": name, "PYTEST_XDIST_WORKER_COUNT": str(count)})

    assert worker("gw0", 2) == [0, 2, 4] and worker("gw1", 2) == [1, 3]
    assert worker("gw3", 4) == [3]
    assert worker("gw0", 1) is None  # one worker: nothing to share
    assert worker("gw0", 8) is None  # fewer CPUs than workers: left as they are
    assert conftest.pin_this_worker({}) is None  # not a worker (the main process, or -n 0)
    assert pinned == [[0, 2, 4], [1, 3], [3]]


def test_auto_asks_for_one_worker_per_usable_cpu_at_most_four(monkeypatch) -> None:
    conftest = load_conftest()
    for cpus, workers in ((1, 1), (2, 2), (3, 3), (16, 4)):
        monkeypatch.setattr(conftest, "usable_cpus", lambda n=cpus: n)
        assert conftest.pytest_xdist_auto_num_workers(None) == workers
