"""``rag-bench run --config C [options]`` (also ``rag-bench --config C``, and
``python scripts/run_benchmark.py --config C``): one benchmark run, printed as the terminal summary.

``rag-bench run --docs DIR [--questions FILE]``: the same on a folder of documents, with questions
made from them unless a file is given (:mod:`rag.runner.documents`). ``--config documents --set
dataset.path=DIR`` is the same run: a config whose data set is a folder of files and names no
``dataset.questions`` gets questions made from its documents too (``--n-questions``,
``--question-generator``)."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path

from rag.cli.common import (
    EXIT_ANSWERS_FAILED, EXIT_OK, ArgumentParser, add_judgment_options, add_selection_options, judgment_options,
    overrides_from_args,
)
from rag.errors import ConfigError
from rag.progress import PROGRESS_ENV
from rag.secrets import Redactor
from rag.terminal import fit


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="rag-bench run", description="Compare retrieval strategies end to end.")
    parser.add_argument("--config", type=Path,
                        help="YAML run configuration, or a built-in config name (smoke, wiki, documents; an existing "
                             "file wins); required unless --docs is given")
    documents = parser.add_argument_group("your documents")
    documents.add_argument("--docs", type=Path, metavar="DIR",
                           help="a folder of .md/.html/.xhtml/.pdf/.docx/.rst/.txt files as the data set (with the built-in "
                                "'documents' config unless --config names another folder-of-files config)")
    documents.add_argument("--questions", type=Path, metavar="FILE",
                           help="with --docs: a question file (our JSONL); default: questions made from the documents")
    documents.add_argument("--n-questions", type=int, default=50, metavar="N",
                           help="a folder of documents without a question file (--docs DIR without --questions, or a "
                                "files config without dataset.questions): how many questions to make (default 50)")
    documents.add_argument("--question-generator", choices=("llm", "template"), default="template",
                           help="when questions are made (as for --n-questions): template (offline, no LLM; the default) or llm "
                                "(the config's LLM: point it at a capable endpoint, docs/data.md)")
    parser.add_argument("--output-dir", type=Path, help="run directory (default: <output_dir>/<name>/<timestamp>)")
    add_selection_options(parser)
    parser.add_argument("--no-generation", action="store_true", help="skip answer generation")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run (same config)")
    parser.add_argument("--verbose", action="store_true",
                        help="print the verdict of every question set and metric below the recommendation")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="skip invalid data records (counted in the manifest and report) instead of failing")
    parser.add_argument("--run", dest="run_files", action="append", default=[], metavar="NAME=FILE",
                        help="add your own retriever's rankings as method NAME: a TREC run file answering the run's "
                             "questions.tsv with its chunk ids or page URLs (docs/your-retriever.md); repeatable")
    parser.add_argument("--strict", action="store_true",
                        help="a files data set: an unreadable file is an error instead of skipped (dataset.strict)")
    add_judgment_options(parser)
    return parser


def main(argv: Sequence[str], use_redactor) -> int:
    """Run the benchmark; ``use_redactor`` (from :func:`rag.cli.main`) installs the run's redactor for
    every line printed from here on, the failure line included."""
    args = build_parser().parse_args(argv)
    judged = judgment_options(args)  # checked before any work
    if args.quiet:
        os.environ[PROGRESS_ENV] = "off"  # every bar of ours, and the libraries' (rag.progress); rag.cli restores it
    config = _config(args)
    redactor = use_redactor(Redactor.for_config(config))
    earlier: dict[str, float] = {}
    if _makes_questions(args, config):
        from rag.data.questions.provenance import provenance_fact
        from rag.runner.documents import with_made_questions

        began = time.perf_counter()
        config, made = with_made_questions(config, args.n_questions, args.question_generator, progress=not args.quiet)
        earlier["questions"] = time.perf_counter() - began
        print(fit(redactor.text(provenance_fact("your documents", made.provenance)
                                + (" (cached)" if made.cached else ""))), flush=True)
    from rag.runner.pipeline import RunOptions, run_benchmark
    from rag.runner.summary import summary_text

    options = RunOptions(output_dir=args.output_dir.resolve() if args.output_dir else None,
                         resume=args.resume, skip_invalid=args.skip_invalid, progress=not args.quiet,
                         earlier_stages=earlier, **judged)
    result = run_benchmark(config, options)
    print(fit(redactor.text(summary_text(result, verbose=args.verbose))))
    return EXIT_ANSWERS_FAILED if result.answers.experiment_failed else EXIT_OK


def _makes_questions(args: argparse.Namespace, config) -> bool:
    """Questions are made from the documents for ``--docs DIR`` without ``--questions``, and for a config
    whose data set is a folder of files (``--config documents --set dataset.path=DIR``) without
    ``dataset.questions``: the same run either way."""
    if args.docs is not None:
        return args.questions is None
    return config.dataset.format == "files" and config.dataset.root.questions is None


def with_run_files(config, given: Sequence[str]):
    """``config`` with a ``run_file`` method for each ``--run NAME=FILE`` (:mod:`rag.retrievers.run_file`)."""
    from rag.config import with_retrievers
    from rag.retrievers.run_file import run_file_entries

    return with_retrievers(config, run_file_entries(given), "--run")


def _config(args: argparse.Namespace):
    """The run's config: ``--config`` with the overrides, or for ``--docs`` the folder's config; with
    ``--strict``, ``dataset.strict`` set (part of the config, so of the run's plan)."""
    from rag.config import load_config  # imported here so `--help` stays fast
    from rag.runner.documents import documents_config

    if args.docs is None and (args.questions is not None):
        raise ConfigError("--questions", "goes with --docs DIR; with --config, set dataset.questions in the config")
    overrides, strict = overrides_from_args(args), ["dataset.strict=true"] if args.strict else []
    if args.docs is not None:
        return with_run_files(documents_config(args.docs, args.config, overrides + strict, args.questions),
                              args.run_files)
    if args.config is None:
        raise ConfigError("--config", "required (a YAML run configuration or a built-in name), or --docs DIR")
    config = load_config(args.config, overrides)
    if args.strict:
        if config.dataset.format != "files":
            raise ConfigError("--strict", f"applies to a folder of files (dataset.format: files), not to "
                              f"{config.dataset.format!r}; bad records of other formats fail unless --skip-invalid")
        config = load_config(args.config, overrides + strict)
    return with_run_files(config, args.run_files)
