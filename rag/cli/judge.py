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
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rag.cli.common import EXIT_OK, ArgumentParser
from rag.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="rag-bench judge", description="Grade a run's pool (the union of every method's "
                            "top-k per question), blind, on a page on this machine.")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory (it holds pool.json)")
    parser.add_argument("--judge", help="your name in the grade file (default: the OS user; with --import: the file's name)")
    parser.add_argument("--order", choices=("mtc", "depth"), default="mtc",
                        help="mtc: the passage that can change the verdict most first (default); depth: question by "
                             "question, the whole pool")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--export", choices=("qrels", "quepid"), help="write the combined grades to --out and exit")
    parser.add_argument("--import", dest="import_file", type=Path, metavar="FILE",
                        help="append the grades of a TREC qrels file or a Quepid CSV (query,docid,rating) and exit")
    parser.add_argument("--out", type=Path, help="with --export: the file to write")
    parser.add_argument("--trust-llm", action="store_true", help="with --export: an LLM judge's grades count too")
    parser.add_argument("--llm", action="store_true", help="grade the pool with an LLM (UMBRELA's prompt) and exit")
    parser.add_argument("--base-url", help="with --llm: an OpenAI-compatible endpoint (default: the run's generator, "
                                           "else the local SmolLM2)")
    parser.add_argument("--model", help="with --llm and --base-url: the model name")
    parser.add_argument("--api-key-env", help="with --llm and --base-url: the environment variable holding the API key")
    parser.add_argument("--limit", type=int, help="with --llm: grade at most N passages (MTC order)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    from rag.judging.store import default_judge

    if args.export is not None:
        from rag.judging.exchange import export_grades

        if args.out is None:
            raise ConfigError("--out", "required with --export: the file to write")
        count = export_grades(args.run_dir, args.export, args.out, args.trust_llm)
        print(f"wrote {count} grades to {args.out} ({args.export})")
        return EXIT_OK
    if args.import_file is not None:
        from rag.judging.exchange import import_grades

        count, judge = import_grades(args.run_dir, args.import_file, args.judge)
        print(f"imported {count} grades from {args.import_file} as judge {judge!r} into "
              f"{args.run_dir / 'judgments.jsonl'}")
        return EXIT_OK
    if args.llm:
        from rag.judging.llm import judge_with_llm

        for line in judge_with_llm(args.run_dir, args.base_url, args.model, args.api_key_env, args.limit,
                                   progress=not args.quiet):
            print(line, flush=True)
        return EXIT_OK
    from rag.judging.server import JudgingServer
    from rag.judging.session import JudgingSession

    session = JudgingSession(args.run_dir, args.judge or default_judge(), args.order)
    try:
        server = JudgingServer(session, args.port)
    except OSError as exc:
        raise ConfigError("--port", f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
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
