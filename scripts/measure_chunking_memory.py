"""Peak memory and time of chunking one huge document (issue 23, item 12; docs/data.md).

Usage: python scripts/measure_chunking_memory.py [--mb 20] [--via-files DIR] [--no-headings]

Builds a Markdown document of ``--mb`` megabytes (10^6 bytes of ASCII: sentences of 8-20 words drawn
with a fixed seed from a vocabulary, a heading every 39 sentences, a blank line every 5), then chunks
it with the default settings. Prints the peak resident memory added by the document and its chunking
(the process's peak RSS minus its RSS once the tokenizer is loaded and before the text exists), as
bytes and as a multiple of the document's size, and the seconds taken. With ``--via-files`` the
document is written to DIR/huge.md and read through the ``files`` data set (conversion included).
Run it with another checkout on PYTHONPATH to measure that code.
"""

from __future__ import annotations

import argparse
import io
import random
import resource
import time
from pathlib import Path


def rss_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def make_text(n_bytes: int, seed: int = 3) -> str:
    """The document, written section by section into one buffer (so that making it costs little
    more memory than the text itself)."""
    rng = random.Random(seed)
    vocabulary = ["retrieval", "dense", "sparse", "fusion", "the", "a", "of", "index", "query", "chunk", "token",
                  "Paris", "1892", "e.g.", "model", "score", "rank", "document", "section", "overlap", "budget"]
    buffer = io.StringIO()
    buffer.write("# A huge document\n\n")
    size, section = buffer.tell(), 0
    while size < n_bytes:
        part = [f"\n## Section {section}\n\n"]
        for sentence in range(1, 40):
            words = rng.choices(vocabulary, k=rng.randint(8, 20))
            part.append(words[0].capitalize() + " " + " ".join(words[1:]) + (". " if sentence % 5 else ".\n\n"))
        size += buffer.write("".join(part))  # ASCII: characters are bytes
        section += 1
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--via-files", type=Path)
    parser.add_argument("--no-headings", action="store_true", help="chunking.headings: false (as before headings existed)")
    args = parser.parse_args()
    from rag.chunking import ChunkingConfig, chunk_documents
    from rag.data import load_dataset  # imported before the baseline: modules are not the document's memory
    from rag.models import load_tokenizer
    from rag.types import Document

    tokenizer = load_tokenizer()
    chunk_documents([Document("warm", "warm", "", "Warm up. The tokenizer is loaded.")], tokenizer=tokenizer, progress=False)
    baseline = rss_bytes()
    start = time.perf_counter()
    n_bytes = int(args.mb * 1e6)
    if args.via_files is not None:
        args.via_files.mkdir(parents=True, exist_ok=True)
        (args.via_files / "huge.md").write_text(make_text(n_bytes), encoding="utf-8")
        documents = load_dataset({"format": "files", "path": str(args.via_files), "max_file_mb": 1000}).documents
    else:
        documents = [Document("huge", "huge", "A huge document", make_text(n_bytes))]
    size = len(documents[0].text.encode())
    config = ChunkingConfig(headings=False) if args.no_headings else ChunkingConfig()
    chunks = chunk_documents(documents, config, tokenizer=tokenizer, progress=False)
    seconds = time.perf_counter() - start
    added = peak_rss_bytes() - baseline
    print(f"document {size / 1e6:.1f} MB, {len(chunks)} chunks, {seconds:.1f} s, "
          f"peak RSS added {added / 1e6:.0f} MB = {added / size:.1f}x the document")


if __name__ == "__main__":
    main()
