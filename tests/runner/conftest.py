"""Helpers for the runner tests: tiny data sets and configs written under tmp_path."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SMOKE_CONFIG = REPO / "configs" / "smoke.yaml"

WIKI = "https://en.wikipedia.org/wiki/"
TINY_DOCUMENTS = [
    ("Volcano", "A volcano is a rupture in the crust of a planet that lets hot lava, ash and gases escape."),
    ("Penguin", "Penguins are flightless aquatic birds living almost exclusively in the Southern Hemisphere."),
    ("Violin", "The violin is a wooden string instrument, the smallest and highest-pitched of the violin family."),
    ("Glacier", "A glacier is a persistent body of dense ice that is constantly moving under its own weight."),
    ("Saturn", "Saturn is the sixth planet from the Sun and the second largest planet in the Solar System."),
    ("Espresso", "Espresso is a coffee beverage brewed by forcing hot water through finely ground coffee beans."),
]
TINY_QUESTIONS = [
    ("q1", "What lets hot lava and ash escape from the crust?", ["Volcano"], ["a volcano"]),
    ("q2", "Which flightless birds live in the Southern Hemisphere?", ["Penguin"], ["penguins"]),
    ("q3", "Which is the sixth planet from the Sun?", ["Saturn"], ["Saturn"]),
    ("q4", "Which wooden string instrument is the highest-pitched of its family?", ["Violin"], ["the violin"]),
]


def start_foreground(command: list[str]) -> subprocess.Popen:
    """Start ``command`` as a terminal starts a foreground job: with Ctrl-C's SIGINT at its default.

    A background job of a shell without job control (``pytest ... &`` in a script, a CI runner's
    wrapper) inherits SIGINT *ignored*, and Python keeps an ignored SIGINT ignored: a child started
    from there never sees the test's Ctrl-C. Handled signals are reset to their default by exec, so
    the parent handles SIGINT while it starts the child; what it had before is restored at once."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def signal_when_held(stand_in, process: subprocess.Popen, sig: int, timeout_s: float) -> tuple[bool, str]:
    """Wait for the stand-in to hold a request (set up by ``stand_in.hold_completions``: the run is
    mid-generation at a known point), send ``sig`` to the run and wait for it to end; whether a
    request was held, and the run's stderr. The held requests are released and no process is left."""
    err = ""
    try:
        held = stand_in.held.wait(timeout=300)
        process.send_signal(sig)
        _, err = process.communicate(timeout=timeout_s)
    finally:
        stand_in.release()
        if process.poll() is None:
            process.kill()
            process.communicate()
    return held, err


def document_line(title: str, text: str) -> str:
    return json.dumps({"doc_id": title, "url": WIKI + title, "title": title, "text": text})


def question_line(qid: str, text: str, gold: list[str], answers: list[str], qtype: str = "factual") -> str:
    return json.dumps({"id": qid, "question": text, "gold_urls": [[WIKI + g] for g in gold], "answers": answers, "type": qtype})


def write_tiny_dataset(
    directory: Path, extra_documents: list[str] = (), extra_questions: list[str] = ()
) -> tuple[Path, Path]:
    """corpus.jsonl and questions.jsonl; ``extra_*`` are raw lines appended (valid or not)."""
    directory.mkdir(parents=True, exist_ok=True)
    corpus, questions = directory / "corpus.jsonl", directory / "questions.jsonl"
    corpus.write_text("\n".join([*(document_line(t, x) for t, x in TINY_DOCUMENTS), *extra_documents]) + "\n")
    questions.write_text("\n".join([*(question_line(*q) for q in TINY_QUESTIONS), *extra_questions]) + "\n")
    return corpus, questions


def tiny_config(directory: Path, corpus: Path, questions: Path, **overrides: Any) -> Path:
    """A BM25-only config (no model to load) over the tiny data set, outputs and caches in ``directory``."""
    config: dict[str, Any] = {
        "name": "tiny",
        "dataset": {"format": "jsonl", "corpus": str(corpus), "questions": str(questions)},
        "chunking": {"max_tokens": 64, "overlap_tokens": 8, "min_tokens": 4},
        "retrievers": [{"name": "bm25", "type": "bm25", "params": {"k1": 1.2, "b": 0.75}}],
        "top_k": 3,
        "generation": {"generator": {"type": "extractive"}},
        "evaluation": {"metrics": ["mrr", "recall@3", "hit@3"], "n_resamples": 500},
        "output_dir": str(directory / "runs"),
        "cache_dir": str(directory / "cache"),
    }
    config.update(overrides)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    corpus, questions = write_tiny_dataset(tmp_path / "data")
    return tiny_config(tmp_path, corpus, questions)
