"""The run directory: where one run's outputs live, and the rules that keep runs apart.

- Without ``--output-dir`` a new run gets ``<output_dir>/<config name>/<UTC timestamp>`` (a suffix
  ``-2``, ``-3``... if that exists), so a second run never touches a first run's directory.
- ``--output-dir DIR`` names the run directory itself; a new run refuses a non-empty DIR.
- ``--resume`` continues DIR (or, without ``--output-dir``, the newest run of that config name).
  The run's plan (the effective config, CLI options folded in) is stored in ``plan.json`` at the
  start; resuming with a different plan is refused, since it would mix two experiments.
- A failure or interrupt after the run directory holds its plan is marked with that directory
  (:func:`resumable`), so the command line suggests ``--resume`` only when there is a run to
  resume (:func:`resumable_run`); before that point there is nothing to continue.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rag.errors import ConfigError
from rag.io_utils import atomic_write_json

PLAN_FILE = "plan.json"


RESUMABLE_ATTRIBUTE = "resumable_run"


@contextmanager
def resumable(path: Path) -> Iterator[None]:
    """Mark any exception raised inside (a failure, Ctrl-C, SIGTERM) with ``path``, the run directory
    that ``--resume`` continues (read back by :func:`resumable_run`); the exception propagates."""
    try:
        yield
    except BaseException as exc:
        setattr(exc, RESUMABLE_ATTRIBUTE, path)
        raise


def resumable_run(exc: BaseException) -> Path | None:
    """The run directory ``--resume`` continues after ``exc``; None when no run directory was opened."""
    return getattr(exc, RESUMABLE_ATTRIBUTE, None)


@dataclass(frozen=True)
class RunDirectory:
    path: Path
    resumed: bool

    def __truediv__(self, name: str) -> Path:
        return self.path / name


def open_run_directory(
    root: Path, config_name: str, plan: dict[str, Any], output_dir: Path | None, resume: bool
) -> RunDirectory:
    """Create (or, with ``resume``, reopen and check) the run directory and store the plan."""
    if resume:
        path = output_dir if output_dir is not None else _latest_run(root / config_name)
        _check_plan(path, plan)
        return RunDirectory(path, resumed=True)
    if output_dir is not None:
        if output_dir.exists() and not output_dir.is_dir():
            raise ConfigError("--output-dir", f"{output_dir} is a file; expected a new or empty directory")
        if output_dir.exists() and any(output_dir.iterdir()):
            raise ConfigError(
                "--output-dir",
                f"{output_dir} already exists and is not empty; expected a new or empty directory "
                "(use --resume to continue the run in it)",
            )
        output_dir.mkdir(parents=True, exist_ok=True)
        path = output_dir
    else:
        path = _new_timestamped_dir(root / config_name)
    atomic_write_json(path / PLAN_FILE, plan)
    return RunDirectory(path, resumed=False)


def _new_timestamped_dir(parent: Path) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(1, 1000):
        candidate = parent / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            candidate.mkdir()  # atomic: fails if another run took the name
            return candidate
        except FileExistsError:
            continue
    raise ConfigError("output_dir", f"could not create a new run directory under {parent}")


def _latest_run(parent: Path) -> Path:
    runs = sorted(p for p in parent.glob("*") if (p / PLAN_FILE).is_file()) if parent.is_dir() else []
    if not runs:
        raise ConfigError("--resume", f"no earlier run to resume under {parent}; expected a run directory there")
    return runs[-1]


def _check_plan(path: Path, plan: dict[str, Any]) -> None:
    plan_file = path / PLAN_FILE
    if not plan_file.is_file():
        raise ConfigError("--resume", f"{path} holds no run to resume (no {PLAN_FILE}); expected an earlier run directory")
    try:
        stored = json.loads(plan_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("--resume", f"{plan_file} is unreadable ({exc}); start a new run instead") from None
    current = json.loads(json.dumps(plan, default=str))
    if stored != current:
        raise ConfigError(
            "--resume",
            f"the run in {path} was made with a different configuration (differs in: "
            f"{', '.join(differences(stored, current)[:10])}); expected the same config and options, "
            "or start a new run",
        )


def differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths at which two JSON-like values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            path
            for key in sorted(set(old) | set(new), key=str)
            for path in differences(old.get(key), new.get(key), f"{prefix}{key}.")
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [path for i, (a, b) in enumerate(zip(old, new)) for path in differences(a, b, f"{prefix}{i}.")]
    return [] if old == new else [prefix.rstrip(".") or "<root>"]
