"""Measure PDF text extraction, pypdf against pypdfium2, on real PDFs whose source text is at hand
(docs/data.md, "PDF text").

Usage: python scripts/bench_pdf_text.py [--repeat N] [--work DIR]

The PDFs, each with the text of the same document in another form (its source):

- every PDF of a manual under /usr/share/doc that ships beside its HTML (pdfTeX and Apache FOP
  builds: bzip2's manual, the fixture of tests/data/test_clean_text.py, nettle, fontconfig,
  shared-mime-info, Valgrind's whole manual against all its HTML pages);
- two manual pages typeset by groff (``groff -Tps -man | ps2pdf``), against groff's own text output
  of the same page (``-Tutf8``, a line length no line reaches, so that nothing is hyphenated);
- real HTML pages printed by headless Chromium (``chromium --headless --no-sandbox --print-to-pdf``,
  its default print header and footer on every page), against the page's text (BeautifulSoup):
  the fixtures the tests print (git-stash, Node.js's querystring) and pages of Python's library
  reference, Valgrind's manual and GLib's reference.

A case whose tool (groff, ps2pdf, chromium) is missing is left out and named. For each PDF and
library: the seconds to open it and read every page's text (the least of ``--repeat`` runs), and
*words broken*: the share of the words of the text (runs of letters, Unicode NFKC, lower-cased) that
the source's text never holds ("v ariable" gives "ariable"; "Ifthere" one word too many), in the raw
page texts and in the text the converter makes of them (:func:`rag.data.convert._clean_pdf_text`:
running headers and footers, dot leaders, words broken at line ends joined). pypdfium2's pages are
the converter's own (:func:`rag.data.convert.pdf_pages`, its marks read); pypdf's are
``PdfReader(...).pages[i].extract_text()``, the converter's before (pypdf is a test dependency).
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.data.convert import _clean_pdf_text, pdf_pages  # noqa: E402

DOC = Path("/usr/share/doc")
FIXTURES = ROOT / "tests" / "fixtures" / "thirdparty"
WORD = re.compile(r"[^\W\d_]+")
#: (name, PDF under /usr/share/doc, its HTML source: a file or a folder of pages)
MANUALS = [
    ("bzip2 manual (pdfTeX)", "bzip2/manual.pdf.gz", "bzip2/manual.html"),
    ("nettle manual (pdfTeX)", "nettle-dev/nettle.pdf.gz", "nettle-dev/nettle.html"),
    ("fontconfig user (pdfTeX)", "fontconfig/fontconfig-user.pdf.gz", "fontconfig/fontconfig-user.html"),
    ("shared-mime-info spec (pdfTeX)", "shared-mime-info/shared-mime-info-spec.pdf", "shared-mime-info/shared-mime-info-spec.html"),
    ("Valgrind manual (Apache FOP)", "valgrind/valgrind_manual.pdf.gz", "valgrind/html"),
]
MAN_PAGES = ["bash", "find"]  # /usr/share/man/man1/NAME.1.gz
PRINTED = [  # HTML pages printed by Chromium
    FIXTURES / "git-doc" / "git-stash.html",
    FIXTURES / "nodejs-api" / "querystring.html",
    DOC / "python3.11" / "html" / "library" / "functions.html",
    DOC / "python3.11" / "html" / "library" / "re.html",
    DOC / "valgrind" / "html" / "manual-core.html",
    DOC / "libglib2.0-doc" / "glib" / "glib-String-Utility-Functions.html",
]


@dataclass
class Case:
    name: str
    pdf: bytes
    source: set[str]  # the words of the same document's source text


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(unicodedata.normalize("NFKC", text))]


def html_words(path: Path) -> set[str]:
    pages = sorted(path.glob("*.html")) if path.is_dir() else [path]
    found: set[str] = set()
    for page in pages:
        soup = BeautifulSoup(page.read_bytes(), "html.parser")
        for element in soup(["script", "style"]):
            element.decompose()
        found.update(words(soup.get_text(" ")))
    return found


def read(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def cases(work: Path) -> tuple[list[Case], list[str]]:
    """The PDFs and their sources; the cases left out, and why."""
    found, missing = [], []
    for name, pdf, source in MANUALS:
        if (DOC / pdf).exists() and (DOC / source).exists():
            found.append(Case(name, read(DOC / pdf), html_words(DOC / source)))
        else:
            missing.append(f"{name}: {DOC / pdf} or {DOC / source} not installed")
    tools = {tool: shutil.which(tool) for tool in ("groff", "ps2pdf", "chromium")}
    for page in MAN_PAGES:
        man = Path(f"/usr/share/man/man1/{page}.1.gz")
        if not (man.exists() and tools["groff"] and tools["ps2pdf"]):
            missing.append(f"{page}(1) by groff: needs {man}, groff and ps2pdf (Ghostscript)")
            continue
        troff = gzip.decompress(man.read_bytes())
        postscript = subprocess.run(["groff", "-Tps", "-man"], input=troff, capture_output=True, check=True).stdout
        pdf = subprocess.run(["ps2pdf", "-", "-"], input=postscript, capture_output=True, check=True).stdout
        text = subprocess.run(["groff", "-Tutf8", "-man", "-rLL=2000n", "-rHY=0", "-P-cbou"], input=troff,
                              capture_output=True, check=True).stdout.decode("utf-8", "replace")
        found.append(Case(f"{page}(1) (groff, ps2pdf)", pdf, set(words(text))))
    for page in PRINTED:
        if not (page.exists() and tools["chromium"]):
            missing.append(f"{page.name} printed: needs {page} and chromium")
            continue
        out = work / (page.stem + ".pdf")
        subprocess.run([tools["chromium"], "--headless", "--no-sandbox", "--disable-gpu", f"--print-to-pdf={out}",
                        page.as_uri()], capture_output=True, check=True, timeout=120)
        found.append(Case(f"{page.name} (Chromium print)", out.read_bytes(), html_words(page)))
    return found, missing


def pypdf_page_texts(data: bytes) -> list[str]:
    """pypdf's page texts, as the converter read them before pypdfium2."""
    import io

    import pypdf

    return [page.extract_text() or "" for page in pypdf.PdfReader(io.BytesIO(data)).pages]


