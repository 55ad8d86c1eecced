"""Folders of real documents for the ``files`` data set tests, made once per session by real tools:
PDFs printed by headless Chromium from HTML written here, a DOCX written by python-docx, Markdown,
reStructuredText, HTML and text written here; and a folder of bad files (encrypted and image-only PDFs
made the same way, binary, empty, latin-1, too large, damaged, symbolic link loops)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")

# Known sentences per file, in document order; the headings each file's sections carry.
PDF_SENTENCES = [
    "The lighthouse keeper logged every passing ship in a leather book.",
    "Storms in the northern channel arrive without warning in late autumn.",
    "Each lamp was cleaned at dawn and lit again at dusk.",
]
DOCX_SENTENCES = [
    "Cold brew coffee steeps for twelve hours in cold water.",
    "Grind the beans coarsely so the filter does not clog.",
    "Serve it over ice with a splash of milk.",
]
MD_INSTALL = "Run the installer with administrator rights before the first start."
MD_CONFIGURE = "The configuration file lives next to the executable."
HTML_SENTENCES = [
    "Glaciers carve valleys over many thousands of years.",
    "Meltwater carries fine rock flour into the lakes below.",
]


def print_pdf(html: str, out: Path, header_footer: bool = False) -> Path:
    """``html`` printed to ``out`` by headless Chromium; with ``header_footer``, Chromium's default
    print header (date, time, title) and footer (the page's URL, page n/N) on every page."""
    source = out.with_suffix(".src.html")
    source.write_text(html, encoding="utf-8")
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", *([] if header_footer else ["--no-pdf-header-footer"]),
         f"--print-to-pdf={out}", source.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    source.unlink()
    return out


def long_paragraph(topic: str, n: int) -> str:
    return " ".join(f"Sentence {i} about {topic} adds one more plain fact to the text." for i in range(n))


@pytest.fixture(scope="session")
def good_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("good") / "docs"
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "setup.md").write_text(
        "---\ntitle: Setup guide\nauthor: Someone\n---\n"
        "# Setup\n\nThis guide covers the setup.\n\n"
        f"## Installation\n\n{MD_INSTALL}\n\n{long_paragraph('installing', 40)}\n\n"
        "```sh\n# a shell comment, not a heading\nmake install\n```\n\n"
        f"### Configuration\n\n{MD_CONFIGURE}\n\n{long_paragraph('configuring', 30)}\n\n"
        "To reset every setting, delete the configuration file and restart the program.\n",  # a template applies
        encoding="utf-8",
    )
    (root / "glaciers.html").write_text(
        "<html><head><title>Glaciers</title><script>var hidden = 'script text';</script></head><body>"
        f"<h1>Ice</h1><p>{HTML_SENTENCES[0]}</p><h2>Meltwater</h2><p>{HTML_SENTENCES[1]} "
        f"<a href='https://example.org/x'>A link</a> stays as text.</p></body></html>",
        encoding="utf-8",
    )
    (root / "notes.rst").write_text(
        "=====\nNotes\n=====\n\nThe notes start here.\n\nFirst part\n==========\n\nOne fact.\n\n"
        "Detail\n------\n\nA detail of the first part.\n\nSecond part\n===========\n\nAnother fact.\n",
        encoding="utf-8",
    )
    (root / "plain.txt").write_text("A plain text file with one sentence.\n", encoding="utf-8")
    (root / ".hidden.md").write_text("# Hidden\n\nNever read by the default globs.\n", encoding="utf-8")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))  # no default glob matches it
    import docx

    document = docx.Document()
    document.core_properties.title = ""
    document.add_heading("Cold brew", level=1)
    document.add_paragraph(DOCX_SENTENCES[0])
    document.add_heading("Method", level=2)
    document.add_paragraph(DOCX_SENTENCES[1])
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Ratio", "1:8"
    document.add_paragraph(DOCX_SENTENCES[2])
    document.save(root / "coffee.docx")
    if CHROMIUM is not None:
        print_pdf(
            "<html><head><title>Lighthouse</title></head><body><h1>Lighthouse</h1>"
            + "".join(f"<p>{sentence}</p>" for sentence in PDF_SENTENCES) + "</body></html>",
            root / "lighthouse.pdf",
        )
    return root


@pytest.fixture(scope="session")
def bad_folder(tmp_path_factory, good_folder) -> Path:
    """One good file and one file per skip reason; ``outside.md`` links to a file outside the folder."""
    base = tmp_path_factory.mktemp("bad")
    root = base / "docs"
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nThe only good file here.\n", encoding="utf-8")
    (root / "binary.txt").write_bytes(b"\x00\x01\x02binary\x00" * 50)
    (root / "empty.md").write_text("  \n\n", encoding="utf-8")
    (root / "latin1.txt").write_bytes("Un café à Paris.".encode("latin-1"))
    (root / "huge.md").write_text("Large. " * 30000, encoding="utf-8")  # 210 kB, over max_file_mb 0.15
    (root / "damaged.pdf").write_bytes(b"%PDF-1.7\nthis is not really a PDF\n")
    (root / "damaged.docx").write_bytes(b"PK\x03\x04 not a zip archive")
    (root / "loop_a.md").symlink_to(root / "loop_b.md")
    (root / "loop_b.md").symlink_to(root / "loop_a.md")
    (root / "loop_dir").symlink_to(root, target_is_directory=True)
    (base / "secret.md").write_text("# Secret\n\nOutside the folder.\n", encoding="utf-8")
    (root / "outside.md").symlink_to(base / "secret.md")
    (root / "inside.md").symlink_to(root / "good.md")  # a link within the folder: read once, as good.md
    if CHROMIUM is not None:
        import pypdf

        reader = pypdf.PdfReader(good_folder / "lighthouse.pdf")
        writer = pypdf.PdfWriter(clone_from=reader)
        writer.encrypt(user_password="secret", owner_password="owner")
        with open(root / "encrypted.pdf", "wb") as handle:
            writer.write(handle)
        print_pdf("<html><body><svg width='300' height='200'><rect width='300' height='200' fill='teal'/></svg>"
                  "</body></html>", root / "scan.pdf")
    os.chmod(root, 0o755)
    return root
