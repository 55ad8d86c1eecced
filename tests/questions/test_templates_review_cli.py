"""Template questions (deterministic by seed, stratified over documents), the review round trip, and the
``rag-bench questions`` command through to a smoke run that reads the made file."""

from __future__ import annotations

import csv
import json
import random

import pytest

from rag.cli import main
from rag.config import load_config
from rag.data import load_dataset
from rag.data.questions.make import chunk_order, make_questions
from rag.data.questions.templates import names_document, template_candidate
from rag.types import Chunk, Document

from .conftest import SMOKE_CONFIG


def _chunk(doc_id: str, position: int, text: str = "x") -> Chunk:
    return Chunk(f"{doc_id}#{position}", doc_id, doc_id, text, position, 1)


def test_chunk_order_takes_one_chunk_of_every_document_before_a_second_of_any():
    chunks = [_chunk(d, p) for d, n in (("a", 3), ("b", 1), ("c", 2)) for p in range(n)]
    order = chunk_order(chunks, seed=5)
    assert sorted(c.chunk_id for c in order) == sorted(c.chunk_id for c in chunks)
    assert {c.doc_id for c in order[:3]} == {"a", "b", "c"} and {c.doc_id for c in order[3:5]} == {"a", "c"}
    assert chunk_order(list(reversed(chunks)), seed=5) == order  # input order does not matter
    assert any(chunk_order(chunks, seed=s) != order for s in range(6, 12))


def test_templates_by_hand():
    document = Document("Volcano", "docs/volcano.md", "Volcano", "")
    text = "A volcano is a rupture in the crust of a planet, which lets lava escape. It erupts."
    kinds = {}
    for seed in range(40):
        candidate = template_candidate(_chunk("Volcano", 0, text), document, random.Random(seed))
        kinds[candidate.kind] = (candidate.question, candidate.answer)
    assert kinds == {
        "title": ("What is Volcano?", "a rupture in the crust of a planet"),
        "definition": ("What is a volcano?", "a rupture in the crust of a planet"),
        "known_item": ("What is the name of the rupture in the crust of a planet?", "a volcano"),
    }
    section = Chunk("Volcano#1", "Volcano", "docs/volcano.md", "Lava is molten rock.", 1, 5)
    object.__setattr__(section, "section", "Lava flows")  # a heading-aware chunk carries its section
    candidate = template_candidate(section, document, random.Random(0))
    assert candidate.question == "What does Volcano say about Lava flows?" and candidate.metadata["section"] == "Lava flows"
    assert names_document("William Henry Cosby Jr.", "Bill Cosby") and not names_document("Superimposed with the wind", "Wind")


def test_template_questions_are_deterministic_by_seed_and_cached(tmp_path):
    def made(cache: str, seed: int):
        config = load_config(SMOKE_CONFIG, [f"cache_dir={tmp_path / cache}"])
        return make_questions(config, n=8, generator="template", seed=seed, progress=False)

    first, again, other = made("a", 0), made("b", 0), made("a", 1)
    assert first.path.read_bytes() == again.path.read_bytes() and not again.cached
    assert first.path.read_bytes() != other.path.read_bytes()
    assert made("a", 0).cached
    assert len({q.gold_urls[0][0] for q in first.questions}) == len(first.questions)  # one per document first
    made_ = first.provenance
    assert made_["written"] == len(first.questions) == 8 and made_["generator"] == "template" and made_["model"] is None
    seen = made_["filters"][0]["in"]
    assert made_["candidates"] == seen + sum(made_["failures"].values()) + made_["not_needed"]


def test_review_round_trip_keeps_only_accepted_questions_with_their_corrections(tmp_path):
    out = tmp_path / "q.jsonl"
    assert main(["questions", "--config", str(SMOKE_CONFIG), "--out", str(out), "--n", "5", "--generator", "template",
                 "--set", f"cache_dir={tmp_path / 'cache'}", "--quiet"]) == 0
    review = tmp_path / "q.review.csv"
    html = (tmp_path / "q.review.html").read_text()
    assert "<script" not in html and "apply-review" in html
    with review.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 5 and all(row["accept"] == "" and row["chunk_text"] for row in rows)
    rows[0]["accept"], rows[1]["accept"], rows[2]["accept"] = "yes", "No", "x"
    rows[2]["question"] = "=Which edited question is this?"  # a formula-like start is kept as text
    with review.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    reviewed = tmp_path / "reviewed.jsonl"
    assert main(["questions", "--apply-review", str(review), "--out", str(reviewed)]) == 0
    dataset = load_dataset({"format": "jsonl", "corpus": str(SMOKE_CONFIG.parent / "../data/smoke/corpus.jsonl"),
                            "questions": str(reviewed)})
    questions = dataset.question_sets["reviewed"]
    assert [q.qid for q in questions] == [rows[0]["id"], rows[2]["id"]]
    assert questions[1].text == "=Which edited question is this?"
    assert questions[0].metadata["chunk_id"] == rows[0]["chunk_id"]
    review_counts = dataset.question_provenance["reviewed"]["review"]
    assert review_counts == {"accepted": 2, "rejected": 1, "unreviewed": 2, "edited": 1, "file": "q.review.csv"}


@pytest.mark.parametrize("argv, expected", [
    (["questions", "--out", "x.jsonl"], "--config"),
    (["questions", "--apply-review", "missing.review.csv", "--out", "x.jsonl"], "missing.review.csv: file not found"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and expected in err and "Traceback" not in err


def test_a_bad_accept_value_names_the_line(tmp_path, capsys):
    review = tmp_path / "q.review.csv"
    review.write_text("id,accept,question,answer,gold_url\nq1,yes,What?,a,u\nq2,maybe,Why?,b,u\n")
    assert main(["questions", "--apply-review", str(review), "--out", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and ":3:" in err and "'maybe'" in err and not (tmp_path / "r.jsonl").exists()


def test_a_made_file_runs_through_the_smoke_config_with_its_provenance(tmp_path, capsys):
    out = tmp_path / "made.jsonl"
    cache = f"cache_dir={tmp_path / 'cache'}"
    assert main(["questions", "--config", str(SMOKE_CONFIG), "--out", str(out), "--n", "6", "--generator", "template",
                 "--set", cache, "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "6 of 6 questions written" in printed and "lexical bias" in printed and "answer_unsupported" in printed
    run = tmp_path / "run"
    assert main(["--config", str(SMOKE_CONFIG), "--set", f"dataset.questions={out}", "--set", cache, "--methods", "bm25",
                 "--no-generation", "--quiet", "--output-dir", str(run)]) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    made = manifest["data"]["question_provenance"]["made"]
    assert made["generator"] == "template" and made["written"] == 6 and "lexical_bias" in made
    assert manifest["data"]["question_sets"]["made"]["questions"] == 6
    assert "questions of made: made by template" in (run / "report.html").read_text()