LIBRARIES: dict[str, Callable[[bytes], list[str]]] = {"pypdf": pypdf_page_texts,
                                                     "pypdfium2": lambda data: pdf_pages(data)[0]}


def broken(text: str, source: set[str]) -> tuple[int, int]:
    """(words of ``text`` absent from ``source``, words of ``text``)."""
    found = words(text)
    return sum(word not in source for word in found), len(found)


def measure(case: Case, repeat: int) -> dict[str, tuple[float, float, float, int]]:
    """Per library: seconds, raw share broken, cleaned share broken, words of the cleaned text."""
    results = {}
    for library, page_texts in LIBRARIES.items():
        seconds = []
        for _ in range(repeat):
            start = time.perf_counter()
            pages = page_texts(case.pdf)
            seconds.append(time.perf_counter() - start)
        raw_absent, raw_total = broken("\n".join(pages), case.source)
        clean_absent, clean_total = broken(_clean_pdf_text(pages, None).text, case.source)
        results[library] = (min(seconds), raw_absent / max(raw_total, 1), clean_absent / max(clean_total, 1), clean_total)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per PDF and library; the least time is kept")
    parser.add_argument("--work", type=Path, help="folder for the printed PDFs (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temporary:
        work = args.work or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        found, missing = cases(work)
        print("| PDF | words | pypdf s | pypdfium2 s | pypdf broken raw / cleaned | pypdfium2 broken raw / cleaned |")
        print("|---|---|---|---|---|---|")
        totals = {library: [0.0, 0, 0] for library in LIBRARIES}  # seconds, cleaned words absent, cleaned words
        for case in found:
            result = measure(case, args.repeat)
            for library, (seconds, _, clean, n) in result.items():
                totals[library][0] += seconds
                totals[library][1] += round(clean * n)
                totals[library][2] += n
            a, b = result["pypdf"], result["pypdfium2"]
            print(f"| {case.name} | {a[3]:,} | {a[0]:.2f} | {b[0]:.2f} | {a[1]:.2%} / {a[2]:.2%} | {b[1]:.2%} / {b[2]:.2%} |",
                  flush=True)
        a, b = totals["pypdf"], totals["pypdfium2"]
        print(f"| all {len(found)} | {a[2]:,} | {a[0]:.2f} | {b[0]:.2f} | - / {a[1] / max(a[2], 1):.2%} "
              f"| - / {b[1] / max(b[2], 1):.2%} |")
        for line in missing:
            print(f"left out: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
