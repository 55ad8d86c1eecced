"""Run a sweep: every grid point's retrieval metrics, the held-out selection, the sweep directory.

Sweeps are retrieval-only (the config's ``generation`` section is switched off, as with
``--no-generation``): the selection metric is a retrieval metric, and answering every question at
every point with an LLM would multiply the slowest stage by the grid's size.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from rag.progress import progress as progress_bar

from evaluation.metrics import parse_metric
from rag.config import RunConfig, config_record, load_config, portable_path, read_config_mapping
from rag.errors import ConfigError
from rag.endpoints.keys import check_endpoint_keys
from rag.manifest import Manifest
from rag.secrets import Redactor
from rag.runner.rundir import open_run_directory, resumable
from rag.runner.scoring import CHUNK_PREFIX
from rag.sweep.evaluate import SweepEvaluator
from rag.sweep.grid import CONFIG_POINT, DEFAULT_MAX_POINTS, GridAxis, GridPoint, config_point, grid_points, parse_grid
from rag.sweep.outputs import SweepSummary, write_sweep_files
from rag.sweep.plots import write_plots
from rag.sweep.select import Statistics, point_table, select, touching_keys
from rag.sweep.split import DEFAULT_DEV_FRACTION, DEV, split_all

@dataclass(frozen=True)
class SweepRequest:
    config: Path
    grid: Sequence[str]
    overrides: Sequence[str] = ()
    dev_fraction: float = DEFAULT_DEV_FRACTION
    select: str | None = None
    output_dir: Path | None = None
    progress: bool = True
    resume: bool = False
    max_points: int = DEFAULT_MAX_POINTS


@dataclass(frozen=True)
class SweepResult:
    summary: SweepSummary
    table: pd.DataFrame
    seconds: float
    distinct_evaluations: int


def selection_column(config: RunConfig, select: str | None) -> str:
    """The per-question column the choice is made on: ``--select`` (a configured metric, optionally
    ``chunk:``-prefixed for the chunk level) or the first configured metric at the first level."""
    levels = config.evaluation.levels
    columns = [f"{'' if level == 'url' else CHUNK_PREFIX}{metric}" for level in levels for metric in config.evaluation.metrics]
    if select is None:
        return columns[0]
    prefix = CHUNK_PREFIX if select.startswith(CHUNK_PREFIX) else ""
    try:
        column = prefix + parse_metric(select.removeprefix(prefix)).column
    except ValueError as exc:
        raise ConfigError("--select", str(exc)) from None
    if column not in columns:
        raise ConfigError("--select", f"{select!r} is not among the evaluated metrics; expected one of {columns}")
    return column


def run_sweep(request: SweepRequest) -> SweepResult:
    started = time.perf_counter()
    overrides = [*request.overrides, "generation=null"]
    base = load_config(request.config, overrides)
    axes = [parse_grid(text) for text in request.grid]
    check_endpoint_keys(base)  # an endpoint embedder without a usable key: fail before any work
    raw, base_dir, source = read_config_mapping(request.config, overrides)
    points = grid_points(raw, axes, base_dir.resolve(), source, request.max_points)
    points.append(config_point(base, axes))
    metric = selection_column(base, request.select)
    stats = Statistics(metric, base.evaluation.confidence, base.evaluation.n_resamples, base.seed,
                       base.evaluation.alpha, base.evaluation.correction == "holm")
    evaluator = SweepEvaluator(base, request.progress)
    splits = split_all(evaluator.question_sets, request.dev_fraction, base.seed)

    redactor = Redactor.for_config(base)
    plan = redactor.deep({"config": config_record(base), "grid": [vars(axis) for axis in axes],
                          "dev_fraction": request.dev_fraction, "select": metric})
    run_dir = open_run_directory(base.output_dir, f"{base.name}-sweep", plan, request.output_dir, request.resume)
    with resumable(run_dir.path):
        manifest = Manifest(run_dir.path, redactor, kind="sweep", config=plan["config"], seed=base.seed,
                            resumed=run_dir.resumed, grid=plan["grid"], dev_fraction=request.dev_fraction,
                            select=metric, points=len(points) - 1)
        manifest.write()
        try:
            per_query = evaluate_points(evaluator, points, splits, request.progress)
            touched = touching_keys(per_query, points, axes)
            metrics = [c for c in per_query.columns
                       if c not in ("point", "identity", "method", "question_set", "qid", "split")]
            table = point_table(per_query, points, axes, metrics, stats)
            selection = select(per_query, points, touched, stats)
            plots = write_plots(run_dir.path, axes, points, table, selection, touched, metric)
            summary = SweepSummary(
                directory=run_dir.path, metric=metric, dev_fraction=request.dev_fraction, seed=base.seed,
                grid={axis.key: list(axis.values) for axis in axes}, selection=selection,
                verdicts=list(selection["verdict"]) if not selection.empty else [], plots=plots,
            )
            seconds = time.perf_counter() - started
            record = sweep_record(request, base, axes, points, splits, touched, evaluator, seconds)
            write_sweep_files(run_dir.path, table, summary, record, facts(record, evaluator))
        except BaseException as exc:
            manifest.finish("interrupted" if isinstance(exc, KeyboardInterrupt) else "failed",
                            timings=evaluator.timer.seconds, error=f"{type(exc).__name__}: {exc}")
            raise
        manifest.finish("complete", timings={**evaluator.timer.seconds, "total": seconds},
                        distinct_evaluations=evaluator.distinct_evaluations)
    return SweepResult(summary, table, seconds, evaluator.distinct_evaluations)


def evaluate_points(evaluator: SweepEvaluator, points: Sequence[GridPoint], splits: dict[str, dict[str, str]],
                    progress: bool) -> pd.DataFrame:
    """The long per-question table: point, method, identity, question set, qid, split, metrics."""
    frames = []
    for point in progress_bar(points, desc="sweep points", unit="point", enabled=progress):
        for method, (identity, scores) in evaluator.scores(point.config).items():
            frame = scores.copy()
            frame.insert(0, "point", point.id)
            frame.insert(1, "method", method)
            frame.insert(2, "identity", identity)
            frame.insert(5, "split", [splits[s][q] for s, q in zip(frame["question_set"], frame["qid"])])
            frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def sweep_record(request: SweepRequest, base: RunConfig, axes: Sequence[GridAxis], points: Sequence[GridPoint],
                 splits: dict[str, dict[str, str]], touched: dict[str, list[str]], evaluator: SweepEvaluator,
                 seconds: float) -> dict:
    """What sweep.json records besides the results."""
    return {
        "config": portable_path(request.config.resolve()),
        "config_name": base.name,
        "grid": [{"key": axis.key, "values": list(axis.values)} for axis in axes],
        "points": [{"id": p.id, "values": p.values} for p in points],
        "config_point": CONFIG_POINT,
        "methods_touched_by": touched,
        "split": {
            "dev_fraction": request.dev_fraction,
            "seed": base.seed,
            "rule": 'per question set: random.Random(f"sweep:{seed}:{set}").sample(sorted ids, round(fraction * n))',
            "sets": {name: {"dev": sorted(q for q, s in split.items() if s == DEV),
                            "test_questions": sum(s != DEV for s in split.values())} for name, split in splits.items()},
        },
        "seconds": round(seconds, 2),
        "distinct_evaluations": evaluator.distinct_evaluations,
        "timings": {name: round(value, 2) for name, value in evaluator.timer.seconds.items()},
    }


def facts(record: dict, evaluator: SweepEvaluator) -> list[str]:
    grid = "; ".join(f"{axis['key']} = {', '.join(map(str, axis['values']))}" for axis in record["grid"])
    sets = ", ".join(f"{name} {len(s['dev'])} dev / {s['test_questions']} test" for name, s in record["split"]["sets"].items())
    touched = "; ".join(f"{method}: {', '.join(keys) or 'not touched'}" for method, keys in record["methods_touched_by"].items())
    return [
        f"config {record['config_name']} ({record['config']}); grid {grid}: {len(record['points']) - 1} points "
        "plus the config's own setting",
        f"split (seed {record['split']['seed']}, dev fraction {record['split']['dev_fraction']}): {sets}",
        f"methods and the grid keys that change them: {touched}",
        f"time {record['seconds']:.1f} s; {evaluator.distinct_evaluations} distinct (method, setting) retrievals; "
        "everything else read from the caches",
    ]
