"""``rag-bench questions``: a question set made from a configured corpus, or a reviewed one applied.

    rag-bench questions --config C --out FILE [--n-questions N] [--question-generator template|llm] [--seed S]
                        [--set K=V]
    rag-bench questions --apply-review FILE.review.csv --out FILE

The first writes FILE (our question JSONL), its provenance (``FILE-stem.provenance.json``) and the
review files (``.review.csv``, ``.review.html``), and prints the counts, the failures, the filter
table and the lexical bias (:mod:`rag.data.questions`). The second writes the accepted rows of a
reviewed CSV as FILE. Both print one line and exit 2 on bad input.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tabulate import tabulate

from rag.cli.common import EXIT_OK, ArgumentParser, add_hidden_alias, add_seed_option
from rag.errors import ConfigError
from rag.progress import PROGRESS_ENV
from rag.secrets import Redactor


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="rag-bench questions",
                            description="Make a question set from a configured corpus, or apply a review.")
    parser.add_argument("--config", type=Path, help="YAML run configuration (its dataset, chunking and generator)")
    parser.add_argument("--out", type=Path, required=True, help="question file to write (JSONL)")
    parser.add_argument("--n-questions", type=int, default=50, metavar="N", help="questions wanted (default 50)")
    parser.add_argument("--question-generator", choices=("llm", "template"), default="template",
                        help="template: offline, no LLM (the default); llm: the configured LLM (point it at a "
                             "capable endpoint: the local SmolLM2 keeps few questions, docs/data.md)")
    add_hidden_alias(parser, "--n", "n_questions", type=int)  # the names before issue 43
    add_hidden_alias(parser, "--generator", "question_generator", choices=("llm", "template"))
    add_seed_option(parser, "the sampling seed (default: the config's seed)")
    parser.add_argument("--apply-review", type=Path, metavar="CSV",
                        help="write the accepted rows of a reviewed .review.csv as --out instead")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value (parsed as YAML); repeatable")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser


def main(argv: Sequence[str], use_redactor) -> int:
    args = build_parser().parse_args(argv)
    if args.quiet:
        os.environ[PROGRESS_ENV] = "off"
    if args.apply_review is not None:
        from rag.data.questions.review import apply_review

        counts = apply_review(args.apply_review, args.out)
        print(f"{counts['accepted']} accepted ({counts['edited']} edited), {counts['rejected']} rejected, "
              f"{counts['unreviewed']} unreviewed -> {args.out}")
        return EXIT_OK
    if args.config is None:
        raise ConfigError("--config", "required (or --apply-review CSV)")
    if args.n_questions < 1:
        raise ConfigError("--n-questions", f"{args.n_questions}: expected at least 1")
    from rag.config import load_config
    from rag.runner.questions import copy_question_file, make_questions
    from rag.data.questions.provenance import provenance_fact
    from rag.data.questions.review import write_review

    config = load_config(args.config, args.overrides)
    redactor = use_redactor(Redactor.for_config(config))
    result = make_questions(config, args.n_questions, args.question_generator, args.seed, progress=not args.quiet)
    out = copy_question_file(result.path, args.out)
    csv_path, html_path = write_review(out, result.questions, result.chunk_text,
                                       [provenance_fact(out.name, result.provenance)], result.provenance.get("filters", []))
    print(redactor.text(summary(result.provenance, result.cached, out, csv_path, html_path)))
    return EXIT_OK


def summary(provenance: dict[str, Any], cached: bool, out: Path, csv_path: Path, html_path: Path) -> str:
    """The counts, the failures, the filter table, the lexical bias and the leak, as printed."""
    model = f" ({provenance['model']})" if provenance.get("model") else ""
    lines = [
        f"{provenance['written']} of {provenance['requested']} questions written to {out}"
        f"{' (from the cache)' if cached else ''}; generator {provenance['generator']}{model}, seed {provenance['seed']}",
        f"chunks tried: {provenance['candidates']} of {provenance['chunks']} ({provenance['documents']} documents); "
        f"made after the last needed one: {provenance['not_needed']}; {provenance['seconds']} s",
        "failures: " + (", ".join(f"{k} {v}" for k, v in provenance["failures"].items()) or "none"),
        tabulate([[r["filter"], r["keeps"], r["in"], r["removed"]] for r in provenance["filters"]],
                 headers=["filter", "keeps", "in", "removed"], tablefmt="github"),
    ]
    bias = provenance["lexical_bias"]
    if bias.get("questions"):
        lines.append(
            f"lexical bias (share of a question's content words found in its chunk): mean {bias['mean']:.2f}, "
            f"quartiles {bias['p25']:.2f} / {bias['median']:.2f} / {bias['p75']:.2f}, all words copied "
            f"{bias['all_words_copied']:.0%}; histogram " + ", ".join(f"{k}: {v}" for k, v in bias["histogram"].items()))
    made_leak = provenance.get("leak") or {}
    if made_leak.get("questions"):
        lines.append(f"leak (questions naming their gold document's title, file or page name): {made_leak['share']:.0%} "
                     f"({made_leak['leaked']} of {made_leak['questions']})")
    lines.append(f"review: fill the accept column of {csv_path} (page: {html_path}), then "
                 f"rag-bench questions --apply-review {csv_path} --out FILE")
    return "\n".join(lines)
