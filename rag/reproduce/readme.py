"""The README's result tables, printed from the matrix's last run, never typed.

A block in a Markdown file is the text between ``<!-- reproduce:BLOCK -->`` and
``<!-- /reproduce:BLOCK -->`` (each marker on a line of its own). :func:`rewrite_blocks` replaces the
text of every block by what the printer of the condition that names ``BLOCK`` under ``readme`` makes
from that condition's last run directory (``result.json``): ``results`` =
:func:`rag.results.markdown.results_markdown` with the block's metrics, ``compact`` =
:func:`rag.results.markdown.compact_markdown` (the recommendation and one table of the block's first
metric, else the primary), ``seed003`` = :func:`rag.results.seed003.seed003_markdown`. A block whose condition
has no passing last run is an error: the README shows only numbers the matrix reproduced.
"""

from __future__ import annotations

import re
from pathlib import Path

from rag.errors import ConfigError
from rag.reproduce.matrix import Condition, ReadmeBlock, RunCondition, rewrite_in_place
from rag.reproduce.runner import MatrixResult
from rag.results.csv_files import read_csv
from rag.results.markdown import compact_markdown, results_markdown
from rag.results.seed003 import seed003_markdown

BLOCK = re.compile(r"^<!-- reproduce:(?P<name>[A-Za-z0-9_-]+) -->\n(?P<body>.*?)^<!-- /reproduce:(?P=name) -->$",
                   re.MULTILINE | re.DOTALL)


#: The columns of ``comparison.csv`` the seed003 printer reads.
SEED003_COLUMNS = ("mrr@10", "recall@10")


def block_lines(name: str, block: ReadmeBlock, run_dir: Path, source: Path) -> list[str]:
    if block.printer == "seed003":
        header = read_csv(run_dir / "comparison.csv", nrows=0).columns
        missing = [column for column in SEED003_COLUMNS if column not in header]
        if missing:
            raise ConfigError(f"reproduce:{name}", f"printer seed003 needs the metric(s) {', '.join(missing)}, which "
                                                   f"the condition's run did not compute; expected a run with "
                                                   f"evaluation.metrics holding {', '.join(SEED003_COLUMNS)}",
                              source=source)
        return seed003_markdown(run_dir, block.set)
    if block.printer == "compact":
        return compact_markdown(run_dir, block.metrics[0] if block.metrics else None)
    return results_markdown(run_dir, block.metrics)


def blocks(conditions: list[Condition]) -> dict[str, tuple[Condition, ReadmeBlock]]:
    """Every README block of the matrix: its name -> (its condition, its printer)."""
    found: dict[str, tuple[Condition, ReadmeBlock]] = {}
    for condition in conditions:
        for name, block in (condition.spec.readme if isinstance(condition.spec, RunCondition) else {}).items():
            if name in found:
                raise ConfigError(f"readme.{name}", f"block already printed by condition {found[name][0].name}; "
                                                    "expected each block once", source=condition.path)
            found[name] = (condition, block)
    return found


def rewrite_blocks(markdown: Path, conditions: list[Condition], result: MatrixResult | None) -> list[str]:
    """Rewrite every block of ``markdown`` (atomically); return the names of the blocks written."""
    text = markdown.read_text(encoding="utf-8")
    known = blocks(conditions)
    last = {entry.name: entry for entry in (result.conditions if result else [])}
    written: list[str] = []

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in known:
            raise ConfigError(f"reproduce:{name}", f"no condition prints this block; expected one of: "
                                                   f"{', '.join(known)}", source=markdown)
        condition, block = known[name]
        entry = last.get(condition.name)
        if entry is None or not entry.passed or entry.run_dir is None:
            state = "has no run yet" if entry is None else "did not pass in its last run"
            raise ConfigError(f"reproduce:{name}", f"condition {condition.name} {state}; run 'rag-bench reproduce "
                                                   f"{condition.name}' (and --update-expected when a change moved "
                                                   "it) first", source=markdown)
        written.append(name)
        body = "\n".join(block_lines(name, block, Path(entry.run_dir), markdown)).strip("\n")
        return f"<!-- reproduce:{name} -->\n{body}\n<!-- /reproduce:{name} -->"

    updated = BLOCK.sub(replace, text)
    if updated != text:
        rewrite_in_place(markdown, updated)  # its mode kept, a symbolic link followed
    return written
