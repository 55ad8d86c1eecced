"""``rag-bench judge RUN_DIR``: grade a run's pool on a page served on this machine, or move grades
in and out (:mod:`rag.judging`).

* ``rag-bench judge RUN_DIR [--judge NAME] [--order mtc|depth] [--port N]``: serves the judging page
  on 127.0.0.1 (a free port unless ``--port``), prints its address and where judging stands, and
  runs until Ctrl-C; every grade is already on disk (``RUN_DIR/judgments.jsonl``).
* ``--export qrels|quepid --out FILE``: the combined grades as TREC qrels (``<set>/<qid> 0 <chunk id>
  <grade>``) or Quepid's basic CSV (``query,docid,rating``).
* ``--import FILE [--judge NAME]``: TREC qrels or a Quepid CSV (by the file's first line) appended to
  the grade file, as judge NAME (default: the file's name).
* ``--llm``: grade the pool with UMBRELA's prompt (:mod:`rag.judging.llm`) as judge ``llm:<model>``.

The three are one each, and an option of another (``--out`` without ``--export``, ``--limit``
without ``--llm``, ``--port`` with ``--import``) is refused rather than ignored. The grade file is
checked against the run's pool by one rule (:mod:`rag.judging.lines`) before anything is served,
written or sent.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rag.cli.common import EXIT_OK, ArgumentParser, add_margin_option, bounded_int
from rag.errors import ConfigError
from rag.io_utils import is_standard_output
from rag.judging.store import judge_name_problem

#: option (its dest) -> the modes it belongs to; ``serve`` is the page
MODE_OPTIONS = {"out": ("export",), "trust_llm": ("export",), "base_url": ("llm",), "model": ("llm",),
                "api_key_env": ("llm",), "limit": ("llm",), "order": ("serve",), "port": ("serve",),
                "judge": ("serve", "import"), "margin": ("serve",)}
DEFAULTS = {"order": "mtc", "trust_llm": False}


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="rag-bench judge", description="Grade a run's pool (the union of every method's "
                            "top-k per question), blind, on a page on this machine.")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory (it holds pool.json)")
    parser.add_argument("--judge", help="your name in the grade file (default: the OS user; with --import: the file's "
                                        "name); no comma or control character")
    parser.add_argument("--order", choices=("mtc", "depth"), default="mtc",
                        help="mtc: the passage that can change the verdict most first (default); depth: question by "
                             "question, the whole pool")
    parser.add_argument("--port", type=bounded_int(1, 65535), help="port on 127.0.0.1, 1-65535 (default: a free one)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--export", choices=("qrels", "quepid"), help="write the combined grades to --out and exit")
    mode.add_argument("--import", dest="import_file", type=Path, metavar="FILE",
                      help="append the grades of a TREC qrels file or a Quepid CSV (query,docid,rating) and exit")
    mode.add_argument("--llm", action="store_true", help="grade the pool with an LLM (UMBRELA's prompt) and exit")
    parser.add_argument("--out", type=Path, help="with --export: the file to write (not one of the run's own files)")
    parser.add_argument("--trust-llm", action="store_true", help="with --export: an LLM judge's grades count too")
    parser.add_argument("--base-url", help="with --llm: an OpenAI-compatible endpoint (default: the run's generator, "
                                           "else the local SmolLM2)")
    parser.add_argument("--model", help="with --llm and --base-url: the model name")
    parser.add_argument("--api-key-env", help="with --llm and --base-url: the environment variable holding the API key")
    parser.add_argument("--limit", type=bounded_int(1), help="with --llm: grade at most N >= 1 passages (MTC order)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_margin_option(parser)
    return parser


def chosen_mode(args: argparse.Namespace) -> str:
    """``export``, ``import``, ``llm`` or ``serve``; an option of another mode is a :class:`ConfigError`."""
    mode = "export" if args.export else "import" if args.import_file is not None else "llm" if args.llm else "serve"
    for dest, modes in MODE_OPTIONS.items():
        value = getattr(args, dest)
        if mode not in modes and value is not None and value != DEFAULTS.get(dest):
            option = "--" + dest.replace("_", "-")
            wanted = " or ".join("the page" if m == "serve" else f"--{m}" for m in modes)
            used = "the page" if mode == "serve" else f"--{mode}"
            raise ConfigError(option, f"goes with {wanted}, not with {used}")
    if args.judge is not None and (problem := judge_name_problem(args.judge)):
        raise ConfigError("--judge", problem)
    return mode


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    mode = chosen_mode(args)
    if args.quiet:
        from rag.progress import PROGRESS_ENV

        os.environ[PROGRESS_ENV] = "off"  # every bar, the generator's and the libraries' (rag.cli restores it)
    if mode == "export":
        from rag.judging.exchange import export_grades

        if args.out is None:
            raise ConfigError("--out", "required with --export: the file to write")
        count = export_grades(args.run_dir, args.export, args.out, args.trust_llm)
        print(f"wrote {count} grades to {args.out} ({args.export})",  # not into the grades on standard output
              file=sys.stderr if is_standard_output(args.out) else sys.stdout)
        return EXIT_OK
    if mode == "import":
        from rag.judging.exchange import import_grades

        count, judge = import_grades(args.run_dir, args.import_file, args.judge)
        print(f"imported {count} grades from {args.import_file} as judge {judge!r} into "
              f"{args.run_dir / 'judgments.jsonl'}")
        return EXIT_OK
    from rag.judging.lines import check_grade_file

    check_grade_file(args.run_dir)
    if mode == "llm":
        from rag.judging.llm import judge_with_llm

        for line in judge_with_llm(args.run_dir, args.base_url, args.model, args.api_key_env, args.limit,
                                   progress=not args.quiet):
            print(line, flush=True)
        return EXIT_OK
    return serve(args)


def serve(args: argparse.Namespace) -> int:
    """The judging page until Ctrl-C."""
    from rag.judging.server import JudgingServer
    from rag.judging.session import JudgingSession
    from rag.judging.store import default_judge

    port = args.port or 0
    session = JudgingSession(args.run_dir, args.judge or default_judge(), args.order, margin=args.margin)
    try:
        server = JudgingServer(session, port)
    except OSError as exc:
        raise ConfigError("--port", f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    status = session.status()
    print(f"Judging {args.run_dir} as {session.judge!r} ({args.order} order): open {server.url}", flush=True)
    for s in status["sets"]:
        print(f"  {s['name']}: {s['questions']} questions, {s['pooled']} pooled passages, {s['judged']} judged by you"
              + (", decided" if s["decided"] else ""), flush=True)
    print("Every grade is saved the moment it is given. Ctrl-C stops the server; "
          f"then: rag-bench rescore {args.run_dir}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print(f"\nstopped; grades are in {args.run_dir / 'judgments.jsonl'}. Verdict: rag-bench rescore {args.run_dir}",
              file=sys.stderr)
    finally:
        server.server_close()
    return EXIT_OK
