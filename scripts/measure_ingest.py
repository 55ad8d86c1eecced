"""Measure how clean the chunks of real folders are (docs/data.md, "Clean text: measured").

Usage: python scripts/measure_ingest.py FOLDER... [--baseline CHECKOUT]

Each folder is read as a ``files`` data set and chunked with the default settings by the code of this
checkout, or with ``--baseline`` by the code of another checkout (main before a change, say: the same
counters on the old code), in a subprocess whose ``sys.path`` starts with that checkout. Counted per
folder, in chunks (a chunk counts once per column):

- xml: an XML declaration, DOCTYPE, processing instruction or comment (``xml version=``, ``<!DOCTYPE``,
  ``<?``, ``<!--``) in a chunk of a markup file (not a PDF: there such text is printed on the page,
  as in fontconfig's manual, whose examples are XML files);
- markup: a reStructuredText directive line (``.. name::``), a role (``:name:`text```), a MyST
  directive fence (```` ```{name} ````, ``:::{name}``), a MyST role (``{name}`text```, not Git's
  ``@{upstream}``) or target (``(label)=``);
- boilerplate: a line of the furniture these folders are known to repeat: the manual's footer
  ("Last updated"), its suite line ("Part of the git(1) suite"), Chromium's print header (a date,
  a time and AM/PM) and footer (a ``file:///`` URL, then the page number ``n/N``);
- toc: a dot-leader line (a title, four dots or more, a page number);
- links: Markdown link or image syntax (``](``, ``][``) or a link reference definition line
  (``[label]: url``), outside code blocks and code spans;
- permalinks: a heading ending in a permalink marker (``¶``, ``#``, ``§``);
- ligatures: a Unicode ligature (U+FB00-U+FB06);
- hyphenation: in a chunk of a PDF, a word broken at a line end (a letter, ``-``, a line break, a
  lower-case letter; in the other formats a line break is the author's, read as a space);
- tiny: 30 tokens or fewer, in a document of more than one chunk;
- escapes: a Markdown backslash escape (a backslash before ASCII punctuation, ``\\_`` in
  ``XDG\\_CONFIG\\_HOME``), outside code blocks and code spans: the reader sees the backslash, and the
  ``simple`` tokenizer splits the identifier at it. Counted in documents, whose code fences pair up
  (a chunk can start inside a code block that the chunker split);
- duplicates: documents whose text equals an earlier document's (counted in documents).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CHUNKER = """
import json, sys
from rag.chunking import ChunkingConfig, chunk_documents
from rag.data import load_dataset
dataset = load_dataset({"format": "files", "path": sys.argv[1]})
chunks = chunk_documents(dataset.documents, ChunkingConfig(), progress=False)
json.dump({"documents": [d.text for d in dataset.documents],
           "chunks": [[c.doc_id, c.text, c.n_tokens] for c in chunks]}, open(sys.argv[2], "w"))
"""

COUNTERS = {
    "xml": re.compile(r"xml version=|<!DOCTYPE|<\?|<!--", re.IGNORECASE),
    "markup": re.compile(r"^[ \t]*\.\.[ \t]+[\w:.+-]+[ \t]*::|(?<![\w`]):[A-Za-z][\w:.+-]*:`|^[ \t]*(?:`{3,}|:{3,})\{"
                         r"|(?<![@$^\w-])\{[A-Za-z][\w:.+-]*\}`|^\([\w.-]+\)=[ \t]*$", re.MULTILINE),
    "boilerplate": re.compile(r"Last updated|Part of the git\(\d\) suite|\d+/\d+/\d+, \d+:\d+ [AP]M"
                              r"|file:///\S+[ \t]+\d+/\d+"),
    "toc": re.compile(r"(?:\.[ \t]?){4,}[ \t]*\d+[ \t]*$", re.MULTILINE),
    "links": re.compile(r"\]\((?!\))|\]\[|^ {0,3}\[[^\]^\n]+\]:[ \t]", re.MULTILINE),
    "permalinks": re.compile(r"^#+ .*[\u00b6#\u00a7]$", re.MULTILINE),
    "ligatures": re.compile("[\ufb00-\ufb06]"),
    "hyphenation": re.compile(r"[^\W\d_]-[ \t]*\n[ \t]*[a-z]"),
}
PDF_ONLY = {True: ("xml",), False: ("hyphenation",)}  # columns left out for PDF chunks / for other chunks
ESCAPE = re.compile(r"\\[!-/:-@\[-`{-~]")
TINY_TOKENS = 30
COLUMNS = ["documents", "chunks", *COUNTERS, "tiny", "escapes", "duplicates"]


def chunks_of(folder: Path, checkout: Path) -> dict:
    """The documents' texts and chunks of ``folder`` made by the code of ``checkout``."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(checkout)!r})\n" + CHUNKER,
                        str(folder), out.name], check=True, cwd=checkout, stderr=subprocess.DEVNULL)
        return json.loads(Path(out.name).read_text(encoding="utf-8"))


def _is_pdf(doc_id: str) -> bool:
    return doc_id.lower().endswith(".pdf")


def without_code(text: str) -> str:
    """``text`` without its fenced code blocks and code spans, where link syntax and backslashes are literal."""
    return re.sub(r"(`+)[\s\S]*?(?<!`)\1(?!`)", "", re.sub(r"^[ \t]*```[\s\S]*?^[ \t]*```", "", text, flags=re.MULTILINE))


def counts(data: dict) -> dict[str, int]:
    chunks = data["chunks"]
    per_document: dict[str, int] = {}
    for doc_id, _, _ in chunks:
        per_document[doc_id] = per_document.get(doc_id, 0) + 1
    row = {"documents": len(data["documents"]), "chunks": len(chunks)}
    row.update({name: sum(1 for doc_id, text, _ in chunks if name not in PDF_ONLY.get(_is_pdf(doc_id), ())
                          and rx.search(without_code(text) if name == "links" else text))
                for name, rx in COUNTERS.items()})
    row["tiny"] = sum(1 for doc_id, _, n in chunks if n <= TINY_TOKENS and per_document[doc_id] > 1)
    row["escapes"] = sum(1 for text in data["documents"] if ESCAPE.search(without_code(text)))
    row["duplicates"] = len(data["documents"]) - len(set(data["documents"]))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--baseline", type=Path, help="a checkout whose code is measured as well (main, say)")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parents[1]
    checkouts = [("before", args.baseline.resolve()), ("after", here)] if args.baseline else [("after", here)]
    print("| folder | code | " + " | ".join(COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for folder in args.folders:
        for label, checkout in checkouts:
            row = counts(chunks_of(folder.resolve(), checkout))
            print(f"| {folder.name} | {label} | " + " | ".join(str(row[c]) for c in COLUMNS) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
