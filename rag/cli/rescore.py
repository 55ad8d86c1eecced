"""``rag-bench rescore RUN_DIR``: the run scored against its judgments (``RUN_DIR/judgments.jsonl``),
with the recommendation's usual rules (power, questions that cannot judge, costs), and what the
verdict stands on: which judges, how many judgments, how many questions, judged@k per method and
the condensed-list value beside the trec one (:mod:`rag.judging.verdict`).

The run's plan (``plan.json``) is run again with the judgments as gold, without answers; retrieval
comes from the run's caches, so this takes seconds. The plan's paths are relative to the directory
the run was started in: rescore from there. The result is a run directory of its own
(``RUN_DIR/rescored/<UTC timestamp>`` unless ``--output-dir``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from rag.cli.common import EXIT_OK, ArgumentParser, add_margin_option
from rag.errors import ConfigError, DataError


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="rag-bench rescore", description="Score a run against its judgments.")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the judged run directory")
    parser.add_argument("--judgments", type=Path, metavar="FILE",
                        help="the grade file (default: RUN_DIR/judgments.jsonl)")
    parser.add_argument("--trust-llm", action="store_true",
                        help="an LLM judge's grades count (where no person graded the passage)")
    parser.add_argument("--judges", help="comma-separated judge names: only their grades count")
    parser.add_argument("--output-dir", type=Path, help="the rescored run's directory (default: RUN_DIR/rescored/<time>)")
    parser.add_argument("--verbose", action="store_true", help="every set's and metric's verdict")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_margin_option(parser)
    return parser


def plan_config(run_dir: Path):
    """The run's config from its plan, answers off; its data must be where the plan says."""
    from rag.config import config_from_mapping

    plan_path = run_dir / "plan.json"
    if not plan_path.is_file():
        raise DataError(run_dir, "not a run directory (no plan.json)")
    try:
        plan = json.loads(plan_path.read_text(encoding="utf-8"))
        record = plan["config"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(plan_path, f"not a run's plan: {exc}") from None
    config = config_from_mapping(record, base_dir=Path.cwd(), source=plan_path)
    dataset = config.dataset.root
    data_path = getattr(dataset, "path", None) or getattr(dataset, "corpus", None)
    if data_path is not None and not Path(data_path).exists():
        raise ConfigError("dataset", f"{data_path} not found: the plan's paths are relative to the directory the run "
                                     "was started in; run rescore from there", source=plan_path)
    return config.model_copy(update={"generation": None})


def main(argv: Sequence[str], use_redactor) -> int:
    args = build_parser().parse_args(argv)
    import os

    from rag.progress import PROGRESS_ENV
    from rag.runner.pipeline import RunOptions, run_benchmark
    from rag.runner.summary import summary_text
    from rag.judging.verdict import coverage
    from rag.secrets import Redactor
    from rag.terminal import fit

    if args.quiet:
        os.environ[PROGRESS_ENV] = "off"
    config = plan_config(args.run_dir)
    if args.margin is not None:
        config = config.model_copy(update={"evaluation": config.evaluation.model_copy(update={"margin": args.margin})})
    from rag.cli.common import judge_names
    from rag.judging.apply import check_inputs

    check_inputs(args.run_dir, args.judgments or args.run_dir / "judgments.jsonl",
                 judge_names(args.judges) if args.judges else None)  # before any work: a bad input writes nothing
    redactor = use_redactor(Redactor.for_config(config))
    judgments = args.judgments or args.run_dir / "judgments.jsonl"
    if not judgments.is_file():
        raise DataError(judgments, f"no grades yet: judge the pool first (rag-bench judge {args.run_dir})")
    judges = tuple(name.strip() for name in args.judges.split(",")) if args.judges else None
    output = args.output_dir or args.run_dir / "rescored" / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    result = run_benchmark(config, RunOptions(output_dir=output.resolve(), progress=not args.quiet,
                                              judgments=judgments.resolve(), trust_llm=args.trust_llm, judges=judges,
                                              pool=args.run_dir.resolve()))
    print(fit(redactor.text(summary_text(result, verbose=args.verbose))))
    original = json.loads((args.run_dir / "manifest.json").read_text(encoding="utf-8")).get("chunks", {}).get("sha256")
    lines = basis_lines(result, coverage(result.run_dir, result.manifest.get("methods", []), _primary(result)), original)
    print(fit("\n".join(lines)))
    return EXIT_OK


def _shown(qids: list[str]) -> str:
    return ", ".join(qids[:10]) + (" ..." if len(qids) > 10 else "")


def _primary(result) -> str:
    recommendation = result.comparison.recommendation
    return recommendation.primary if recommendation is not None else "ndcg@10"


def basis_lines(result, cover: dict, original_chunks: str | None) -> list[str]:
    """What the verdict stands on (module docstring), for the terminal."""
    from rag.runner.report import judged_fact

    lines = [f"Verdict stands on {judged_fact(result.manifest.get('judged', {}))}."]
    k = cover["k"]
    if cover["methods"]:
        primary = _primary(result)
        lines.append(f"judged@{k} (share of each method's top {k} that was graded) and condensed {primary} "
                     "(unjudged removed, Sakai 2007): " + "; ".join(
                         f"{m} {v[f'judged@{k}']:.2f} / {v[f'condensed {primary}']:.3f}" for m, v in cover["methods"].items()))
    if cover["unanswered"]:
        lines.append(f"No method answers {len(cover['unanswered'])} question(s) (every passage of every method's "
                     f"top {k} graded, none 2 or 3): {_shown(cover['unanswered'])}")
    if cover["not_yet_answered"]:
        lines.append(f"{len(cover['not_yet_answered'])} question(s) have no passage graded 2 or 3 yet, but unjudged "
                     f"passages in a method's top {k} (ones every method ranks alike are never asked for): "
                     f"{_shown(cover['not_yet_answered'])}")
    if original_chunks and result.manifest.get("chunks", {}).get("sha256") != original_chunks:
        lines.insert(0, "WARNING the documents or the chunking changed since the judged run: the grades are of "
                        "the run's passages; check the lines above")
    lines.append(f"Rescored run: {result.run_dir}")
    return lines
