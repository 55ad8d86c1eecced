"""Does a synthetic question set rank the methods as a third-party set does? (docs/data.md, "Validity")

Usage:
  python scripts/question_validity.py man-pages DIR --out FILE.jsonl
      third-party known-item questions from a man-page HTML manual's own one-line descriptions: the
      NAME line of each page ("git-stash - Stash the changes in a dirty working directory away"):
      question = the description with the page's name removed, gold = the page (its path relative
      to DIR, as a folder data set names it), answer = the page's name. A page whose description
      still names it (:mod:`rag.data.questions.leak`) is left out, and counted.
  python scripts/question_validity.py compare RUN_DIR --synthetic SET... --third-party SET...
                                      [--metric ndcg@10]
      for every (synthetic, third-party) pair of question sets of a finished retrieval run: Kendall's
      tau over the methods' means and the significant pairwise verdicts that contradict
      (:mod:`rag.results.validity`); the table is printed and written to RUN_DIR/validity.json.

A run with both sets: ``rag-bench run --docs DIR --questions`` reads one file, so give a config whose
``dataset.questions`` maps set names to files (docs/data.md has the commands used for the numbers).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from bs4 import BeautifulSoup
from tabulate import tabulate

from rag.data.questions.leak import document_names, names_gold, normalize
from rag.data.records import write_jsonl
from rag.results.compare_runs import read_run
from rag.results.comparison import StatisticsSettings
from rag.results.validity import agreement, agreement_rows

_NAME_LINE = re.compile(r"^\s*(?P<names>.+?)\s+-+\s+(?P<description>.+?)\s*$", re.DOTALL)


def name_line(html: str) -> tuple[str, str] | None:
    """(page names, description) of a man page's NAME section, or None when it has none."""
    soup = BeautifulSoup(html, "html.parser")
    heading = next((h for h in soup.find_all("h2") if h.get_text(strip=True) == "NAME"), None)
    body = heading.find_next_sibling() if heading is not None else None
    match = _NAME_LINE.match(" ".join(body.get_text(" ").split())) if body is not None else None
    return (match.group("names"), match.group("description")) if match else None


def without_names(description: str, names: str) -> str:
    """``description`` with every page name of ``names`` (comma-separated) removed, case-insensitively,
    whatever the punctuation between its words."""
    for name in names.split(","):
        words = normalize(name).split()
        if words:
            description = re.sub(r"[\W_]*".join(map(re.escape, words)), " ", description, flags=re.IGNORECASE)
    return " ".join(description.split()).strip(" -,:")


def man_page_questions(folder: Path) -> tuple[list[dict], int]:
    """The question records of every page of ``folder`` with a NAME line, and how many were left out."""
    records, left_out = [], 0
    for path in sorted(folder.rglob("*.html")):
        if path.is_symlink():
            continue
        found = name_line(path.read_text(encoding="utf-8", errors="replace"))
        if found is None:
            continue
        names, description = found
        relative = path.relative_to(folder).as_posix()
        question = without_names(description, names)
        if not question or names_gold(question, document_names(relative, names.split(",")[0])):
            left_out += 1
            continue
        records.append({"id": f"man-{len(records) + 1:04d}", "question": question, "gold_urls": [[relative]],
                        "answers": [names.split(",")[0].strip()], "type": "known_item", "source": "NAME line"})
    return records, left_out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pages = commands.add_parser("man-pages")
    pages.add_argument("folder", type=Path)
    pages.add_argument("--out", type=Path, required=True)
    compare = commands.add_parser("compare")
    compare.add_argument("run_dir", type=Path)
    compare.add_argument("--synthetic", nargs="+", required=True)
    compare.add_argument("--third-party", nargs="+", required=True)
    compare.add_argument("--metric", default="ndcg@10")
    args = parser.parse_args(argv)
    if args.command == "man-pages":
        if not args.folder.is_dir():
            print(f"error: {args.folder}: not a folder; expected a man-page HTML manual", file=sys.stderr)
            return 2
        records, left_out = man_page_questions(args.folder)
        write_jsonl(args.out, records)
        print(f"{len(records)} questions written to {args.out}; {left_out} pages left out (description names the page)")
        return 0
    per_query, _ = read_run(args.run_dir)
    sets = set(per_query["question_set"])
    missing = [name for name in [*args.synthetic, *args.third_party] if name not in sets]
    if missing:
        print(f"error: {args.run_dir}: no question set {', '.join(missing)}; the run has {', '.join(sorted(sets))}",
              file=sys.stderr)
        return 2
    if args.metric not in per_query:
        print(f"error: --metric {args.metric}: not a column of the run's per_query.csv", file=sys.stderr)
        return 2
    settings = StatisticsSettings()
    rows = agreement_rows([agreement(per_query, synthetic, third_party, args.metric, settings)
                           for synthetic in args.synthetic for third_party in args.third_party])
    (args.run_dir / "validity.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(tabulate(rows, headers="keys", tablefmt="github"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
