"""Measure document converters: text fidelity and speed on real files (docs/data.md, "Converter choice").

Usage: python scripts/measure_converters.py CANDIDATE FILE.html... (CANDIDATE: markitdown, assembled,
kreuzberg). For each HTML file (real pages: rustdoc's manual, say) it measures the HTML itself, the PDF
headless Chromium prints from it (FILE.pdf, made beforehand with ``chromium --headless --print-to-pdf``),
and a DOCX that python-docx writes from its headings and paragraphs (made here). The oracle is the
HTML source: its paragraphs (>= 40 characters) and its h1-h3 headings, compared lower-cased with only
letters and digits kept.

- sentences: share of the source paragraphs found in the output;
- in order: share of consecutive found paragraphs whose positions increase;
- headings: share of the source headings found as a Markdown heading line (``#``) of the output;
- seconds: conversion time (best of 3).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from bs4 import BeautifulSoup


def norm(text: str) -> str:
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a Markdown link keeps its text, not its target
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def source_parts(html: Path) -> tuple[list[str], list[str]]:
    soup = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")
    main = soup.find("main") or soup.body
    paragraphs = [p.get_text(" ", strip=True) for p in main.find_all("p")]
    headings = [h.get_text(" ", strip=True) for h in main.find_all(["h1", "h2", "h3"])]
    return [p for p in paragraphs if len(p) >= 40], [h for h in headings if norm(h)]


def write_docx(html: Path, out: Path) -> None:
    import docx

    soup = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")
    document = docx.Document()
    for element in (soup.find("main") or soup.body).find_all(["h1", "h2", "h3", "p"]):
        text = element.get_text(" ", strip=True)
        if text:
            if element.name == "p":
                document.add_paragraph(text)
            else:
                document.add_heading(text, level=int(element.name[1]))
    document.save(out)


def convert(candidate: str, path: Path) -> str:
    if candidate == "markitdown":
        from markitdown import MarkItDown

        return MarkItDown(enable_plugins=False).convert(str(path)).markdown
    if candidate == "kreuzberg":
        import kreuzberg

        return kreuzberg.extract_file_sync(str(path), config=kreuzberg.ExtractionConfig(output_format="markdown")).content
    if candidate == "assembled":  # pypdf / python-docx / BeautifulSoup + markdownify, no framework
        if path.suffix == ".pdf":
            import pypdf

            return "\n".join(page.extract_text() or "" for page in pypdf.PdfReader(path).pages)
        if path.suffix == ".docx":
            import docx

            lines = []
            for paragraph in docx.Document(path).paragraphs:
                style = paragraph.style.name if paragraph.style is not None else ""
                level = int(style.split()[-1]) if style.startswith("Heading") and style.split()[-1].isdigit() else 0
                lines.append(("#" * level + " " if level else "") + paragraph.text)
            return "\n\n".join(lines)
        import markdownify

        return markdownify.markdownify(path.read_text(encoding="utf-8"), heading_style="ATX")
    raise SystemExit(f"unknown candidate {candidate!r}")


def measure(candidate: str, path: Path, paragraphs: list[str], headings: list[str]) -> str:
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        text = convert(candidate, path)
        seconds.append(time.perf_counter() - start)
    flat = norm(text)
    positions = [flat.find(norm(p)) for p in paragraphs]
    found = [p for p in positions if p >= 0]
    ordered = sum(b > a for a, b in zip(found, found[1:])) / max(1, len(found) - 1)
    heading_lines = {norm(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6}\s", line.strip())}
    heads = sum(norm(h) in heading_lines for h in headings) / max(1, len(headings))
    return (f"{candidate:10s} {path.name:28s} sentences {len(found)}/{len(paragraphs)} "
            f"in order {ordered:.2f} headings {heads:.2f} seconds {min(seconds):.3f}")


def main(argv: list[str]) -> None:
    candidate = argv[0]
    for html in map(Path, argv[1:]):
        paragraphs, headings = source_parts(html)
        docx_path = html.with_suffix(".docx")
        if not docx_path.exists():
            write_docx(html, docx_path)
        for path in (html, html.with_suffix(".pdf"), docx_path):
            if path.exists():
                print(measure(candidate, path, paragraphs, headings), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
