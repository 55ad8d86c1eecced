"""Measure boilerplate removal on a folder of HTML pages (docs/data.md, "Boilerplate: measured").

Usage: python scripts/measure_boilerplate.py FOLDER [--footer TEXT]... (needs trafilatura and justext
installed; they are not dependencies of the project).

Candidates: trafilatura 2 (``extract``, tables and formatting kept), jusText 3 (English stop list, the
paragraphs it does not mark as boilerplate), and the project's own converter with its cross-document
line-frequency rule (``load_dataset`` of the folder, :mod:`rag.data.boilerplate`). Oracle: each page's
own markup. Its body is the element ``id="content"`` (AsciiDoc's, the HTML manual of Git); measured:

- body kept: share of the body's paragraphs (``<p>``, 40 characters or more) and code blocks
  (``<pre>``) found in the output, compared as lower-cased letters and digits;
- footer left: pages whose output still holds one of the ``--footer`` texts (default: the manual's
  "Last updated" footer and its "Part of the git(1) suite" line);
- seconds for the folder.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from bs4 import BeautifulSoup


def words(text: str) -> str:
    return " ".join(re.findall(r"[0-9a-z]+", text.lower()))


def body_parts(html: bytes) -> list[str]:
    content = BeautifulSoup(html, "html.parser").find(id="content")
    if content is None:
        return []
    parts = [p.get_text() for p in content.find_all("p") if len(" ".join(p.get_text().split())) >= 40]
    parts += [pre.get_text() for pre in content.find_all("pre")]
    return [words(part) for part in parts if words(part)]


def trafilatura_texts(pages: dict[str, bytes]) -> dict[str, str]:
    import trafilatura

    return {name: trafilatura.extract(html.decode("utf-8"), include_tables=True, include_formatting=True) or ""
            for name, html in pages.items()}


def justext_texts(pages: dict[str, bytes]) -> dict[str, str]:
    import justext

    stoplist = justext.get_stoplist("English")
    return {name: "\n\n".join(p.text for p in justext.justext(html, stoplist) if not p.is_boilerplate)
            for name, html in pages.items()}


def project_texts(folder: Path) -> dict[str, str]:
    from rag.data import load_dataset

    dataset = load_dataset({"format": "files", "path": str(folder), "include": ["*.html"]})
    return {document.url: document.text for document in dataset.documents}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--footer", action="append", default=None)
    args = parser.parse_args(argv)
    footers = args.footer or ["Last updated", "Part of the git(1) suite"]
    pages = {path.name: path.read_bytes() for path in sorted(args.folder.glob("*.html")) if not path.is_symlink()}
    candidates = {"trafilatura": lambda: trafilatura_texts(pages), "jusText": lambda: justext_texts(pages),
                  "cross-document rule (ours)": lambda: project_texts(args.folder)}
    print("| candidate | pages | body kept | pages with footer left | s |")
    print("|---|---|---|---|---|")
    for name, run in candidates.items():
        start = time.perf_counter()
        texts = run()
        seconds = time.perf_counter() - start
        found = total = left = 0
        for page, html in pages.items():
            text = words(texts.get(page, ""))
            parts = body_parts(html)
            total += len(parts)
            found += sum(part in text for part in parts)
            left += any(words(footer) in text for footer in footers)
        print(f"| {name} | {len(pages)} | {found}/{total} ({found / max(total, 1):.3f}) | {left} | {seconds:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
