"""Regenerate docs/report.png, the README's picture of report.html's first screen.

    python scripts/screenshot_report.py [--out docs/report.png] [--chromium /usr/bin/chromium] [--keep DIR]

Runs the built-in smoke config (``rag-bench run --config smoke``, answers included, about a minute)
into a scratch directory, then has headless Chromium (Debian's ``chromium``; nothing is downloaded)
take a 1280x900 screenshot of the run's report.html. Exits 2 with one line when Chromium is missing.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1280, 900


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "report.png")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--keep", type=Path, help="run directory to keep (default: a temporary one)")
    parser.add_argument("--no-generation", action="store_true", help="a retrieval-only run (faster)")
    args = parser.parse_args(argv)
    if not Path(args.chromium).exists():
        print(f"error: no Chromium at {args.chromium} (apt-get install chromium, or --chromium PATH)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = (args.keep or Path(scratch) / "run").resolve()
        command = [sys.executable, "-m", "rag.cli", "run", "--config", "smoke", "--output-dir", str(run_dir), "--quiet"]
        subprocess.run(command + (["--no-generation"] if args.no_generation else []), check=True, cwd=REPO)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={args.out.resolve()}",
                        (run_dir / "report.html").as_uri()], check=True, cwd=scratch,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
