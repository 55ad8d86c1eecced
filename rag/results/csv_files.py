"""The one way the benchmark writes and reads CSV files, so that spreadsheets show their text as text.

Question ids and texts, answers and data set names come from outside (the corpus, the questions, a
model): a cell such as ``=HYPERLINK(...)`` or ``@SUM(...)`` would run as a formula in Excel,
LibreOffice Calc or Google Sheets (CSV injection, OWASP). The rule, for every CSV we write:

- a **text** cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return — after any
  leading apostrophes — is written with one more apostrophe in front (``'=1+1``), which spreadsheets
  show as text; numbers are not text, so ``-0.5`` in a numeric column stays the number it is;
- :func:`read_csv` removes that one apostrophe again, so a file reads back exactly as it was
  written (a text that itself starts with ``'=`` was written ``''=``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from rag.io_utils import atomic_write_text

_ESCAPE = re.compile(r"^'*[=+\-@\t\r]")
_ESCAPED = re.compile(r"^'+[=+\-@\t\r]")


def escape_cell(value: Any) -> Any:
    """``value`` as written: a text cell that a spreadsheet would read as a formula gets a leading ``'``."""
    return f"'{value}" if isinstance(value, str) and _ESCAPE.match(value) else value


def unescape_cell(value: Any) -> Any:
    """The inverse of :func:`escape_cell`."""
    return value[1:] if isinstance(value, str) and _ESCAPED.match(value) else value


def _text_columns(frame: pd.DataFrame) -> list[str]:
    return [column for column in frame.columns if not pd.api.types.is_numeric_dtype(frame[column])
            and not pd.api.types.is_bool_dtype(frame[column])]


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text (no index), its text cells escaped (:func:`escape_cell`)."""
    escaped = frame.copy()
    for column in _text_columns(frame):
        escaped[column] = frame[column].map(escape_cell)
    return escaped.to_csv(index=False)


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` atomically as CSV (:func:`csv_text`)."""
    atomic_write_text(path, csv_text(frame))


def read_csv(path: Path, **options: Any) -> pd.DataFrame:
    """A CSV file written by :func:`write_csv`, its text cells as they were (``options``: pandas')."""
    frame = pd.read_csv(path, **options)
    for column in _text_columns(frame):
        frame[column] = frame[column].map(unescape_cell)
    return frame
